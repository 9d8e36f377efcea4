package pglease

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencekit/fencekit/internal/testenv"
	"github.com/fencekit/fencekit/lease"
)

var quiet = &lease.Options{Logger: slog.New(slog.DiscardHandler)}

// poolNamed opens a pool on url whose connections carry application_name.
func poolNamed(t *testing.T, url, app string) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = app
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// waitRenewed waits until l's deadline shows a renewal sent after after
// (with the default drift margin).
func waitRenewed(t *testing.T, l *lease.Lease, after time.Time, ttl, limit time.Duration) {
	t.Helper()
	for end := time.Now().Add(limit); !l.Deadline().After(after.Add(ttl - ttl/100 - 2*time.Millisecond)); {
		if time.Now().After(end) || l.Err() != nil {
			t.Fatalf("no renewal confirmed within %v (lease err %v)", limit, l.Err())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// afterRestart retries op while it fails on a pooled connection that the
// restart closed (pgxpool finds out on first use; renewals retry the same
// way), up to the pool's size.
func afterRestart(op func() error) error {
	var err error
	for range 5 {
		if err = op(); err == nil || errors.Is(err, lease.ErrNotAcquired) {
			return err
		}
	}
	return err
}

// TestHolderBackendTerminated terminates every backend of the holder's
// pool (pg_terminate_backend) several times: a table lease does not live
// in a session, so the next renewal, on a new connection, keeps it, and no
// one else is granted it meanwhile. (A session advisory lock would have
// been released by the first termination.)
func TestHolderBackendTerminated(t *testing.T) {
	env := testenv.Postgres(t)
	Migrate(t, env.Pool)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	holderPool := poolNamed(t, env.URL, "fencekit-holder")
	holder, err := New(holderPool, quiet)
	if err != nil {
		t.Fatal(err)
	}
	other, err := New(env.Pool, quiet)
	if err != nil {
		t.Fatal(err)
	}
	// 2s, not less: after a termination the next renewal needs a new
	// connection, which took over 500 ms once on a loaded CI machine.
	const ttl = 2 * time.Second
	l, err := holder.Acquire(ctx, "terminated", ttl)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		var n int
		err := env.Pool.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
			WHERE application_name = 'fencekit-holder' AND datname = current_database()`).Scan(&n)
		if err != nil || n == 0 {
			t.Fatalf("round %d: terminated %d backends: %v", i, n, err)
		}
		terminated := time.Now()
		waitRenewed(t, l, terminated, ttl, 5*ttl)
		_, err = other.Acquire(ctx, "terminated", ttl)
		var na *lease.NotAcquiredError
		if !errors.As(err, &na) || na.Holder != l.Token() {
			t.Fatalf("round %d: another client's Acquire: %v, want held by %v", i, err, l.Token())
		}
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// privateServer starts a private PostgreSQL server with fencekit_leases and
// returns a pool on it, closed at cleanup.
func privateServer(t *testing.T) (*testenv.PostgresServer, *pgxpool.Pool) {
	t.Helper()
	srv := testenv.StartPostgresServer(t)
	pool, err := pgxpool.New(context.Background(), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	Migrate(t, pool)
	return srv, pool
}

// TestServerRestart restarts a private PostgreSQL server under a held
// lease: a restart shorter than the TTL keeps it (renewals retried), a
// crash (SIGKILL) loses no token (the next grant's token is greater), and
// an outage longer than the TTL ends the lease locally at its deadline;
// after it the name is granted again with the next token.
func TestServerRestart(t *testing.T) {
	srv, pool := privateServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := New(pool, quiet)
	if err != nil {
		t.Fatal(err)
	}

	const ttl = 10 * time.Second
	l, err := c.Acquire(ctx, "restart", ttl)
	if err != nil {
		t.Fatal(err)
	}
	restarted := time.Now()
	if err := srv.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("fast shutdown and start took %v", time.Since(restarted))
	if err := l.Err(); err != nil {
		t.Fatalf("lease ended by a restart shorter than its TTL: %v", err)
	}
	if err := afterRestart(func() error { _, err := c.Acquire(ctx, "restart", ttl); return err }); !errors.Is(err, lease.ErrNotAcquired) {
		t.Fatalf("Acquire after the restart: %v, want ErrNotAcquired", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatalf("Release after the restart: %v", err)
	}

	// A crash right after a grant loses neither the grant nor its token.
	l2, err := c.Acquire(ctx, "restart", ttl)
	if err != nil || l2.Token() <= l.Token() {
		t.Fatalf("grant after release: %v, %v", l2, err)
	}
	crashed := time.Now()
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("crash and recovery took %v", time.Since(crashed))
	var info lease.Info
	err = afterRestart(func() (err error) { info, err = c.Inspect(ctx, "restart"); return err })
	if err != nil || !info.Held || info.Holder != l2.Token() {
		t.Fatalf("after a crash: %+v, %v; want held by %v", info, err, l2.Token())
	}

	// An outage longer than the TTL: the lease ends locally, by its deadline.
	const short = 600 * time.Millisecond
	if err := afterRestart(func() error { return l2.Release(ctx) }); err != nil {
		t.Fatal(err)
	}
	l3, err := c.Acquire(ctx, "restart", short)
	if err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	t.Logf("stop took %v", time.Since(stopped))
	select {
	case <-l3.Done():
	case <-time.After(10 * short):
		t.Fatal("lease still live with the server down for 10 TTLs")
	}
	var lost *lease.LostError
	if !errors.As(l3.Err(), &lost) || lost.Cause != lease.CauseExpired {
		t.Fatalf("lease ended with %v, want CauseExpired", l3.Err())
	}
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	var l4 *lease.Lease
	err = afterRestart(func() (err error) { l4, err = c.AcquireWait(ctx, "restart", short); return err })
	if err != nil || l4.Token() <= l3.Token() {
		t.Fatalf("grant after the outage: %v, %v; want a token above %v", l4, err, l3.Token())
	}
	var n int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM fencekit_leases", pgx.QueryExecModeSimpleProtocol).Scan(&n); err != nil || n != 1 {
		t.Fatalf("%d rows, %v; want 1", n, err)
	}
}

// TestWatchAcrossRestart checks that the LISTEN connection comes back after
// a server restart: its waiters are woken once (a release may have been
// missed), and later releases wake them again.
func TestWatchAcrossRestart(t *testing.T) {
	srv, pool := privateServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b := &backend{pool: pool, prefix: "t", logger: slog.New(slog.DiscardHandler)}
	b.listener.b = b
	w, err := b.Watch(ctx, "w")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := srv.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if err := w.Wait(ctx); err != nil {
		t.Fatalf("no wake-up after the restart: %v", err)
	}
	// The listener may still be connecting: wait until LISTEN is back.
	for {
		var n int
		err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE query = 'LISTEN `+notifyChannel+`'`).Scan(&n)
		if err == nil && n == 1 {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the listener did not reconnect")
		}
		time.Sleep(20 * time.Millisecond)
	}
	drain, stop := context.WithTimeout(ctx, 50*time.Millisecond)
	w.Wait(drain) // a second reconnect wake-up, if any
	stop()
	var g *lease.Grant
	if err := afterRestart(func() (err error) { g, err = b.Acquire(ctx, "w", 10*time.Second, "me"); return err }); err != nil {
		t.Fatal(err)
	}
	if err := b.Release(ctx, g); err != nil {
		t.Fatal(err)
	}
	if err := w.Wait(ctx); err != nil {
		t.Fatalf("release after the restart did not wake the waiter: %v", err)
	}
}
