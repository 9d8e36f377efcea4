package pglease_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/lease"
	"github.com/fencekit/fencekit/lease/pglease"
	"github.com/fencekit/fencekit/migrations"
	"github.com/fencekit/fencekit/sqlfence"
)

// Leases and fenced writes in one PostgreSQL database: the lease's token
// guards the write, and a second worker is refused while the first holds
// the lease. The tables come from fencekit's migrations.
func ExampleNew() {
	ctx := context.Background()
	url, drop, err := exampleDatabase(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer drop()
	if err := migrations.Up(ctx, url); err != nil { // once, at start-up: fencekit_tokens, fencekit_leases
		fmt.Println(err)
		return
	}
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer pool.Close()

	leases, err := pglease.New(pool, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer leases.Close(ctx)
	l, err := leases.Acquire(ctx, "invoices", 10*time.Second) // one statement
	if err != nil {
		fmt.Println(err)
		return
	}
	// Tokens are max(last + 1, the server's time in µs): a big number.
	fmt.Println("token above 2^50:", l.Token() > 1<<50)

	_, err = leases.Acquire(ctx, "invoices", 10*time.Second)
	fmt.Println("second worker refused:", errors.Is(err, lease.ErrNotAcquired))

	err = sqlfence.InTx(l.Context(), pool, "invoices", l.Token(), func(tx pgx.Tx) error {
		return nil // the fenced work
	})
	fmt.Println("fenced write:", err)
	if err := l.Release(ctx); err != nil {
		fmt.Println(err)
	}
	l2, err := leases.Acquire(ctx, "invoices", 10*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("next token greater:", l2.Token() > l.Token())
	if err := sqlfence.Claim(ctx, pool, "invoices", l2.Token()); err != nil {
		fmt.Println(err)
	}
	// The first worker, paused past its TTL, writes late with its old token.
	fmt.Println("late write refused:", errors.Is(sqlfence.Claim(ctx, pool, "invoices", l.Token()), fence.ErrStale))
	// Output:
	// token above 2^50: true
	// second worker refused: true
	// fenced write: <nil>
	// next token greater: true
	// late write refused: true
}

// exampleDatabase returns the URL of the PostgreSQL at FENCEKIT_POSTGRES_URL
// (default postgres://postgres@127.0.0.1:5432/test) with a schema of the
// example's own as its search_path, and a function that drops the schema.
func exampleDatabase(ctx context.Context) (string, func(), error) {
	url := os.Getenv("FENCEKIT_POSTGRES_URL")
	if url == "" {
		url = "postgres://postgres@127.0.0.1:5432/test"
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return "", nil, err
	}
	schema := fmt.Sprintf("fk_example_%x", rand.Uint64())
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		conn.Close(ctx)
		return "", nil, err
	}
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	return url + sep + "search_path=" + schema, func() {
		conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE")
		conn.Close(ctx)
	}, nil
}
