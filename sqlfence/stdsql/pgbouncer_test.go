package stdsql_test

import (
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/testenv"
	"github.com/fencekit/fencekit/migrations"
	"github.com/fencekit/fencekit/sqlfence/stdsql"
)

// TestPgBouncerFencedWrites makes 200 fenced writes from 20 goroutines in
// each mode (InTx, Exec, Table.Update, Table.WithGuard) through PgBouncer
// in transaction pooling mode, over both drivers with the URLs
// docs/postgres.md gives (pgx: default_query_exec_mode=exec, lib/pq:
// binary_parameters=yes): none may fail, and a stale token is still
// refused afterwards in each mode.
func TestPgBouncerFencedWrites(t *testing.T) {
	env := testenv.PostgresDatabase(t)
	ctx := testCtx(t)
	if err := migrations.Up(ctx, env.URL); err != nil {
		t.Fatal(err)
	}
	bouncer := testenv.StartPgBouncer(t).URL(t, env.URL)
	accounts, err := stdsql.NewTable("accounts", "id", "lock_version", "balance")
	if err != nil {
		t.Fatal(err)
	}
	guarded := accounts.WithGuard("guarded")
	for d, driver := range drivers {
		t.Run(driver, func(t *testing.T) {
			dbURL := bouncer + "?binary_parameters=yes" // lib/pq: one round trip per statement
			if driver == "pgx" {
				dbURL = bouncer + "?default_query_exec_mode=exec" // no prepared statements
			}
			db := open(t, driver, dbURL)
			table := fmt.Sprintf("accounts_%d", d)
			exec(t, db, `CREATE TABLE `+table+` (id int PRIMARY KEY, lock_version bigint NOT NULL DEFAULT 0, balance bigint NOT NULL)`,
				`INSERT INTO `+table+` (id, balance) SELECT g, 0 FROM generate_series(1, 8) g`)
			exec(t, db, `DROP TABLE IF EXISTS accounts`, `CREATE VIEW accounts AS SELECT * FROM `+table)
			t.Cleanup(func() { exec(t, db, `DROP VIEW accounts`) })
			modes := []struct {
				name  string
				write func(g, i int, tok fence.Token) error
			}{
				{"InTx", func(g, i int, tok fence.Token) error {
					return stdsql.InTx(ctx, db, fmt.Sprintf("intx:%d:%d", d, g), tok, func(tx *sql.Tx) error {
						_, err := tx.ExecContext(ctx, `UPDATE `+table+` SET balance = balance + 1 WHERE id = $1`, g%8+1)
						return err
					})
				}},
				{"Exec", func(g, i int, tok fence.Token) error {
					_, err := stdsql.Exec(ctx, db, fmt.Sprintf("exec:%d:%d", d, g), tok, `UPDATE `+table+` SET balance = balance + 1 WHERE id = $1`, g%8+1)
					return err
				}},
				{"Table", func(g, i int, tok fence.Token) error { return accounts.Update(ctx, db, g%8+1, tok, int64(i)) }},
				{"WithGuard", func(g, i int, tok fence.Token) error { return guarded.Update(ctx, db, g%8+1, tok, int64(i)) }},
			}
			for m, mode := range modes {
				const goroutines, each = 20, 10
				base := fence.Token(1000*(m+1) + 10000*d)
				var wg sync.WaitGroup
				errs := make(chan error, goroutines*each)
				for g := range goroutines {
					wg.Go(func() {
						for i := range each {
							// Goroutines g and g+8 share a row: stale is fine.
							err := mode.write(g, i, base+fence.Token(goroutines*i+g+1))
							if err != nil && !errors.Is(err, fence.ErrStale) {
								errs <- fmt.Errorf("%s goroutine %d write %d: %w", mode.name, g, i, err)
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
					t.Fatalf("%s: %d of %d fenced writes through PgBouncer failed", mode.name, n, goroutines*each)
				}
				if err := mode.write(0, 0, 1); !errors.Is(err, fence.ErrStale) {
					t.Fatalf("%s: stale write through PgBouncer: %v, want a stale error", mode.name, err)
				}
			}
		})
	}
}
