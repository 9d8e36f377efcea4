package stdsql_test

import (
	"database/sql"
	"errors"
	"testing"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/sqlfence/stdsql"
)

// TestTableWrites: Update, Insert and Upsert accept newer and equal
// tokens, refuse an older one with the row's version (nothing changed),
// and tell a missing row (ErrNoRow) and an existing one (ErrRowExists)
// from a stale write; WithGuard also refuses a token older than the guard.
func TestTableWrites(t *testing.T) {
	eachDriver(t, func(t *testing.T, db *sql.DB) {
		ctx := testCtx(t)
		exec(t, db, `CREATE TABLE accounts (id int PRIMARY KEY, lock_version bigint NOT NULL DEFAULT 0, balance bigint)`)
		acc, err := stdsql.NewTable("accounts", "id", "lock_version", "balance")
		if err != nil {
			t.Fatal(err)
		}
		balance := func() int64 { return scalar(t, db, `SELECT balance FROM accounts WHERE id = 1`) }
		if err := acc.Insert(ctx, db, 1, 5, 100); err != nil {
			t.Fatal(err)
		}
		if err := acc.Insert(ctx, db, 1, 6, 1); !errors.Is(err, stdsql.ErrRowExists) {
			t.Fatalf("Insert of an existing row: %v", err)
		}
		checkStale(t, acc.Insert(ctx, db, 1, 4, 1), "accounts:1", 4, 5)
		for _, tok := range []fence.Token{5, 7} {
			if err := acc.Update(ctx, db, 1, tok, int64(tok)); err != nil {
				t.Fatalf("Update(%d): %v", tok, err)
			}
		}
		checkStale(t, acc.Update(ctx, db, 1, 6, 666), "accounts:1", 6, 7)
		checkStale(t, acc.Upsert(ctx, db, 1, 6, 666), "accounts:1", 6, 7)
		if b := balance(); b != 7 {
			t.Fatalf("balance %d after stale writes, want 7", b)
		}
		if err := acc.Update(ctx, db, 2, 9, 1); !errors.Is(err, stdsql.ErrNoRow) {
			t.Fatalf("Update of a missing row: %v", err)
		}
		if err := acc.Upsert(ctx, db, 2, 9, 1); err != nil {
			t.Fatal(err)
		}
		var v int64
		if err := db.QueryRowContext(ctx, `SELECT lock_version FROM accounts WHERE id = 2`).Scan(&v); v != 9 || err != nil {
			t.Fatalf("lock_version = %d, %v; want 9", v, err)
		}
		guarded := acc.WithGuard("accounts")
		if err := stdsql.Claim(ctx, db, "accounts", 20); err != nil {
			t.Fatal(err)
		}
		checkStale(t, guarded.Update(ctx, db, 1, 10, 10), "accounts", 10, 20)
		if err := guarded.Update(ctx, db, 1, 21, 21); err != nil {
			t.Fatal(err)
		}
		if b := balance(); b != 21 {
			t.Fatalf("balance %d, want 21", b)
		}
	})
}

// TestTableClaimRacesOlderHolder: a read-modify-write that reads with
// Table.Claim shuts out the older holder from the read on: its Update in
// between is refused and the new holder's write is the one that stays.
func TestTableClaimRacesOlderHolder(t *testing.T) {
	eachDriver(t, func(t *testing.T, db *sql.DB) {
		ctx := testCtx(t)
		exec(t, db, `CREATE TABLE accounts (id int PRIMARY KEY, lock_version bigint NOT NULL DEFAULT 0, balance bigint)`,
			`INSERT INTO accounts (id, balance) VALUES (1, 100)`)
		acc, err := stdsql.NewTable("accounts", "id", "lock_version", "balance")
		if err != nil {
			t.Fatal(err)
		}
		var bal int64
		if err := acc.Claim(ctx, db, 1, 2, &bal); err != nil || bal != 100 {
			t.Fatalf("Claim = %d, %v", bal, err)
		}
		// The older holder (token 1), paused until now, writes its own result.
		checkStale(t, acc.Update(ctx, db, 1, 1, int64(100+1)), "accounts:1", 1, 2)
		if err := acc.Update(ctx, db, 1, 2, bal+10); err != nil {
			t.Fatal(err)
		}
		if b := scalar(t, db, `SELECT balance FROM accounts WHERE id = 1`); b != 110 {
			t.Fatalf("balance %d, want 110", b)
		}
		checkStale(t, acc.Claim(ctx, db, 1, 1, &bal), "accounts:1", 1, 2)
		if err := acc.Claim(ctx, db, 3, 2, &bal); !errors.Is(err, stdsql.ErrNoRow) {
			t.Fatalf("Claim of a missing row: %v", err)
		}
	})
}

// TestNoRowKeepsTransaction: ErrNoRow, unlike a refusal, leaves the
// caller's transaction usable (ErrNoRow's documentation): its earlier
// write commits, and so does a guarded table's claim.
func TestNoRowKeepsTransaction(t *testing.T) {
	eachDriver(t, func(t *testing.T, db *sql.DB) {
		ctx := testCtx(t)
		exec(t, db, `CREATE TABLE acct (id int PRIMARY KEY, lock_version bigint NOT NULL DEFAULT 0, v int)`, `CREATE TABLE side (x int)`)
		acc, err := stdsql.NewTable("acct", "id", "lock_version", "v")
		if err != nil {
			t.Fatal(err)
		}
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		if _, err := tx.ExecContext(ctx, `INSERT INTO side VALUES (1)`); err != nil {
			t.Fatal(err)
		}
		var v int
		for name, err := range map[string]error{
			"Update":         acc.Update(ctx, tx, 1, 5, 0),
			"Claim":          acc.Claim(ctx, tx, 1, 5, &v),
			"guarded Update": acc.WithGuard("g").Update(ctx, tx, 1, 7, 0),
		} {
			if !errors.Is(err, stdsql.ErrNoRow) {
				t.Fatalf("%s of a missing row: %v, want ErrNoRow", name, err)
			}
		}
		if err := tx.Commit(); err != nil {
			t.Fatalf("Commit after ErrNoRow: %v; want nil (the transaction stays usable)", err)
		}
		if n := scalar(t, db, `SELECT count(*) FROM side`); n != 1 {
			t.Errorf("%d rows of the write before ErrNoRow, want 1", n)
		}
		if g := scalar(t, db, `SELECT token FROM fencekit_tokens WHERE resource = 'g'`); g != 7 {
			t.Errorf("guard token %d after the commit, want 7 (the claim commits with the transaction)", g)
		}
	})
}
