package pglease

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencekit/fencekit/internal/testenv"
	"github.com/fencekit/fencekit/lease"
	"github.com/fencekit/fencekit/migrations"
)

// lockedBuffer is a bytes.Buffer safe for a logger's concurrent writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *lockedBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *lockedBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// TestAcquireWaitThroughPgBouncer waits for a lease through PgBouncer in
// transaction pooling mode, where LISTEN hears nothing: the waiter must
// still get the lease within the polling bound after each release (not at
// the holder's 10 s TTL), and the fallback is logged once.
func TestAcquireWaitThroughPgBouncer(t *testing.T) {
	env := testenv.PostgresDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := migrations.Up(ctx, env.URL); err != nil {
		t.Fatal(err)
	}
	url := testenv.StartPgBouncer(t).URL(t, env.URL) + "?default_query_exec_mode=exec"
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	var logs lockedBuffer
	c, err := New(pool, &lease.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	const ttl = 10 * time.Second
	const bound = pollInterval + 300*time.Millisecond
	holder, err := c.Acquire(ctx, "job", ttl)
	if err != nil {
		t.Fatal(err)
	}
	for round := range 2 {
		got := make(chan *lease.Lease, 1)
		go func() {
			l, err := c.AcquireWait(ctx, "job", ttl)
			if err != nil {
				t.Error(err)
			}
			got <- l
		}()
		time.Sleep(probeTimeout + pollInterval) // the waiter is waiting, the probe has failed
		released := time.Now()
		if err := holder.Release(ctx); err != nil {
			t.Fatal(err)
		}
		l := <-got
		if l == nil {
			t.FailNow()
		}
		if waited := time.Since(released); waited > bound {
			t.Fatalf("round %d: waiter got the lease %v after the release; want within %v", round, waited, bound)
		}
		holder = l
	}
	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(logs.String(), "LISTEN hears no notifications"); n != 1 {
		t.Fatalf("the polling fallback was logged %d times, want once:\n%s", n, logs.String())
	}
}
