package sqlfence_test

import (
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencekit/fencekit/sqlfence"
)

// guardRow is a guard row's physical address and updated_at: a claim that
// writes a new row version moves the first.
func guardRow(t *testing.T, db sqlfence.Querier, resource string) (ctid string, updated time.Time) {
	t.Helper()
	if err := db.QueryRow(testCtx(t), `SELECT ctid::text, updated_at FROM fencekit_tokens WHERE resource = $1`,
		resource).Scan(&ctid, &updated); err != nil {
		t.Fatal(err)
	}
	return ctid, updated
}

// InTx with the token the guard row already holds (a holder writing again)
// locks the row and writes no new version of it when the claim is a
// prepared statement (pgx's default query mode). In both ways the claim is
// sent (also as text, with default_query_exec_mode=exec as through
// PgBouncer), and for Claim, updated_at moves only when the token does.
func TestInTxSameTokenWritesNoRowVersion(t *testing.T) {
	env := setup(t)
	ctx := testCtx(t)
	exec(t, env.Pool, `CREATE TABLE data (k text PRIMARY KEY, v text NOT NULL)`)
	textPool, err := pgxpool.New(ctx, env.URL+"&default_query_exec_mode=exec")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(textPool.Close)
	var calls int
	for name, pool := range map[string]*pgxpool.Pool{"prepared": env.Pool, "text": textPool} {
		t.Run(name, func(t *testing.T) {
			r := "same-" + name
			if err := sqlfence.InTx(ctx, pool, r, 5, writeData(r, "first", &calls)); err != nil {
				t.Fatal(err)
			}
			ctid, updated := guardRow(t, env.Pool, r)
			for i := range 3 {
				if err := sqlfence.InTx(ctx, pool, r, 5, writeData(r, "again", &calls)); err != nil {
					t.Fatalf("write %d with the same token: %v", i+2, err)
				}
			}
			c, u := guardRow(t, env.Pool, r)
			if !u.Equal(updated) {
				t.Fatalf("3 writes with the same token moved updated_at from %v to %v", updated, u)
			}
			if name == "prepared" && c != ctid {
				t.Fatalf("after 3 writes with the same token the guard row moved from %s to %s: want no new row version", ctid, c)
			}
			if err := sqlfence.Claim(ctx, pool, r, 5); err != nil {
				t.Fatal(err)
			}
			if _, u := guardRow(t, env.Pool, r); !u.Equal(updated) {
				t.Fatalf("Claim with the same token moved updated_at from %v to %v", updated, u)
			}
			if err := sqlfence.InTx(ctx, pool, r, 6, writeData(r, "newer", &calls)); err != nil {
				t.Fatal(err)
			}
			if _, u := guardRow(t, env.Pool, r); !u.After(updated) {
				t.Fatalf("updated_at %v after a newer token, want later than %v", u, updated)
			}
			if cur, err := current(ctx, env.Pool, r); err != nil || cur != 6 {
				t.Fatalf("Current = %d, %v; want 6", cur, err)
			}
		})
	}
}

// A holder presenting the token the guard row holds while a newer holder's
// claim of the row is open waits on the row lock, then fails with the newer
// token: READ COMMITTED re-checks the token against the newer row version,
// REPEATABLE READ and SERIALIZABLE fail with 40001 and the retry sees it.
// Its function never writes.
func TestSameTokenWaitsForNewerThenStale(t *testing.T) {
	for _, level := range []pgx.TxIsoLevel{"", pgx.RepeatableRead, pgx.Serializable} {
		name := string(level)
		if name == "" {
			name = "server default"
		}
		t.Run(name, func(t *testing.T) {
			env := setup(t)
			ctx := testCtx(t)
			exec(t, env.Pool, `CREATE TABLE log (id bigserial PRIMARY KEY, tok bigint, step text)`)
			if err := sqlfence.Claim(ctx, env.Pool, "r", 10); err != nil {
				t.Fatal(err)
			}
			g, err := sqlfence.New(&sqlfence.Options{IsoLevel: level})
			if err != nil {
				t.Fatal(err)
			}
			b := startHolder(t, env.URL, "r", 11, true)
			<-b.claimed
			conn := connect(t, env.URL)
			done := make(chan error, 1)
			go func() {
				done <- g.InTx(ctx, conn, "r", 10, func(tx pgx.Tx) error {
					_, err := tx.Exec(ctx, `INSERT INTO log (tok, step) VALUES (10, 'first')`)
					return err
				})
			}()
			waitForLockWait(t, env.Pool, conn.PgConn().PID())
			close(b.release)
			if err := <-b.done; err != nil {
				t.Fatalf("newer holder: %v", err)
			}
			wantStale(t, <-done, "r", 10, 11)
			if got, want := logRows(t, env.Pool), []string{"11:first", "11:second"}; !slices.Equal(got, want) {
				t.Fatalf("log = %v, want %v", got, want)
			}
		})
	}
}
