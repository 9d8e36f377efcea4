package stdsql_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/lib/pq"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/sqlfence/stdsql"
)

// checkStale fails unless err is a *fence.StaleError for resource with
// presented and current tokens.
func checkStale(t *testing.T, err error, resource string, presented, current fence.Token) {
	t.Helper()
	var se *fence.StaleError
	if !errors.As(err, &se) || se.Resource != resource || se.Presented != presented || se.Current != current {
		t.Fatalf("got %v; want a stale error for %q, token %d, current %d", err, resource, presented, current)
	}
}

// TestClaimTokens: on a *sql.DB, *sql.Conn and *sql.Tx, a newer and an
// equal token are accepted and an older one refused with the current
// token; on a Tx the claim shows only once the Tx commits.
func TestClaimTokens(t *testing.T) {
	eachDriver(t, func(t *testing.T, db *sql.DB) {
		ctx := testCtx(t)
		conn, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		for _, h := range []struct {
			name string
			db   stdsql.Execer
		}{{"DB", db}, {"Conn", conn}} {
			r := "claim:" + h.name
			for _, tok := range []fence.Token{5, 5, 7} {
				if err := stdsql.Claim(ctx, h.db, r, tok); err != nil {
					t.Fatalf("%s: Claim(%d): %v", h.name, tok, err)
				}
			}
			checkStale(t, stdsql.Claim(ctx, h.db, r, 6), r, 6, 7)
			if cur, err := current(ctx, h.db, r); err != nil || cur != 7 {
				t.Fatalf("%s: Current = %d, %v; want 7", h.name, cur, err)
			}
		}
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := stdsql.Claim(ctx, tx, "claim:Tx", 9); err != nil {
			t.Fatal(err)
		}
		if cur, _ := current(ctx, db, "claim:Tx"); cur != 0 {
			t.Fatalf("uncommitted claim visible: %d", cur)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		checkStale(t, stdsql.Claim(ctx, db, "claim:Tx", 8), "claim:Tx", 8, 9)
	})
}

// TestClaimRefusedInTxFailsCommit: a Claim or a Table write refused
// inside the caller's transaction (a *sql.Tx, or a *sql.Conn after a raw
// BEGIN), whose error careless code ignores, must leave the transaction
// unable to commit, so that the old holder's writes in it cannot land
// after the newer's.
func TestClaimRefusedInTxFailsCommit(t *testing.T) {
	eachDriver(t, func(t *testing.T, db *sql.DB) {
		ctx := testCtx(t)
		exec(t, db, `CREATE TABLE data (k text PRIMARY KEY, v text NOT NULL)`,
			`CREATE TABLE acct (id text PRIMARY KEY, lock_version bigint NOT NULL DEFAULT 0, v text)`,
			`INSERT INTO acct VALUES ('a', 0, 'none'), ('newer', 20, 'B')`)
		accounts, err := stdsql.NewTable("acct", "id", "lock_version", "v")
		if err != nil {
			t.Fatal(err)
		}
		guarded := accounts.WithGuard("refused") // the guard refuses token 10
		if err := stdsql.Claim(ctx, db, "refused", 20); err != nil {
			t.Fatal(err)
		}
		stale := func(t *testing.T, err error) { checkStale(t, err, "refused", 10, 20) }
		for _, c := range []struct {
			name string
			call func(tx stdsql.Execer) error
			want func(*testing.T, error)
		}{
			{"Claim", func(tx stdsql.Execer) error { return stdsql.Claim(ctx, tx, "refused", 10) }, stale},
			{"guarded Table.Update", func(tx stdsql.Execer) error { return guarded.Update(ctx, tx, "a", 10, "A") }, stale},
			{"guarded Table.Claim", func(tx stdsql.Execer) error {
				var v string
				return guarded.Claim(ctx, tx, "a", 10, &v)
			}, stale},
			{"Table.Update refused by the row", func(tx stdsql.Execer) error { return accounts.Update(ctx, tx, "newer", 10, "A") },
				func(t *testing.T, err error) { checkStale(t, err, "acct:newer", 10, 20) }},
		} {
			for _, on := range []string{"*sql.Tx", "*sql.Conn after BEGIN", "type embedding *sql.Tx"} {
				t.Run(c.name+" on a "+on, func(t *testing.T) {
					exec(t, db, `DELETE FROM data`)
					var tx stdsql.Execer
					var commit func() error
					if on != "*sql.Conn after BEGIN" {
						sqlTx, err := db.BeginTx(ctx, nil)
						if err != nil {
							t.Fatal(err)
						}
						defer sqlTx.Rollback()
						tx, commit = sqlTx, sqlTx.Commit
						if on == "type embedding *sql.Tx" {
							tx = embeddingTx{sqlTx} // as sqlx.Tx
						}
					} else {
						conn, err := db.Conn(ctx)
						if err != nil {
							t.Fatal(err)
						}
						defer conn.Close()
						defer conn.ExecContext(ctx, "ROLLBACK")
						if _, err := conn.ExecContext(ctx, "BEGIN"); err != nil {
							t.Fatal(err)
						}
						tx = conn
						commit = func() error { _, err := conn.ExecContext(ctx, "COMMIT"); return err } // answers ROLLBACK, no error
					}
					_, _ = tx.ExecContext(ctx, `INSERT INTO data VALUES ('early', 'A early')`) // the old holder's write before the refusal
					c.want(t, c.call(tx))
					_, _ = tx.ExecContext(ctx, `INSERT INTO data VALUES ('late', 'A late')`) // ignored, as careless code does
					err := commit()
					if on != "*sql.Conn after BEGIN" && (errors.Is(err, fence.ErrStale) ||
						!errors.Is(err, pgx.ErrTxCommitRollback) && !errors.Is(err, pq.ErrInFailedTransaction)) {
						t.Errorf("Commit after a refused %s = %v; want the driver's error (pgx.ErrTxCommitRollback or pq.ErrInFailedTransaction, as the docs say), not a stale one", c.name, err)
					}
					if n := scalar(t, db, `SELECT count(*) FROM data`); n != 0 {
						t.Errorf("%d rows after the old holder's commit; want 0", n)
					}
				})
			}
		}
	})
}

// embeddingTx is a caller's type embedding a *sql.Tx, as sqlx.Tx does.
type embeddingTx struct{ *sql.Tx }

// TestInTxFnIgnoredRefusal: InTx whose fn ignored a refused Claim and
// returned nil must say so, not only relay the driver's 25P02 from its
// check before COMMIT, and commit nothing.
func TestInTxFnIgnoredRefusal(t *testing.T) {
	eachDriver(t, func(t *testing.T, db *sql.DB) {
		ctx := testCtx(t)
		exec(t, db, `CREATE TABLE data (k text PRIMARY KEY, v text NOT NULL)`)
		if err := stdsql.Claim(ctx, db, "refused", 20); err != nil {
			t.Fatal(err)
		}
		err := stdsql.InTx(ctx, db, "other", 10, func(tx *sql.Tx) error {
			_, _ = tx.ExecContext(ctx, `INSERT INTO data VALUES ('early', 'A early')`)
			_ = stdsql.Claim(ctx, tx, "refused", 10) // ignored, as careless code does
			return nil
		})
		if err == nil || !strings.Contains(err.Error(), "fn ignored a failed statement") {
			t.Errorf("InTx whose fn ignored a refused Claim = %v; want an error saying fn ignored a failed statement", err)
		}
		if n := scalar(t, db, `SELECT count(*) FROM data`); n != 0 {
			t.Errorf("%d rows after InTx; want 0", n)
		}
	})
}

// TestInTxTokens: InTx with a newer or equal token writes; with an older
// one it returns the stale error, fn never runs and nothing is written.
func TestInTxTokens(t *testing.T) {
	eachDriver(t, func(t *testing.T, db *sql.DB) {
		ctx := testCtx(t)
		exec(t, db, `CREATE TABLE reports (name text PRIMARY KEY, body text)`)
		save := func(tok fence.Token, body string) (ran bool, err error) {
			err = stdsql.InTx(ctx, db, "report", tok, func(tx *sql.Tx) error {
				ran = true
				_, err := tx.ExecContext(ctx, `INSERT INTO reports VALUES ('r', $1) ON CONFLICT (name) DO UPDATE SET body = EXCLUDED.body`, body)
				return err
			})
			return ran, err
		}
		for _, w := range []struct {
			tok  fence.Token
			body string
		}{{33, "A"}, {34, "B"}, {34, "B again"}} {
			if _, err := save(w.tok, w.body); err != nil {
				t.Fatalf("InTx(%d): %v", w.tok, err)
			}
		}
		ran, err := save(33, "A late")
		checkStale(t, err, "report", 33, 34)
		if ran {
			t.Fatal("fn ran for a stale token")
		}
		var body string
		if err := db.QueryRowContext(ctx, `SELECT body FROM reports`).Scan(&body); err != nil || body != "B again" {
			t.Fatalf("body = %q, %v; want B again", body, err)
		}
		// fn's error comes back after the rollback, wrapped once.
		myErr := errors.New("my error")
		err = stdsql.InTx(ctx, db, "report", 35, func(tx *sql.Tx) error {
			_, _ = tx.ExecContext(ctx, `UPDATE reports SET body = 'rolled back'`)
			return myErr
		})
		if !errors.Is(err, myErr) || !strings.HasPrefix(err.Error(), `stdsql: InTx("report") with token 35: `) {
			t.Fatalf("fn's error came back as %v", err)
		}
		if cur, _ := current(ctx, db, "report"); cur != 34 {
			t.Fatalf("a failed InTx left the guard at %d, want 34", cur)
		}
	})
}

// TestInTxFnEndsTransaction: when fn ends InTx's transaction (COMMIT,
// COMMIT then BEGIN, tx.Commit, tx.Rollback), InTx says so and commits
// nothing more: what fn wrote in a transaction it began is rolled back.
func TestInTxFnEndsTransaction(t *testing.T) {
	eachDriver(t, func(t *testing.T, db *sql.DB) {
		ctx := testCtx(t)
		exec(t, db, `CREATE TABLE notes (id serial PRIMARY KEY, body text)`)
		for i, end := range []func(tx *sql.Tx) error{
			func(tx *sql.Tx) error { _, err := tx.ExecContext(ctx, `COMMIT`); return err },
			func(tx *sql.Tx) error {
				_, err := tx.ExecContext(ctx, `COMMIT; BEGIN; INSERT INTO notes (body) VALUES ('after')`)
				return err
			},
			func(tx *sql.Tx) error { return tx.Commit() },
			func(tx *sql.Tx) error { return tx.Rollback() },
		} {
			err := stdsql.InTx(ctx, db, "notes", fence.Token(10+i), end)
			if err == nil || !strings.Contains(err.Error(), "fn ended the transaction") {
				t.Fatalf("ending %d: InTx = %v; want fn ended the transaction", i, err)
			}
		}
		if n := scalar(t, db, `SELECT count(*) FROM notes WHERE body = 'after'`); n != 0 {
			t.Fatalf("InTx committed %d rows fn wrote after ending the transaction", n)
		}
	})
}

// TestInTxContextEndsInFn: when ctx ends while fn runs (a lease lost),
// database/sql rolls the transaction back; InTx returns an error wrapping
// ctx's cause, not "fn ended the transaction", and nothing is written.
func TestInTxContextEndsInFn(t *testing.T) {
	eachDriver(t, func(t *testing.T, db *sql.DB) {
		exec(t, db, `CREATE TABLE notes (id serial PRIMARY KEY, body text)`)
		lost := errors.New("lease lost")
		ctx, cancel := context.WithCancelCause(testCtx(t))
		err := stdsql.InTx(ctx, db, "notes", 3, func(tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, `INSERT INTO notes (body) VALUES ('cut off')`); err != nil {
				return err
			}
			cancel(lost)
			// Wait until database/sql has rolled the transaction back.
			for i := 0; i < 500; i++ {
				if _, err := tx.ExecContext(context.Background(), `SELECT 1`); errors.Is(err, sql.ErrTxDone) {
					return nil
				}
				time.Sleep(10 * time.Millisecond)
			}
			return errors.New("database/sql did not roll back the transaction of an ended ctx in 5 s")
		})
		if !errors.Is(err, lost) || strings.Contains(err.Error(), "fn ended") {
			t.Fatalf("InTx whose ctx ended in fn = %v; want an error wrapping the cause", err)
		}
		if n := scalar(t, db, `SELECT count(*) FROM notes`); n != 0 {
			t.Fatalf("%d rows written by a transaction whose ctx ended", n)
		}
	})
}

// TestInTxKilledConnection: a connection terminated by the server while fn
// runs (pg_terminate_backend) makes InTx return the driver's error wrapped
// with InTx, the resource and the token; nothing is written.
func TestInTxKilledConnection(t *testing.T) {
	eachDriver(t, func(t *testing.T, db *sql.DB) {
		ctx := testCtx(t)
		exec(t, db, `CREATE TABLE notes (id serial PRIMARY KEY, body text)`)
		err := stdsql.InTx(ctx, db, "killed", 3, func(tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, `INSERT INTO notes (body) VALUES ('lost')`); err != nil {
				return err
			}
			var pid int
			if err := tx.QueryRowContext(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
				return err
			}
			if _, err := db.ExecContext(ctx, `SELECT pg_terminate_backend($1)`, pid); err != nil {
				t.Errorf("terminate: %v", err)
			}
			_, err := tx.ExecContext(ctx, `INSERT INTO notes (body) VALUES ('lost too')`)
			return err
		})
		if err == nil || !strings.HasPrefix(err.Error(), `stdsql: InTx("killed") with token 3: `) {
			t.Fatalf("InTx on a killed connection = %v; want an error naming InTx, resource and token", err)
		}
		t.Log(err)
		if n := scalar(t, db, `SELECT count(*) FROM notes`); n != 0 {
			t.Fatalf("%d rows of a killed transaction were written", n)
		}
		if cur, _ := current(ctx, db, "killed"); cur != 0 {
			t.Fatalf("the killed transaction's claim was committed: %d", cur)
		}
	})
}

// TestExec: Exec with a newer or equal token runs the statement and
// returns its result; with an older one it refuses and runs nothing; a
// failing statement undoes the claim; a statement that commits part way is
// reported, never nil.
func TestExec(t *testing.T) {
	eachDriver(t, func(t *testing.T, db *sql.DB) {
		ctx := testCtx(t)
		exec(t, db, `CREATE TABLE jobs (id int PRIMARY KEY, state text)`, `INSERT INTO jobs VALUES (1, 'new'), (2, 'new')`)
		for _, tok := range []fence.Token{4, 4, 6} {
			res, err := stdsql.Exec(ctx, db, "jobs", tok, `UPDATE jobs SET state = $1 WHERE id <= $2`, "done", 2)
			if err != nil {
				t.Fatalf("Exec(%d): %v", tok, err)
			}
			if n, err := res.RowsAffected(); n != 2 || err != nil {
				t.Fatalf("RowsAffected = %d, %v; want the statement's 2", n, err)
			}
		}
		_, err := stdsql.Exec(ctx, db, "jobs", 5, `UPDATE jobs SET state = 'stale'`)
		checkStale(t, err, "jobs", 5, 6)
		if n := scalar(t, db, `SELECT count(*) FROM jobs WHERE state = 'stale'`); n != 0 {
			t.Fatal("a stale Exec's statement ran")
		}
		if _, err := stdsql.Exec(ctx, db, "jobs", 9, `UPDATE jobs SET id = 'x'`); err == nil || !strings.HasPrefix(err.Error(), `stdsql: Exec "jobs" with token 9: `) {
			t.Fatalf("failing statement: %v", err)
		}
		if cur, _ := current(ctx, db, "jobs"); cur != 6 {
			t.Fatalf("a failed statement left the guard at %d, want 6", cur)
		}
		_, err = stdsql.Exec(ctx, db, "jobs", 10, `UPDATE jobs SET state = 'a'; COMMIT; UPDATE jobs SET state = 'after commit'`)
		if err == nil || !strings.Contains(err.Error(), "ended the transaction") {
			t.Fatalf("statement with a COMMIT: %v", err)
		}
		// The connection went back to the pool clean: a plain statement runs
		// in autocommit.
		if _, err := stdsql.Exec(ctx, db, "jobs", 11, `UPDATE jobs SET state = 'last'`); err != nil {
			t.Fatal(err)
		}
	})
}
