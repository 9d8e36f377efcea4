package stdsql_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/migrations"
	"github.com/fencekit/fencekit/sqlfence/stdsql"
)

// exampleDB gives an example its own schema on the server named by
// FENCEKIT_POSTGRES_URL (default postgres://postgres@127.0.0.1:5432/test),
// with fencekit's migrations applied, and a *sql.DB on it through pgx's
// stdlib driver; cleanup drops the schema.
func exampleDB() (*sql.DB, func()) {
	ctx := context.Background()
	base := os.Getenv("FENCEKIT_POSTGRES_URL")
	if base == "" {
		base = "postgres://postgres@127.0.0.1:5432/test"
	}
	schema := "fk_example_" + strings.ToLower(rand.Text()[:12])
	u, err := url.Parse(base)
	if err != nil {
		panic(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	db, err := sql.Open("pgx", u.String())
	if err != nil {
		panic(err)
	}
	if _, err := db.ExecContext(ctx, `CREATE SCHEMA "`+schema+`"`); err != nil {
		panic(err)
	}
	if err := migrations.Up(ctx, u.String()); err != nil {
		panic(err)
	}
	return db, func() {
		_, _ = db.ExecContext(ctx, `DROP SCHEMA "`+schema+`" CASCADE`)
		db.Close()
	}
}

// InvoiceRepo is an existing repository method on database/sql.
type InvoiceRepo struct{ db *sql.DB }

// MarkPaid was
//
//	_, err := r.db.ExecContext(ctx, `UPDATE invoices SET status = 'paid' WHERE id = $1`, id)
//
// Fenced, it takes the caller's lease token, and the one changed line
// names the resource it guards.
func (r InvoiceRepo) MarkPaid(ctx context.Context, tok fence.Token, id int) error {
	_, err := stdsql.Exec(ctx, r.db, "invoices", tok, `UPDATE invoices SET status = 'paid' WHERE id = $1`, id)
	return err
}

// An existing repository method fenced: a worker holding token 34 marks
// invoice 1 paid; a paused former holder (33) wakes up and is refused.
func ExampleExec() {
	db, cleanup := exampleDB()
	defer cleanup()
	ctx := context.Background()
	_, _ = db.ExecContext(ctx, `CREATE TABLE invoices (id int PRIMARY KEY, status text)`)
	_, _ = db.ExecContext(ctx, `INSERT INTO invoices VALUES (1, 'open'), (2, 'open')`)

	repo := InvoiceRepo{db}
	fmt.Println("34 marks 1 paid:", repo.MarkPaid(ctx, 34, 1))
	err := repo.MarkPaid(ctx, 33, 2)
	fmt.Println("33 marks 2 paid:", err)
	fmt.Println("fenced out:", errors.Is(err, fence.ErrFencedOut))

	var status string
	_ = db.QueryRowContext(ctx, `SELECT status FROM invoices WHERE id = 2`).Scan(&status)
	fmt.Println("invoice 2:", status)
	// Output:
	// 34 marks 1 paid: <nil>
	// 33 marks 2 paid: fence: stale token 33 for "invoices": token 34 was already accepted
	// fenced out: true
	// invoice 2: open
}

// A read-modify-write in row mode: the new holder (token 8) reads the
// balance with Table.Claim, which raises the row's version to 8, so the
// old holder's (7) write in between is refused and no update is lost.
func ExampleTable_Claim() {
	db, cleanup := exampleDB()
	defer cleanup()
	ctx := context.Background()
	_, _ = db.ExecContext(ctx, `CREATE TABLE accounts (id int PRIMARY KEY, lock_version bigint NOT NULL DEFAULT 0, balance bigint)`)
	_, _ = db.ExecContext(ctx, `INSERT INTO accounts (id, balance) VALUES (1, 100)`)
	accounts, err := stdsql.NewTable("accounts", "id", "lock_version", "balance")
	if err != nil {
		panic(err)
	}

	var balance int64
	if err := accounts.Claim(ctx, db, 1, 8, &balance); err != nil { // the read
		panic(err)
	}
	fmt.Println("8 read:", balance)
	fmt.Println("7 writes 100+1:", accounts.Update(ctx, db, 1, 7, int64(101)))
	fmt.Println("8 writes balance+50:", accounts.Update(ctx, db, 1, 8, balance+50)) // the write

	_ = db.QueryRowContext(ctx, `SELECT balance FROM accounts WHERE id = 1`).Scan(&balance)
	fmt.Println("balance:", balance)
	// Output:
	// 8 read: 100
	// 7 writes 100+1: fence: stale token 7 for "accounts:1": token 8 was already accepted
	// 8 writes balance+50: <nil>
	// balance: 150
}

// InTx fences any number of statements: here a transfer between two rows.
func ExampleInTx() {
	db, cleanup := exampleDB()
	defer cleanup()
	ctx := context.Background()
	_, _ = db.ExecContext(ctx, `CREATE TABLE balances (name text PRIMARY KEY, amount bigint)`)
	_, _ = db.ExecContext(ctx, `INSERT INTO balances VALUES ('a', 10), ('b', 0)`)

	move := func(tok fence.Token, amount int) error {
		return stdsql.InTx(ctx, db, "balances", tok, func(tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, `UPDATE balances SET amount = amount - $1 WHERE name = 'a'`, amount); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, `UPDATE balances SET amount = amount + $1 WHERE name = 'b'`, amount)
			return err
		})
	}
	fmt.Println("5 moves 3:", move(5, 3))
	fmt.Println("4 moves 3:", move(4, 3))
	var b int
	_ = db.QueryRowContext(ctx, `SELECT amount FROM balances WHERE name = 'b'`).Scan(&b)
	fmt.Println("b:", b)
	// Output:
	// 5 moves 3: <nil>
	// 4 moves 3: fence: stale token 4 for "balances": token 5 was already accepted
	// b: 3
}

// A new lease holder (token 42) claims the resource before it writes
// anything: from then on the former holder (41) is refused, in a
// transaction of its own or anywhere else. On a *sql.Tx the claim lasts
// until that transaction ends.
func ExampleClaim() {
	db, cleanup := exampleDB()
	defer cleanup()
	ctx := context.Background()

	fmt.Println("new holder claims:", stdsql.Claim(ctx, db, "invoice-run", 42))
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		panic(err)
	}
	defer tx.Rollback()
	err = stdsql.Claim(ctx, tx, "invoice-run", 41)
	fmt.Println("old holder's transaction:", errors.Is(err, fence.ErrFencedOut))
	// Output:
	// new holder claims: <nil>
	// old holder's transaction: true
}
