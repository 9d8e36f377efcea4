package pglease

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencekit/fencekit/internal/testenv"
	"github.com/fencekit/fencekit/lease"
)

// cancelCounter counts the renewal statements (table and advisory) that
// ended cancelled (n), and the other statements that ended (others).
type cancelCounter struct{ n, others atomic.Int64 }

type renewKey struct{}

func (c *cancelCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	return context.WithValue(ctx, renewKey{}, d.SQL == renewSQL || d.SQL == ";")
}

func (c *cancelCounter) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryEndData) {
	renew, _ := ctx.Value(renewKey{}).(bool)
	if !renew {
		c.others.Add(1)
	}
	if renew && errors.Is(d.Err, context.Canceled) {
		c.n.Add(1)
	}
}

// TestHandoffWhileRenewing hands a name over between two leases of one
// Client, again and again, while both renew back to back (RenewInterval
// 1ns), in both modes: each Release must succeed and cancel no renewal
// statement in flight. pgx closes a connection whose statement is
// cancelled, and the pool kept its slot for up to 15 s while pgx cleaned
// up (the server's backend idle): a few such releases filled the pool, the
// next statement waited, and the held lease expired.
func TestHandoffWhileRenewing(t *testing.T) {
	for _, mode := range []struct {
		name string
		new  func(*pgxpool.Pool, *lease.Options) (*lease.Client, error)
	}{
		{"table", New},
		{"advisory", NewAdvisory},
	} {
		t.Run(mode.name, func(t *testing.T) {
			env := testenv.PostgresMigrated(t)
			cfg, err := pgxpool.ParseConfig(env.URL)
			if err != nil {
				t.Fatal(err)
			}
			cancelled := &cancelCounter{}
			cfg.ConnConfig.Tracer = cancelled
			pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer pool.Close()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			c, err := mode.new(pool, &lease.Options{Logger: quiet.Logger, RenewInterval: time.Nanosecond})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close(ctx)
			const ttl = 2 * time.Second
			for i := range 30 {
				l, err := c.Acquire(ctx, "handoff", ttl)
				if err != nil {
					t.Fatalf("hand-off %d: Acquire: %v", i, err)
				}
				got := make(chan *lease.Lease, 1)
				ended := cancelled.others.Load()
				go func() {
					l2, err := c.AcquireWait(ctx, "handoff", ttl)
					if err != nil {
						t.Errorf("hand-off %d: AcquireWait: %v", i, err)
					}
					got <- l2
				}()
				// The waiter's first acquire statement has ended: refused, and waiting.
				testenv.Poll(t, 10*time.Second, "the waiter's refusal", func() bool { return cancelled.others.Load() > ended })
				if err := l.Release(ctx); err != nil {
					t.Fatalf("hand-off %d: the holder's Release: %v", i, err)
				}
				l2 := <-got
				if l2 == nil {
					t.FailNow()
				}
				time.Sleep(time.Duration(i%3) * time.Millisecond)
				if err := l2.Release(ctx); err != nil {
					t.Fatalf("hand-off %d: the waiter's Release: %v", i, err)
				}
			}
			if n := cancelled.n.Load(); n > 0 {
				t.Errorf("%d renewal statements were cancelled (each closes a pool connection)", n)
			}
		})
	}
}
