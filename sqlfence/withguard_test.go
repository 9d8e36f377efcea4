package sqlfence_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/sqlfence"
)

// invoices creates invoices(id, total, lock_version) with row 1 at total 0,
// and returns the unbound table and the table bound to guard "invoices".
func invoices(t *testing.T, pool *pgxpool.Pool) (unbound, guarded *sqlfence.Table) {
	t.Helper()
	exec(t, pool, `CREATE TABLE invoices (id int PRIMARY KEY, total bigint NOT NULL, lock_version bigint NOT NULL DEFAULT 0)`,
		`INSERT INTO invoices (id, total) VALUES (1, 0)`)
	tbl, err := sqlfence.NewTable("invoices", "id", "lock_version", "total")
	if err != nil {
		t.Fatal(err)
	}
	return tbl, tbl.WithGuard("invoices")
}

func total(t *testing.T, pool *pgxpool.Pool, id int) int64 {
	t.Helper()
	var v int64
	if err := pool.QueryRow(testCtx(t), `SELECT total FROM invoices WHERE id = $1`, id).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// setTotal is an InTx function writing invoice id with plain SQL.
func setTotal(ctx context.Context, id int, v int64) func(pgx.Tx) error {
	return func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `UPDATE invoices SET total = $2 WHERE id = $1`, id, v)
		return err
	}
}

// A newer holder writes through InTx("invoices"), an older one through the
// table: the unbound table is its own fence and lets the older write in;
// the table bound with WithGuard refuses it, naming the guard.
func TestWithGuardRefusesAfterInTx(t *testing.T) {
	env := setup(t)
	ctx := testCtx(t)
	unbound, guarded := invoices(t, env.Pool)
	if err := sqlfence.InTx(ctx, env.Pool, "invoices", 5, setTotal(ctx, 1, 500)); err != nil {
		t.Fatal(err)
	}
	wantStale(t, guarded.Update(ctx, env.Pool, 1, 4, 400), "invoices", 4, 5)
	wantStale(t, guarded.Upsert(ctx, env.Pool, 1, 4, 400), "invoices", 4, 5)
	wantStale(t, guarded.Insert(ctx, env.Pool, 2, 4, 400), "invoices", 4, 5)
	if got := total(t, env.Pool, 1); got != 500 {
		t.Fatalf("total = %d after refused writes, want 500", got)
	}
	var n int
	if err := env.Pool.QueryRow(ctx, `SELECT count(*) FROM invoices WHERE id = 2`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("refused insert left %d rows, %v", n, err)
	}
	// The hole WithGuard closes: the unbound table knows no guard rows.
	if err := unbound.Update(ctx, env.Pool, 1, 4, 400); err != nil {
		t.Fatalf("unbound update with an older token than InTx's: %v (unbound tables are their own fence)", err)
	}
	// Equal and newer tokens pass the guard.
	if err := guarded.Update(ctx, env.Pool, 1, 5, 501); err != nil {
		t.Fatalf("equal token: %v", err)
	}
	if err := guarded.Insert(ctx, env.Pool, 2, 6, 600); err != nil {
		t.Fatalf("newer token: %v", err)
	}
	if cur, err := current(ctx, env.Pool, "invoices"); err != nil || cur != 6 {
		t.Fatalf("guard token = %d, %v; want 6 (claimed by the guarded insert)", cur, err)
	}
	// The row still fences on its own version behind the guard.
	exec(t, env.Pool, `UPDATE invoices SET lock_version = 9 WHERE id = 1`)
	wantStale(t, guarded.Update(ctx, env.Pool, 1, 7, 700), "invoices:1", 7, 9)
	if err := guarded.Update(ctx, env.Pool, 3, 7, 700); !errors.Is(err, sqlfence.ErrNoRow) {
		t.Fatalf("guarded update of a missing row: %v, want ErrNoRow", err)
	}
	if err := guarded.Insert(ctx, env.Pool, 2, 8, 800); !errors.Is(err, sqlfence.ErrRowExists) {
		t.Fatalf("guarded insert of an existing row: %v, want ErrRowExists", err)
	}
}

// A newer holder writes through the guarded table, an older one through
// InTx("invoices") or Claim: both are refused, and fn never runs.
func TestInTxRefusedAfterWithGuard(t *testing.T) {
	env := setup(t)
	ctx := testCtx(t)
	_, guarded := invoices(t, env.Pool)
	for i, write := range []func(tok fence.Token) error{
		func(tok fence.Token) error { return guarded.Update(ctx, env.Pool, 1, tok, 70) },
		func(tok fence.Token) error { return guarded.Upsert(ctx, env.Pool, 1, tok, 70) },
		func(tok fence.Token) error { return guarded.Insert(ctx, env.Pool, 10+int(tok), tok, 70) },
	} {
		tok := fence.Token(10 * (i + 1))
		if err := write(tok); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
		ran := false
		err := sqlfence.InTx(ctx, env.Pool, "invoices", tok-1, func(tx pgx.Tx) error {
			ran = true
			return setTotal(ctx, 1, -1)(tx)
		})
		wantStale(t, err, "invoices", tok-1, tok)
		if ran {
			t.Fatalf("write %d: InTx ran fn after a newer guarded write", i)
		}
		wantStale(t, sqlfence.Claim(ctx, env.Pool, "invoices", tok-1), "invoices", tok-1, tok)
	}
	if got := total(t, env.Pool, 1); got != 70 {
		t.Fatalf("total = %d, want 70", got)
	}
}

// Inside InTx, the same token writes through the guarded table (its claim
// is the transaction's own); an empty guard resource fails without sending.
func TestWithGuardInsideInTxAndEmpty(t *testing.T) {
	env := setup(t)
	ctx := testCtx(t)
	unbound, guarded := invoices(t, env.Pool)
	err := sqlfence.InTx(ctx, env.Pool, "invoices", 3, func(tx pgx.Tx) error {
		return guarded.Update(ctx, tx, 1, 3, 30)
	})
	if err != nil || total(t, env.Pool, 1) != 30 {
		t.Fatalf("guarded update inside InTx: %v, total %d", err, total(t, env.Pool, 1))
	}
	pool, qc := countingPool(t, env.URL, 1)
	empty := unbound.WithGuard("")
	before := qc.n.Load()
	if err := empty.Update(ctx, pool, 1, 4, 40); err == nil || errors.Is(err, fence.ErrStale) {
		t.Fatalf("WithGuard(\"\"): %v, want an error", err)
	}
	if n := qc.n.Load() - before; n != 0 {
		t.Fatalf("WithGuard(\"\") sent %d statements", n)
	}
}

// 32 writers race on one invoice, half through InTx("hot") with plain SQL,
// half through the table bound to "hot": the audit of accepted writes, in
// commit order, never goes back.
func TestRaceMixedModes(t *testing.T) {
	tbl, err := sqlfence.NewTable("acct", "id", "lock_version", "written_by")
	if err != nil {
		t.Fatal(err)
	}
	guarded := tbl.WithGuard("hot")
	for _, seed := range seeds(t) {
		pool := acctRaceEnv(t)
		write := func(ctx context.Context, pool *pgxpool.Pool, tok fence.Token) error {
			// Both modes hold the guard row's lock from the claim to the
			// commit, so bigserial ids follow commit order.
			audit := func(tx pgx.Tx) error {
				_, err := tx.Exec(ctx, `INSERT INTO audit (tok) VALUES ($1)`, int64(tok))
				return err
			}
			if tok%2 == 0 {
				return sqlfence.InTx(ctx, pool, "hot", tok, func(tx pgx.Tx) error {
					if _, err := tx.Exec(ctx, `UPDATE acct SET written_by = $1 WHERE id = 1`, int64(tok)); err != nil {
						return err
					}
					return audit(tx)
				})
			}
			return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
				if err := guarded.Update(ctx, tx, 1, tok, int64(tok)); err != nil {
					return err
				}
				return audit(tx)
			})
		}
		raceRound(t, "mixed", pool, seed, write, func() (fence.Token, error) {
			var by int64
			err := pool.QueryRow(testCtx(t), `SELECT written_by FROM acct WHERE id = 1`).Scan(&by)
			return fence.Token(by), err
		})
	}
}
