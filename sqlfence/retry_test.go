package sqlfence_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fencekit/fencekit/sqlfence"
)

func TestNewOptions(t *testing.T) {
	for _, c := range []struct {
		opts *sqlfence.Options
		want string
	}{
		{&sqlfence.Options{IsoLevel: "chaos"}, "Options.IsoLevel"},
		{&sqlfence.Options{MaxRetries: -1}, "Options.MaxRetries"},
	} {
		if g, err := sqlfence.New(c.opts); err == nil || g != nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%+v) = %v, want error naming %s", *c.opts, err, c.want)
		}
	}
	for _, o := range []*sqlfence.Options{nil, {}, {IsoLevel: pgx.Serializable, MaxRetries: 2}, {IsoLevel: pgx.ReadCommitted}} {
		if _, err := sqlfence.New(o); err != nil {
			t.Errorf("New(%v): %v", o, err)
		}
	}
}

// The retry loop is bounded: a transaction that always fails with a
// serialization error runs MaxRetries+1 times; other errors and other
// isolation levels are not retried.
func TestRetryBound(t *testing.T) {
	env := setup(t)
	ctx := testCtx(t)
	serr := &pgconn.PgError{Code: "40001", Message: "could not serialize access"}
	for _, c := range []struct {
		name  string
		opts  *sqlfence.Options
		err   error
		calls int
	}{
		{"serializable default bound", &sqlfence.Options{IsoLevel: pgx.Serializable}, serr, 5 + 1 /* the default bound */},
		{"serializable bound 2", &sqlfence.Options{IsoLevel: pgx.Serializable, MaxRetries: 2}, serr, 3},
		{"repeatable read deadlock", &sqlfence.Options{IsoLevel: pgx.RepeatableRead, MaxRetries: 1}, &pgconn.PgError{Code: "40P01"}, 2},
		{"read committed", &sqlfence.Options{IsoLevel: pgx.ReadCommitted, MaxRetries: 3}, serr, 1},
		{"other error", &sqlfence.Options{IsoLevel: pgx.Serializable}, errors.New("boom"), 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			g, err := sqlfence.New(c.opts)
			if err != nil {
				t.Fatal(err)
			}
			calls := 0
			err = g.InTx(ctx, env.Pool, "r", 1, func(tx pgx.Tx) error { calls++; return c.err })
			if !errors.Is(err, c.err) || calls != c.calls {
				t.Fatalf("err = %v after %d calls, want %v after %d", err, calls, c.err, c.calls)
			}
		})
	}
	// A context that ends during the retries stops them and says so.
	g, _ := sqlfence.New(&sqlfence.Options{IsoLevel: pgx.Serializable, MaxRetries: 1000})
	short, cancel := context.WithCancel(ctx)
	defer cancel()
	calls := 0
	err := g.InTx(short, env.Pool, "r", 1, func(pgx.Tx) error {
		if calls++; calls == 2 {
			cancel()
		}
		return serr
	})
	if !errors.Is(err, serr) || !errors.Is(err, context.Canceled) || calls != 2 {
		t.Fatalf("err = %v after %d calls, want the serialization error joined with ctx's after 2", err, calls)
	}
	// An isolation level cannot be set on a savepoint.
	tx, err := env.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	g, _ = sqlfence.New(&sqlfence.Options{IsoLevel: pgx.Serializable})
	if err := g.InTx(ctx, tx, "r", 1, func(pgx.Tx) error { return nil }); err == nil || !strings.Contains(err.Error(), "needs a *pgx.Conn or *pgxpool.Pool") {
		t.Fatalf("isolation level on a pgx.Tx: %v", err)
	}
}

// Two SERIALIZABLE transactions with a write skew (each reads the other's
// table, then writes): PostgreSQL aborts one with SQLSTATE 40001 and Guard
// runs it again, so both succeed as if one ran after the other.
func TestSerializableRetryReal(t *testing.T) {
	env := setup(t)
	ctx := testCtx(t)
	exec(t, env.Pool, `CREATE TABLE items (v int NOT NULL)`)
	g, err := sqlfence.New(&sqlfence.Options{IsoLevel: pgx.Serializable})
	if err != nil {
		t.Fatal(err)
	}
	var attempts atomic.Int32
	var read sync.WaitGroup
	read.Add(2)
	first := [2]bool{true, true}
	var wg sync.WaitGroup
	errs := [2]error{}
	for i := range 2 {
		wg.Go(func() {
			resource := []string{"a", "b"}[i] // different guard rows: no lock between them
			errs[i] = g.InTx(ctx, env.Pool, resource, 1, func(tx pgx.Tx) error {
				attempts.Add(1)
				var sum int
				if err := tx.QueryRow(ctx, `SELECT coalesce(sum(v), 0) FROM items`).Scan(&sum); err != nil {
					return err
				}
				if first[i] {
					first[i] = false
					read.Done()
					read.Wait() // both have read before either writes
				}
				_, err := tx.Exec(ctx, `INSERT INTO items VALUES ($1)`, sum+1)
				return err
			})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("tx %d: %v", i, err)
		}
	}
	rows, _ := env.Pool.Query(ctx, `SELECT v FROM items ORDER BY v`)
	vals, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		t.Fatal(err)
	}
	if len(vals) != 2 || vals[0] != 1 || vals[1] != 2 || attempts.Load() < 3 {
		t.Fatalf("items = %v after %d attempts, want [1 2] after at least 3 (one retry)", vals, attempts.Load())
	}
	t.Logf("%d attempts for 2 transactions", attempts.Load())
}

// Two REPEATABLE READ transactions that claim two resources in opposite
// orders deadlock; PostgreSQL aborts one with SQLSTATE 40P01 and Guard runs
// it again, so both succeed.
func TestDeadlockRetryReal(t *testing.T) {
	env := setup(t)
	ctx := testCtx(t)
	g, err := sqlfence.New(&sqlfence.Options{IsoLevel: pgx.RepeatableRead, MaxRetries: 20}) // a retry can deadlock again
	if err != nil {
		t.Fatal(err)
	}
	var (
		attempts atomic.Int32
		mu       sync.Mutex
		codes    []string
		claimed  sync.WaitGroup
		wg       sync.WaitGroup
		errs     [2]error
	)
	claimed.Add(2)
	first := [2]bool{true, true}
	for i := range 2 {
		wg.Go(func() {
			mine, other := []string{"a", "b"}[i], []string{"b", "a"}[i]
			errs[i] = g.InTx(ctx, env.Pool, mine, 1, func(tx pgx.Tx) error {
				attempts.Add(1)
				if first[i] {
					first[i] = false
					claimed.Done()
					claimed.Wait() // both hold their own guard row
				}
				err := sqlfence.Claim(ctx, tx, other, 1)
				var pe *pgconn.PgError
				if errors.As(err, &pe) {
					mu.Lock()
					codes = append(codes, pe.Code)
					mu.Unlock()
				}
				return err
			})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("tx %d: %v", i, err)
		}
	}
	if attempts.Load() < 3 || !slices.Contains(codes, "40P01") {
		t.Fatalf("%d attempts, SQLSTATEs %v: want a deadlock (40P01) and a retry", attempts.Load(), codes)
	}
	t.Logf("%d attempts, SQLSTATEs %v", attempts.Load(), codes)
}

// TestIsoLevelOnPoolConn: a Guard's isolation level applies on a
// *pgxpool.Conn too.
func TestIsoLevelOnPoolConn(t *testing.T) {
	env := setup(t)
	ctx := testCtx(t)
	g, err := sqlfence.New(&sqlfence.Options{IsoLevel: pgx.Serializable})
	if err != nil {
		t.Fatal(err)
	}
	c, err := env.Pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	var level string
	err = g.InTx(ctx, c, "r", 1, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, "SHOW transaction_isolation").Scan(&level)
	})
	if err != nil || level != "serializable" {
		t.Fatalf("InTx on a *pgxpool.Conn with IsoLevel serializable ran at %q (%v)", level, err)
	}
}
