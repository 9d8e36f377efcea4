package sqlfence_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/testenv"
	"github.com/fencekit/fencekit/migrations"
	"github.com/fencekit/fencekit/sqlfence"
)

// bouncerSetup returns a fresh database with fencekit's migrations and a
// table accounts(id, lock_version, balance), and the URL of that database
// through a private PgBouncer in transaction pooling mode.
func bouncerSetup(t *testing.T) (direct *pgxpool.Pool, bouncerURL string) {
	t.Helper()
	env := testenv.PostgresDatabase(t)
	ctx := testCtx(t)
	if err := migrations.Up(ctx, env.URL); err != nil {
		t.Fatal(err)
	}
	exec(t, env.Pool, `CREATE TABLE accounts (id int PRIMARY KEY, lock_version bigint NOT NULL DEFAULT 0, balance bigint NOT NULL)`,
		`INSERT INTO accounts (id, balance) SELECT g, 0 FROM generate_series(1, 8) g`)
	return env.Pool, testenv.StartPgBouncer(t).URL(t, env.URL)
}

// TestPgBouncerFencedWrites makes 200 fenced writes from 20 goroutines in
// each mode (InTx, Exec, Table.Update, Table.WithGuard) through PgBouncer in
// transaction pooling mode, with pgxpool.New's defaults on the URL
// docs/postgres.md gives (default_query_exec_mode=exec): none may fail,
// and a stale token is still refused afterwards in each mode.
func TestPgBouncerFencedWrites(t *testing.T) {
	direct, bouncer := bouncerSetup(t)
	ctx := testCtx(t)
	pool, err := pgxpool.New(ctx, bouncer+"?default_query_exec_mode=exec")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	accounts, err := sqlfence.NewTable("accounts", "id", "lock_version", "balance")
	if err != nil {
		t.Fatal(err)
	}
	guarded := accounts.WithGuard("guarded")
	modes := []struct {
		name  string
		write func(g, i int, tok fence.Token) error
	}{
		{"InTx", func(g, i int, tok fence.Token) error {
			return sqlfence.InTx(ctx, pool, fmt.Sprintf("intx:%d", g), tok, func(tx pgx.Tx) error {
				_, err := tx.Exec(ctx, `UPDATE accounts SET balance = balance + 1 WHERE id = $1`, g%8+1)
				return err
			})
		}},
		{"Exec", func(g, i int, tok fence.Token) error {
			_, err := sqlfence.Exec(ctx, pool, fmt.Sprintf("exec:%d", g), tok, `UPDATE accounts SET balance = balance + 1 WHERE id = $1`, g%8+1)
			return err
		}},
		{"Table", func(g, i int, tok fence.Token) error {
			return accounts.Update(ctx, pool, g%8+1, tok, int64(i))
		}},
		{"WithGuard", func(g, i int, tok fence.Token) error {
			return guarded.Update(ctx, pool, g%8+1, tok, int64(i))
		}},
	}
	for m, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			const goroutines, each = 20, 10
			base := fence.Token(1000 * (m + 1))
			var wg sync.WaitGroup
			errs := make(chan error, goroutines*each)
			for g := range goroutines {
				wg.Go(func() {
					for i := range each {
						// Tokens increase per goroutine and across modes, so
						// every write here is fresh and must be accepted.
						tok := base + fence.Token(goroutines*i+g+1)
						if err := mode.write(g, i, tok); err != nil && !errors.Is(err, fence.ErrStale) {
							errs <- fmt.Errorf("goroutine %d write %d: %w", g, i, err)
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			n := 0
			for err := range errs {
				if n++; n <= 3 {
					t.Error(err)
				}
			}
			if n > 0 {
				t.Fatalf("%d of %d fenced writes through PgBouncer failed", n, goroutines*each)
			}
			// A stale token is still refused.
			err := mode.write(0, 0, 1)
			if !errors.Is(err, fence.ErrStale) {
				t.Fatalf("stale write through PgBouncer: got %v, want a stale error", err)
			}
		})
	}
	var sum int64
	if err := direct.QueryRow(ctx, `SELECT sum(balance) FROM accounts`).Scan(&sum); err != nil {
		t.Fatal(err)
	}
	if sum == 0 {
		t.Fatal("no write reached the table")
	}
}

// TestPgBouncerMigrationsUp runs migrations.Up through PgBouncer in
// transaction pooling mode with a ctx deadline (as the docs recommend),
// twice in a row and twice at once: each run succeeds and the schema is
// there. (golang-migrate's own session lock would outlive its transaction
// there; Up serializes runs with a lock of its own.)
func TestPgBouncerMigrationsUp(t *testing.T) {
	env := testenv.PostgresDatabase(t)
	bouncer := testenv.StartPgBouncer(t).URL(t, env.URL)
	for i := range 2 {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		err := migrations.Up(ctx, bouncer)
		cancel()
		if err != nil {
			t.Fatalf("run %d: migrations.Up through PgBouncer: %v", i+1, err)
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			errs[i] = migrations.Up(ctx, bouncer)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("concurrent migrations.Up through PgBouncer: %v", err)
	}
	var tokens bool
	if err := env.Pool.QueryRow(testCtx(t), `SELECT to_regclass('fencekit_tokens') IS NOT NULL`).Scan(&tokens); err != nil || !tokens {
		t.Fatalf("fencekit_tokens after Up: %v %v", tokens, err)
	}
}

// TestPgBouncerExecSameToken: through PgBouncer in transaction pooling
// mode, as text and in the simple protocol, Exec with the token the guard
// row holds (its row-lock path) writes again and again, an older token is
// refused, and a newer one moves the row; sessions change between calls.
func TestPgBouncerExecSameToken(t *testing.T) {
	dpool, bouncer := bouncerSetup(t)
	ctx := testCtx(t)
	exec(t, dpool, `CREATE TABLE IF NOT EXISTS bounced (id int PRIMARY KEY, n int NOT NULL)`, `INSERT INTO bounced VALUES (1, 0) ON CONFLICT DO NOTHING`)
	for _, mode := range []string{"exec", "simple_protocol"} {
		t.Run(mode, func(t *testing.T) {
			pool, err := pgxpool.New(ctx, bouncer+"?default_query_exec_mode="+mode)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(pool.Close)
			res := "bounced/" + mode
			var before int
			if err := dpool.QueryRow(ctx, `SELECT n FROM bounced WHERE id = 1`).Scan(&before); err != nil {
				t.Fatal(err)
			}
			for i := range 5 {
				if _, err := sqlfence.Exec(ctx, pool, res, 40, `UPDATE bounced SET n = n + 1 WHERE id = 1`); err != nil {
					t.Fatalf("write %d with token 40: %v", i, err)
				}
			}
			_, err = sqlfence.Exec(ctx, pool, res, 39, `UPDATE bounced SET n = n + 100 WHERE id = 1`)
			wantStale(t, err, res, 39, 40)
			if _, err := sqlfence.Exec(ctx, pool, res, 41, `UPDATE bounced SET n = n + 1 WHERE id = 1`); err != nil {
				t.Fatal(err)
			}
			_, err = sqlfence.Exec(ctx, pool, res, 40, `UPDATE bounced SET n = n + 100 WHERE id = 1`)
			wantStale(t, err, res, 40, 41)
			var after int
			if err := dpool.QueryRow(ctx, `SELECT n FROM bounced WHERE id = 1`).Scan(&after); err != nil || after != before+6 {
				t.Fatalf("n = %d, %v; want %d (6 accepted writes, 2 refused)", after, err, before+6)
			}
		})
	}
}
