package sqlfence_test

import (
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/sqlfence"
)

// TestReadModifyWrite runs one interleaving in every mode: the old holder
// (token 10) has read balance 100 and paused; the new holder (token 20)
// reads the row; the old holder's write of 100+1000 arrives; the new holder
// writes what it read + 1. The old holder's write must be refused (a
// stale error), so that no accepted write is lost: the balance ends at
// 101 and the old holder knows its +1000 did not land. The plain read
// followed by Table.Update shows the loss this prevents.
func TestReadModifyWrite(t *testing.T) {
	env := setup(t)
	ctx := testCtx(t)
	exec(t, env.Pool, `CREATE TABLE accounts (id int PRIMARY KEY, lock_version bigint NOT NULL DEFAULT 0, balance bigint NOT NULL)`,
		`INSERT INTO accounts (id, balance) SELECT g, 100 FROM generate_series(1, 4) g`)
	accounts, err := sqlfence.NewTable("accounts", "id", "lock_version", "balance")
	if err != nil {
		t.Fatal(err)
	}
	guarded := accounts.WithGuard("accounts-guard")
	const old, newer fence.Token = 10, 20
	balance := func(id int) int64 {
		var b int64
		if err := env.Pool.QueryRow(ctx, `SELECT balance FROM accounts WHERE id = $1`, id).Scan(&b); err != nil {
			t.Fatal(err)
		}
		return b
	}

	for _, c := range []struct {
		name  string
		table *sqlfence.Table
		id    int
		res   string // what refuses the old holder
	}{{"row mode: Claim", accounts, 1, "accounts:1"}, {"WithGuard: Claim", guarded, 4, "accounts-guard"}} {
		t.Run(c.name, func(t *testing.T) {
			var read int64
			if err := c.table.Claim(ctx, env.Pool, c.id, newer, &read); err != nil || read != 100 {
				t.Fatalf("new holder's Claim: %d, %v; want 100, nil", read, err)
			}
			err := c.table.Update(ctx, env.Pool, c.id, old, int64(100+1000))
			wantStale(t, err, c.res, old, newer)
			if err := c.table.Update(ctx, env.Pool, c.id, newer, read+1); err != nil {
				t.Fatal(err)
			}
			if b := balance(c.id); b != 101 {
				t.Fatalf("balance %d, want 101", b)
			}
		})
	}

	t.Run("row mode: plain read loses the write", func(t *testing.T) {
		read := balance(2) // a plain SELECT
		if err := accounts.Update(ctx, env.Pool, 2, old, int64(100+1000)); err != nil {
			t.Fatalf("old holder's Update after a plain read: %v; this path accepts it", err)
		}
		if err := accounts.Update(ctx, env.Pool, 2, newer, read+1); err != nil {
			t.Fatal(err)
		}
		if b := balance(2); b != 101 {
			t.Fatalf("balance %d, want 101 (the accepted +1000 is lost)", b)
		}
	})

	t.Run("guard row: InTx", func(t *testing.T) {
		a := connect(t, env.URL)
		aDone := make(chan error, 1)
		err := sqlfence.InTx(ctx, env.Pool, "accounts-intx", newer, func(tx pgx.Tx) error {
			var read int64
			if err := tx.QueryRow(ctx, `SELECT balance FROM accounts WHERE id = 3`).Scan(&read); err != nil {
				return err
			}
			go func() {
				aDone <- sqlfence.InTx(ctx, a, "accounts-intx", old, func(atx pgx.Tx) error {
					_, err := atx.Exec(ctx, `UPDATE accounts SET balance = 1100 WHERE id = 3`)
					return err
				})
			}()
			waitForLockWait(t, env.Pool, a.PgConn().PID())
			_, err := tx.Exec(ctx, `UPDATE accounts SET balance = $1 WHERE id = 3`, read+1)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		wantStale(t, <-aDone, "accounts-intx", old, newer)
		if b := balance(3); b != 101 {
			t.Fatalf("balance %d, want 101", b)
		}
	})
}

// TestTableClaim: Claim reads every column in one statement, an equal
// token claims again, a stale Claim is a *fence.StaleError and changes
// nothing, and a missing row is ErrNoRow (each refusal a second statement,
// to tell why). Bad input: TestBadInput.
func TestTableClaim(t *testing.T) {
	env := setup(t)
	ctx := testCtx(t)
	exec(t, env.Pool, `CREATE TABLE accounts (id int PRIMARY KEY, lock_version bigint NOT NULL DEFAULT 0, balance bigint NOT NULL, owner text)`,
		`INSERT INTO accounts (id, balance, owner) VALUES (1, 7, 'ann')`)
	accounts, err := sqlfence.NewTable("accounts", "id", "lock_version", "balance", "owner")
	if err != nil {
		t.Fatal(err)
	}
	conn, rec := recordingConn(t, env.URL)
	statements := func(what string, want int) {
		t.Helper()
		if sqls := rec.take(); len(sqls) != want {
			t.Fatalf("%s sent %d statements %q, want %d", what, len(sqls), sqls, want)
		}
	}
	var bal int64
	var owner string
	if err := accounts.Claim(ctx, conn, 1, 5, &bal, &owner); err != nil || bal != 7 || owner != "ann" {
		t.Fatalf("Claim: %d %q %v", bal, owner, err)
	}
	statements("Claim", 1)
	if err := accounts.Claim(ctx, conn, 1, 5, &bal, &owner); err != nil {
		t.Fatalf("Claim with the same token: %v", err)
	}
	statements("Claim with the same token", 1)
	wantStale(t, accounts.Claim(ctx, conn, 1, 4, &bal, &owner), "accounts:1", 4, 5)
	statements("stale Claim", 2)
	if v, err := lockVersion(ctx, env.Pool, "accounts", 1); err != nil || v != 5 {
		t.Fatalf("version after a stale Claim: %v, %v; want 5", v, err)
	}
	if err := accounts.Claim(ctx, conn, 2, 5, &bal, &owner); !errors.Is(err, sqlfence.ErrNoRow) {
		t.Fatalf("Claim of a missing row: %v, want ErrNoRow", err)
	}
	statements("Claim of a missing row", 2)
}
