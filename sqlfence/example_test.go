package sqlfence_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/migrations"
	"github.com/fencekit/fencekit/sqlfence"
)

// exampleDB gives an example its own schema on the server named by
// FENCEKIT_POSTGRES_URL (default postgres://postgres@127.0.0.1:5432/test):
// the URL with search_path set to it, a pool, and a cleanup that drops it.
func exampleDB() (string, *pgxpool.Pool, func()) {
	ctx := context.Background()
	base := os.Getenv("FENCEKIT_POSTGRES_URL")
	if base == "" {
		base = "postgres://postgres@127.0.0.1:5432/test"
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema := "fk_example_" + hex.EncodeToString(b)
	u, err := url.Parse(base)
	if err != nil {
		panic(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	pool, err := pgxpool.New(ctx, u.String())
	if err != nil {
		panic(err)
	}
	if _, err := pool.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()); err != nil {
		panic(err)
	}
	return u.String(), pool, func() {
		_, _ = pool.Exec(ctx, "DROP SCHEMA "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
		pool.Close()
	}
}

// Kleppmann's scenario against PostgreSQL: A holds token 33, pauses, its
// lease expires, B gets 34 and writes; A's late write is refused and none of
// it is applied.
func ExampleInTx() {
	dbURL, pool, cleanup := exampleDB()
	defer cleanup()
	ctx := context.Background()
	if err := migrations.Up(ctx, dbURL); err != nil {
		panic(err)
	}
	_, _ = pool.Exec(ctx, "CREATE TABLE reports (name text PRIMARY KEY, body text)")

	save := func(tok fence.Token, body string) error {
		return sqlfence.InTx(ctx, pool, "report:daily", tok, func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, `INSERT INTO reports VALUES ('daily', $1)
				ON CONFLICT (name) DO UPDATE SET body = EXCLUDED.body`, body)
			return err
		})
	}
	fmt.Println("A (33):", save(33, "A's report"))
	fmt.Println("B (34):", save(34, "B's report"))
	err := save(33, "A's late report")
	fmt.Println("A (33) again:", err)

	var se *fence.StaleError
	if errors.As(err, &se) {
		fmt.Println("current token:", se.Current)
	}
	var body string
	_ = pool.QueryRow(ctx, "SELECT body FROM reports WHERE name = 'daily'").Scan(&body)
	fmt.Println("stored:", body)
	// Output:
	// A (33): <nil>
	// B (34): <nil>
	// A (33) again: fence: stale token 33 for "report:daily": token 34 was already accepted
	// current token: 34
	// stored: B's report
}

// Claim fences a transaction the caller begins and commits itself.
func ExampleClaim_transaction() {
	dbURL, pool, cleanup := exampleDB()
	defer cleanup()
	ctx := context.Background()
	if err := migrations.Up(ctx, dbURL); err != nil {
		panic(err)
	}
	_, _ = pool.Exec(ctx, "CREATE TABLE events (what text)")

	tx, err := pool.Begin(ctx)
	if err != nil {
		panic(err)
	}
	defer tx.Rollback(ctx)
	if err := sqlfence.Claim(ctx, tx, "queue:emails", 7); err != nil {
		fmt.Println("not sending:", err)
		return
	}
	_, _ = tx.Exec(ctx, "INSERT INTO events VALUES ('sent batch 1')")
	fmt.Println("commit:", tx.Commit(ctx))
	var tok int64
	_ = pool.QueryRow(ctx, "SELECT token FROM fencekit_tokens WHERE resource = 'queue:emails'").Scan(&tok)
	fmt.Println("guard row token:", tok)
	// Output:
	// commit: <nil>
	// guard row token: 7
}

// A new lease holder fences the resource before doing anything else, so the
// previous holder is refused from then on even if the new one writes later.
func ExampleClaim() {
	dbURL, pool, cleanup := exampleDB()
	defer cleanup()
	ctx := context.Background()
	if err := migrations.Up(ctx, dbURL); err != nil {
		panic(err)
	}
	fmt.Println("old holder (41):", sqlfence.Claim(ctx, pool, "invoice-run", 41))
	fmt.Println("new holder (42):", sqlfence.Claim(ctx, pool, "invoice-run", 42))
	err := sqlfence.InTx(ctx, pool, "invoice-run", 41, func(pgx.Tx) error {
		panic("not reached: a stale transaction runs nothing")
	})
	fmt.Println("old holder writes:", errors.Is(err, fence.ErrStale))
	// Output:
	// old holder (41): <nil>
	// new holder (42): <nil>
	// old holder writes: true
}

// Exec fences one statement in one round trip: the claim and the statement
// travel together, and a refused claim runs nothing.
func ExampleExec() {
	dbURL, pool, cleanup := exampleDB()
	defer cleanup()
	ctx := context.Background()
	if err := migrations.Up(ctx, dbURL); err != nil {
		panic(err)
	}
	_, _ = pool.Exec(ctx, "CREATE TABLE jobs (id int PRIMARY KEY, state text)")
	_, _ = pool.Exec(ctx, "INSERT INTO jobs VALUES (1, 'running')")

	tag, err := sqlfence.Exec(ctx, pool, "jobs", 34, "UPDATE jobs SET state = 'done' WHERE id = $1", 1)
	fmt.Println("34:", tag.RowsAffected(), err)
	_, err = sqlfence.Exec(ctx, pool, "jobs", 33, "UPDATE jobs SET state = 'failed' WHERE id = $1", 1)
	fmt.Println("33:", err)
	var state string
	_ = pool.QueryRow(ctx, "SELECT state FROM jobs WHERE id = 1").Scan(&state)
	fmt.Println("job 1:", state)
	// Output:
	// 34: 1 <nil>
	// 33: fence: stale token 33 for "jobs": token 34 was already accepted
	// job 1: done
}

// Row mode: the user's table carries lock_version; one statement both
// checks the token and writes.
func ExampleTable_Update() {
	_, pool, cleanup := exampleDB()
	defer cleanup()
	ctx := context.Background()
	createAccounts(ctx, pool)

	accounts, err := sqlfence.NewTable("accounts", "id", "lock_version", "balance")
	if err != nil {
		panic(err)
	}
	fmt.Println("token 34:", accounts.Update(ctx, pool, 1, 34, 150))
	fmt.Println("token 33:", accounts.Update(ctx, pool, 1, 33, 999))
	fmt.Println("account 2:", accounts.Update(ctx, pool, 2, 34, 10))
	fmt.Println("insert 2:", accounts.Insert(ctx, pool, 2, 34, 10))
	var bal int
	_ = pool.QueryRow(ctx, "SELECT balance FROM accounts WHERE id = 1").Scan(&bal)
	fmt.Println("balance:", bal)
	var version int64
	_ = pool.QueryRow(ctx, "SELECT lock_version FROM accounts WHERE id = 1").Scan(&version)
	fmt.Println("lock_version:", version)
	// Output:
	// token 34: <nil>
	// token 33: fence: stale token 33 for "accounts:1": token 34 was already accepted
	// account 2: sqlfence: no such row: accounts:2
	// insert 2: <nil>
	// balance: 150
	// lock_version: 34
}

// createAccounts creates the examples' table accounts(id, balance,
// lock_version) with account 1 holding 100.
func createAccounts(ctx context.Context, pool *pgxpool.Pool) {
	_, _ = pool.Exec(ctx, `CREATE TABLE accounts (
		id int PRIMARY KEY, balance int NOT NULL, lock_version bigint NOT NULL DEFAULT 0)`)
	_, _ = pool.Exec(ctx, "INSERT INTO accounts (id, balance) VALUES (1, 100)")
}

// A read-modify-write in row mode: Claim reads the balance and raises the
// row's version to the new holder's token, so the old holder's write that
// arrives before the new holder's is refused instead of being overwritten.
func ExampleTable_Claim() {
	_, pool, cleanup := exampleDB()
	defer cleanup()
	ctx := context.Background()
	createAccounts(ctx, pool)

	accounts, err := sqlfence.NewTable("accounts", "id", "lock_version", "balance")
	if err != nil {
		panic(err)
	}
	var bal int
	fmt.Println("token 34 reads:", accounts.Claim(ctx, pool, 1, 34, &bal), bal)
	fmt.Println("token 33 writes:", accounts.Update(ctx, pool, 1, 33, 1100))
	fmt.Println("token 34 writes:", accounts.Update(ctx, pool, 1, 34, bal+1))
	// Output:
	// token 34 reads: <nil> 100
	// token 33 writes: fence: stale token 33 for "accounts:1": token 34 was already accepted
	// token 34 writes: <nil>
}

// The rows of invoices are written both by Table calls and inside
// InTx("invoices"): binding the table to that guard makes the two fence
// each other, in both directions.
func ExampleTable_WithGuard() {
	dbURL, pool, cleanup := exampleDB()
	defer cleanup()
	ctx := context.Background()
	if err := migrations.Up(ctx, dbURL); err != nil {
		panic(err)
	}
	_, _ = pool.Exec(ctx, `CREATE TABLE invoices (
		id int PRIMARY KEY, total int NOT NULL, lock_version bigint NOT NULL DEFAULT 0)`)
	_, _ = pool.Exec(ctx, "INSERT INTO invoices (id, total) VALUES (1, 0)")
	table, err := sqlfence.NewTable("invoices", "id", "lock_version", "total")
	if err != nil {
		panic(err)
	}
	invoices := table.WithGuard("invoices")

	// The holder of token 34 writes in a transaction...
	err = sqlfence.InTx(ctx, pool, "invoices", 34, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, "UPDATE invoices SET total = 340 WHERE id = 1")
		return err
	})
	fmt.Println("InTx 34:", err)
	// ...so the late holder of 33 is refused through the table,
	fmt.Println("Update 33:", invoices.Update(ctx, pool, 1, 33, 330))
	// and the other way round.
	fmt.Println("Update 35:", invoices.Update(ctx, pool, 1, 35, 350))
	err = sqlfence.InTx(ctx, pool, "invoices", 34, func(pgx.Tx) error { return nil })
	fmt.Println("InTx 34 again:", errors.Is(err, fence.ErrFencedOut))
	// Output:
	// InTx 34: <nil>
	// Update 33: fence: stale token 33 for "invoices": token 34 was already accepted
	// Update 35: <nil>
	// InTx 34 again: true
}

func ExampleNewTable() {
	_, err := sqlfence.NewTable("accounts; DROP TABLE accounts", "id", "lock_version")
	fmt.Println(err)
	_, err = sqlfence.NewTable("billing.accounts", "id", "lock_version", "balance", "updated_by")
	fmt.Println(err)
	// Output:
	// sqlfence: table name "accounts; DROP TABLE accounts": byte 8 is ';'; only ASCII letters, digits and _ are allowed
	// <nil>
}

// A Guard with SERIALIZABLE transactions re-runs the whole fenced
// transaction after a serialization failure, a bounded number of times.
func ExampleNew() {
	dbURL, pool, cleanup := exampleDB()
	defer cleanup()
	ctx := context.Background()
	if err := migrations.Up(ctx, dbURL); err != nil {
		panic(err)
	}
	g, err := sqlfence.New(&sqlfence.Options{IsoLevel: pgx.Serializable, MaxRetries: 3})
	if err != nil {
		panic(err)
	}
	err = g.InTx(ctx, pool, "ledger", 5, func(tx pgx.Tx) error {
		var level string
		err := tx.QueryRow(ctx, "SHOW transaction_isolation").Scan(&level)
		fmt.Println("isolation:", level)
		return err
	})
	fmt.Println(err)
	// Output:
	// isolation: serializable
	// <nil>
}

// Upsert creates the row or updates it, fenced, in one statement.
func ExampleTable_Upsert() {
	_, pool, cleanup := exampleDB()
	defer cleanup()
	ctx := context.Background()
	_, _ = pool.Exec(ctx, `CREATE TABLE settings (
		name text PRIMARY KEY, value text, lock_version bigint NOT NULL DEFAULT 0)`)
	settings, err := sqlfence.NewTable("settings", "name", "lock_version", "value")
	if err != nil {
		panic(err)
	}
	fmt.Println(settings.Upsert(ctx, pool, "mode", 7, "fast"))  // inserted
	fmt.Println(settings.Upsert(ctx, pool, "mode", 8, "safe"))  // updated
	fmt.Println(settings.Upsert(ctx, pool, "mode", 7, "fast!")) // stale
	// Output:
	// <nil>
	// <nil>
	// fence: stale token 7 for "settings:mode": token 8 was already accepted
}
