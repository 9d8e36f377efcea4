package sqlfence_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/testenv"
	"github.com/fencekit/fencekit/lease"
	"github.com/fencekit/fencekit/lease/redislease"
	"github.com/fencekit/fencekit/sqlfence"
)

// newLeases returns a lease client on the test's Redis.
func newLeases(t *testing.T, r *testenv.RedisEnv) *lease.Client {
	t.Helper()
	c, err := redislease.New(r.Client, &lease.Options{RenewInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A lease lost (its Redis key deleted) while sqlfence writes wait under its
// Context: the writes end with errors that match lease.ErrLost and
// fence.ErrFencedOut, not only context.Canceled.
func TestLostLeaseCutsWrites(t *testing.T) {
	env := setup(t)
	r := testenv.Redis(t)
	ctx := testCtx(t)
	unbound, guarded := invoices(t, env.Pool)
	l, err := newLeases(t, r).Acquire(ctx, r.Name("invoices"), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(context.Background())

	// Another transaction holds the guard row and the invoice row, so the
	// writes below wait on their locks until the lease is lost.
	blocker, err := env.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer blocker.Rollback(context.Background())
	if err := sqlfence.Claim(ctx, blocker, "invoices", 1); err != nil {
		t.Fatal(err)
	}
	exec(t, blocker, `SELECT 1 FROM invoices WHERE id = 1 FOR UPDATE`)

	writes := map[string]func(context.Context, *pgx.Conn) error{
		"InTx": func(ctx context.Context, c *pgx.Conn) error {
			return sqlfence.InTx(ctx, c, "invoices", l.Token(), setTotal(ctx, 1, 1))
		},
		"Update": func(ctx context.Context, c *pgx.Conn) error {
			return unbound.Update(ctx, c, 1, l.Token(), 2)
		},
		"guarded Update": func(ctx context.Context, c *pgx.Conn) error {
			return guarded.Update(ctx, c, 1, l.Token(), 3)
		},
	}
	errs := map[string]chan error{}
	for name, write := range writes {
		conn := connect(t, env.URL)
		errs[name] = make(chan error, 1)
		go func() { errs[name] <- write(l.Context(), conn) }()
		waitForLockWait(t, env.Pool, conn.PgConn().PID())
	}
	if err := r.Client.Del(ctx, "fencekit:{"+r.Name("invoices")+"}:lock").Err(); err != nil {
		t.Fatal(err)
	}
	for name, ch := range errs {
		err := <-ch
		if !errors.Is(err, lease.ErrLost) || !errors.Is(err, fence.ErrFencedOut) {
			t.Errorf("%s cut off by the lost lease: %v; want an error matching lease.ErrLost and fence.ErrFencedOut", name, err)
		}
	}
	// Once the Context has ended, nothing is sent, and the error still
	// says why.
	conn := connect(t, env.URL)
	for name, write := range writes {
		if err := write(l.Context(), conn); !errors.Is(err, lease.ErrLost) {
			t.Errorf("%s after the lease was lost: %v; want lease.ErrLost", name, err)
		}
	}
}
