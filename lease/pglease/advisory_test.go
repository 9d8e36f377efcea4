package pglease

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fencekit/fencekit/internal/testenv"
	"github.com/fencekit/fencekit/lease"
)

// waitLost waits, up to limit, for l to end lost.
func waitLost(t *testing.T, l *lease.Lease, limit time.Duration) {
	t.Helper()
	select {
	case <-l.Done():
	case <-time.After(limit):
		t.Fatalf("advisory lease still live %v after its session ended", limit)
	}
	if !errors.Is(l.Err(), lease.ErrLost) {
		t.Fatalf("lease ended with %v, want lost", l.Err())
	}
}

// TestAdvisoryBackendTerminated ends the holder's session with
// pg_terminate_backend: the server frees the lock at once, the holder's
// Context ends within one renew interval (its next ping fails), and the
// next grant's token is greater. (A table lease survives the same: see
// TestHolderBackendTerminated.)
func TestAdvisoryBackendTerminated(t *testing.T) {
	env := testenv.PostgresMigrated(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	holder, err := NewAdvisory(poolNamed(t, env.URL, "fencekit-advisory-holder"), quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close(ctx)
	other, err := NewAdvisory(env.Pool, quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(ctx)
	const ttl = 900 * time.Millisecond
	l, err := holder.Acquire(ctx, "terminated", ttl)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Acquire(ctx, "terminated", ttl); !errors.Is(err, lease.ErrNotAcquired) {
		t.Fatalf("Acquire while held: %v, want ErrNotAcquired", err)
	}
	var n int
	err = env.Pool.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE application_name = 'fencekit-advisory-holder' AND datname = current_database()`).Scan(&n)
	if err != nil || n == 0 {
		t.Fatalf("terminated %d backends: %v", n, err)
	}
	waitLost(t, l, ttl/3+ttl/2)
	l2, err := other.Acquire(ctx, "terminated", ttl)
	if err != nil || l2.Token() <= l.Token() {
		t.Fatalf("grant after the holder's session ended: %v, %v; want a token above %v", l2, err, l.Token())
	}
	if err := l.Release(ctx); !errors.Is(err, lease.ErrLost) {
		t.Fatalf("Release of the lost lease: %v, want ErrLost", err)
	}
	if err := l2.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestAdvisoryServerRestart restarts, then crashes, a private server under
// a held advisory lease: each ends the session and so the lease, and the
// next grant's token is greater (the counter row is durable).
func TestAdvisoryServerRestart(t *testing.T) {
	srv, pool := privateServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := NewAdvisory(pool, quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	const ttl = 900 * time.Millisecond
	var last lease.Info
	for _, stop := range []func() error{srv.Stop, srv.Kill} {
		l, err := c.Acquire(ctx, "restart", ttl)
		if err != nil {
			if err = afterRestart(func() (err error) { l, err = c.Acquire(ctx, "restart", ttl); return err }); err != nil {
				t.Fatal(err)
			}
		}
		if l.Token() <= last.Last {
			t.Fatalf("token %v after %v", l.Token(), last.Last)
		}
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if err := srv.Start(ctx); err != nil {
			t.Fatal(err)
		}
		waitLost(t, l, ttl/3+ttl/2)
		l.Release(ctx)
		if err := afterRestart(func() (err error) { last, err = c.Inspect(ctx, "restart"); return err }); err != nil {
			t.Fatal(err)
		}
		if last.Held || last.Last != l.Token() {
			t.Fatalf("after the restart: %+v; want free, last token %v", last, l.Token())
		}
	}
}

// TestAdvisoryReleaseDuringRenewal releases while renewals run back to
// back: a Release must never find its lease lost because it cancelled a
// renewal in flight (pgx closes a connection whose statement is cancelled,
// which would end the session and the lock).
func TestAdvisoryReleaseDuringRenewal(t *testing.T) {
	env := testenv.PostgresMigrated(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := NewAdvisory(env.Pool, &lease.Options{Logger: quiet.Logger, RenewInterval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	for i := range 100 {
		l, err := c.Acquire(ctx, "busy", time.Second)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(i%4) * time.Millisecond)
		if err := l.Release(ctx); err != nil {
			t.Fatalf("release %d: %v", i, err)
		}
	}
}
