package pglease

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/testenv"
	"github.com/fencekit/fencekit/lease"
	"github.com/fencekit/fencekit/migrations"
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
	holder := advisoryNamed(t, env.URL, "fencekit-advisory-holder")
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

// TestAdvisorySearchPath gives two clients of one database different
// search_paths that both find the tables in public (app,public with an
// app schema that has no fencekit tables, and public): they must exclude
// each other, and the operator functions on either pool must see the
// lease held.
func TestAdvisorySearchPath(t *testing.T) {
	env := testenv.PostgresDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := migrations.Up(ctx, env.URL); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Pool.Exec(ctx, `CREATE SCHEMA app`); err != nil {
		t.Fatal(err)
	}
	appPool := poolNamed(t, env.URL+"?search_path=app,public", "fencekit-app")
	publicPool := poolNamed(t, env.URL+"?search_path=public", "fencekit-public")
	app, err := NewAdvisory(appPool, quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close(ctx)
	public, err := NewAdvisory(publicPool, quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer public.Close(ctx)
	l, err := app.Acquire(ctx, "job", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if other, err := public.Acquire(ctx, "job", time.Minute); !errors.Is(err, lease.ErrNotAcquired) {
		if err == nil {
			other.Release(ctx)
			t.Fatalf("second client (search_path public) was granted token %v while token %v holds the lease; want ErrNotAcquired", other.Token(), l.Token())
		}
		t.Fatalf("second client (search_path public): %v, want ErrNotAcquired", err)
	}
	if info, err := public.Inspect(ctx, "job"); err != nil || !info.Held || info.Holder != l.Token() {
		t.Fatalf("Inspect through the other search_path: %+v, %v; want held by %v", info, err, l.Token())
	}
	if _, _, err := public.Bump(ctx, "job", l.Token()+1000); err == nil || !strings.Contains(err.Error(), "held by") {
		t.Fatalf("Bump of a held lease through the other search_path: %v; want held", err)
	}
	r, err := public.ForceRelease(ctx, "job", 0)
	if err != nil || !r.Held || r.Holder != l.Token() {
		t.Fatalf("ForceRelease through the other search_path: %+v, %v; want held by %v", r, err, l.Token())
	}
	waitLost(t, l, 30*time.Second)
}

// TestAdvisoryRefusesTransactionPooling: NewAdvisory on a pool through
// PgBouncer in transaction pooling mode, where a session advisory lock
// stays on a server connection that PgBouncer hands to other clients, must
// fail with an error that says so.
func TestAdvisoryRefusesTransactionPooling(t *testing.T) {
	env := testenv.PostgresDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := migrations.Up(ctx, env.URL); err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.New(ctx, testenv.StartPgBouncer(t).URL(t, env.URL)+"?default_query_exec_mode=exec")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	c, err := NewAdvisory(pool, quiet)
	if err == nil {
		defer c.Close(ctx)
		if _, err := c.Acquire(ctx, "job", time.Minute); err != nil {
			t.Fatal(err)
		}
		_, err := c.Acquire(ctx, "job", time.Minute)
		t.Fatalf("NewAdvisory through PgBouncer in transaction pooling mode: no error (and a second Acquire of the held lease returned %v)", err)
	}
	t.Log(err)
	if !strings.Contains(err.Error(), "pooler") || !strings.Contains(err.Error(), "session") {
		t.Fatalf("NewAdvisory through PgBouncer: %v; want an error naming the pooler and the session", err)
	}
}

// TestAdvisoryCloseEndsLostSessions loses advisory leases locally (their
// renewals have a millisecond to come back) and releases none of them:
// the client's Close must end their sessions, so that the locks are free
// and the pool's Close returns instead of waiting for their connections.
func TestAdvisoryCloseEndsLostSessions(t *testing.T) {
	env := testenv.PostgresMigrated(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool, err := pgxpool.New(ctx, env.URL) // not closed in a Cleanup, which would wait forever when this fails
	if err != nil {
		t.Fatal(err)
	}
	const ttl = 100 * time.Millisecond
	c, err := NewAdvisory(pool, &lease.Options{Logger: quiet.Logger, DriftMargin: ttl - 10*time.Millisecond, RenewInterval: 9 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var lost []string
	for i := 0; i < 200 && len(lost) < 3; i++ {
		name := "lost-" + strconv.Itoa(i)
		l, err := c.Acquire(ctx, name, ttl)
		if errors.Is(err, lease.ErrLost) {
			continue // its reply came after the local deadline: Acquire released it
		} else if err != nil {
			t.Fatal(err)
		}
		select {
		case <-l.Done():
			if !errors.Is(l.Err(), lease.ErrLost) {
				t.Fatalf("lease ended with %v, want lost", l.Err())
			}
			lost = append(lost, name)
		case <-time.After(time.Second):
			l.Release(ctx)
		}
	}
	if len(lost) == 0 {
		t.Fatal("no lease lost in 200 tries: renewals came back within a millisecond every time")
	}
	if err := c.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	other, err := NewAdvisory(env.Pool, quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(ctx)
	for _, name := range lost {
		l, err := other.Acquire(ctx, name, time.Second)
		if err != nil {
			t.Fatalf("Acquire of %q, lost and not released, after its client's Close: %v", name, err)
		}
		l.Release(ctx)
	}
	closed := make(chan struct{})
	go func() { pool.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatalf("pool.Close still waiting 10 s after the client's Close: %d connections of lost leases not given back", pool.Stat().AcquiredConns())
	}
}

// TestAdvisoryForceReleaseOnlySparesNewerSession: ForceRelease(name, T)
// ends the session holding name's lock only while T holds it. A newer
// client that has taken the lock and is still writing its grant (its row
// update waits, here on a row lock the test holds) holds no grant of T:
// its session must survive and its Acquire succeed.
func TestAdvisoryForceReleaseOnlySparesNewerSession(t *testing.T) {
	env := testenv.PostgresMigrated(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	first, err := NewAdvisory(env.Pool, quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close(ctx)
	old := grantAndRelease(t, ctx, first, "race")

	// Hold the grant row's lock so that the next Acquire takes the advisory
	// lock and then waits to write its token.
	blocker := lockGrantRows(t, ctx, env.Pool)
	next := advisoryNamed(t, env.URL, "fencekit-advisory-next")
	acquired := make(chan error, 1)
	go func() {
		l, err := next.Acquire(ctx, "race", time.Minute)
		if err == nil {
			err = l.Release(ctx)
		}
		acquired <- err
	}()
	testenv.Poll(t, 10*time.Second, "the next Acquire waits on the row lock", func() bool {
		var n int
		err := env.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE application_name = 'fencekit-advisory-next' AND wait_event_type = 'Lock'`).Scan(&n)
		return err == nil && n == 1
	})

	// The operator ends the old grant only: it is no longer held. Its call
	// either returns or waits on the row lock too; then the row is let go.
	op := advisoryNamed(t, env.URL, "fencekit-advisory-op")
	type result struct {
		info lease.Info
		err  error
	}
	forced := make(chan result, 1)
	go func() {
		info, err := op.ForceRelease(ctx, "race", old)
		forced <- result{info, err}
	}()
	var f result
	testenv.Poll(t, 10*time.Second, "ForceRelease returns or waits on the row lock", func() bool {
		select {
		case f = <-forced:
			forced <- f
			return true
		default:
		}
		var n int
		err := env.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE application_name = 'fencekit-advisory-op' AND wait_event_type = 'Lock'`).Scan(&n)
		return err == nil && n == 1
	})
	if err := blocker.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	f = <-forced
	if err := <-acquired; err != nil {
		t.Errorf("the newer client's Acquire: %v; ForceRelease(%v) returned %+v, %v", err, old, f.info, f.err)
	}
	if f.err != nil || f.info.Held && f.info.Holder == old {
		t.Errorf("ForceRelease(%v): %+v, %v; want no error and the old grant not held", old, f.info, f.err)
	}
}

// TestAdvisoryForceReleaseStoppedSession: a holder whose server process is
// stopped (SIGSTOP) cannot end within pg_terminate_backend's 5 s. The
// error says so and what to check, not that the session could not be
// terminated: it ends, and frees the lock, once it runs again.
func TestAdvisoryForceReleaseStoppedSession(t *testing.T) {
	env := testenv.PostgresMigrated(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	holder := advisoryNamed(t, env.URL, "fencekit-advisory-stopped")
	l, err := holder.Acquire(ctx, "stopped", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	var pid int
	if err := env.Pool.QueryRow(ctx, `SELECT pid FROM pg_stat_activity
		WHERE application_name = 'fencekit-advisory-stopped' AND datname = current_database()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Skipf("cannot stop the server process %d (a server on another host or user): %v", pid, err)
	}
	stopped := true
	defer func() {
		if stopped {
			syscall.Kill(pid, syscall.SIGCONT)
		}
	}()
	_, err = holder.ForceRelease(ctx, "stopped", 0)
	if err == nil || !strings.Contains(err.Error(), "did not end within 5 s") || !strings.Contains(err.Error(), "Inspect") {
		t.Errorf("ForceRelease of a stopped session: %v; want it to say the session did not end within 5 s and to check with Inspect", err)
	}
	syscall.Kill(pid, syscall.SIGCONT)
	stopped = false
	testenv.Poll(t, 10*time.Second, "the lock is free once the session runs", func() bool {
		info, err := holder.Inspect(ctx, "stopped")
		return err == nil && !info.Held
	})
}

// advisoryNamed returns an advisory client on its own pool whose sessions
// carry application_name app (so a test can find them in
// pg_stat_activity), closed at cleanup.
func advisoryNamed(t *testing.T, url, app string) *lease.Client {
	t.Helper()
	c, err := NewAdvisory(poolNamed(t, url, app), quiet)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// TestAdvisoryAcquireCancelledOnRowLock: an advisory Acquire whose context
// ends while it waits for the grant row's lock returns at once, gives its
// connection back, and leaves no session behind that takes the lease once
// the row is free: the next Acquire by another client is granted a larger
// token.
func TestAdvisoryAcquireCancelledOnRowLock(t *testing.T) {
	env := testenv.PostgresMigrated(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg, err := pgxpool.ParseConfig(env.URL)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = "fencekit-advisory-cancelled"
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // bounded: the pool's Close waits for every connection given back
		closed := make(chan struct{})
		go func() { pool.Close(); close(closed) }()
		select {
		case <-closed:
		case <-time.After(10 * time.Second):
			t.Error("the pool's Close still waits for a connection after 10 s")
		}
	})
	first, err := NewAdvisory(pool, quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close(ctx)
	old := grantAndRelease(t, ctx, first, "cancel")
	blocker := lockGrantRows(t, ctx, env.Pool)
	actx, acancel := context.WithCancel(ctx)
	acquired := make(chan error, 1)
	go func() {
		l, err := first.Acquire(actx, "cancel", time.Minute)
		if err == nil {
			l.Release(ctx)
		}
		acquired <- err
	}()
	waiting := func() int {
		var n int
		if err := env.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE application_name = 'fencekit-advisory-cancelled' AND wait_event_type = 'Lock'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	testenv.Poll(t, 10*time.Second, "Acquire waits on the row lock", func() bool { return waiting() == 1 })
	cancelled := time.Now()
	acancel()
	if err := <-acquired; err == nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("Acquire cancelled while waiting on the row lock: %v; want context.Canceled", err)
	}
	if d := time.Since(cancelled); d > 5*time.Second {
		t.Errorf("Acquire returned %v after its context was cancelled", d)
	}
	testenv.Poll(t, 10*time.Second, "the cancelled Acquire's connection leaves the pool's acquired ones", func() bool {
		return pool.Stat().AcquiredConns() == 0
	})
	testenv.Poll(t, 10*time.Second, "the cancelled Acquire's statement ends on the server", func() bool { return waiting() == 0 })
	if err := blocker.Rollback(ctx); err != nil {
		t.Fatal(err)
	}

	other, err := NewAdvisory(env.Pool, quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(ctx)
	next, err := other.Acquire(ctx, "cancel", time.Minute)
	if err != nil {
		t.Fatalf("Acquire after the cancelled one, once the row is free: %v", err)
	}
	defer next.Release(ctx)
	if next.Token() <= old {
		t.Errorf("token %v after %v", next.Token(), old)
	}
}

// grantAndRelease acquires name with c and releases it, so that its grant
// row exists and is free, and returns the grant's token.
func grantAndRelease(t *testing.T, ctx context.Context, c *lease.Client, name string) fence.Token {
	t.Helper()
	l, err := c.Acquire(ctx, name, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	return l.Token()
}

// lockGrantRows begins a transaction on pool that holds every advisory
// grant row's lock until its Rollback or the test's end.
func lockGrantRows(t *testing.T, ctx context.Context, pool *pgxpool.Pool) pgx.Tx {
	t.Helper()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Rollback(context.WithoutCancel(ctx)) })
	if _, err := tx.Exec(ctx, `SELECT FROM fencekit_leases_advisory FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	return tx
}
