package pglease_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/testenv"
	"github.com/fencekit/fencekit/lease"
	"github.com/fencekit/fencekit/lease/pglease"
	"github.com/fencekit/fencekit/migrations"
	"github.com/fencekit/fencekit/sqlfence"
)

// Leases and fenced writes in one PostgreSQL database: the lease's token
// guards the write, and a second worker is refused while the first holds
// the lease. The tables come from fencekit's migrations.
func ExampleNew() {
	tb, done := testenv.ExampleTB("ExampleNew")
	defer done()
	env := testenv.Postgres(tb) // a fresh schema of FENCEKIT_POSTGRES_URL
	ctx := context.Background()
	for _, f := range []string{"000001_fencekit_tokens.up.sql", "000002_fencekit_leases.up.sql", "000003_fencekit_leases_identity.up.sql"} {
		sql, _ := migrations.FS.ReadFile(f) // or migrations.Up(ctx, url)
		if _, err := env.Pool.Exec(ctx, string(sql)); err != nil {
			fmt.Println(err)
			return
		}
	}

	leases, err := pglease.New(env.Pool, nil)
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
	fmt.Println("token", l.Token())

	_, err = leases.Acquire(ctx, "invoices", 10*time.Second)
	fmt.Println("second worker refused:", errors.Is(err, lease.ErrNotAcquired))

	err = sqlfence.InTx(l.Context(), env.Pool, "invoices", l.Token(), func(tx pgx.Tx) error {
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
	fmt.Println("next token", l2.Token(), "greater:", l2.Token() > l.Token())
	if err := sqlfence.Fence(ctx, env.Pool, "invoices", l2.Token()); err != nil {
		fmt.Println(err)
	}
	// The first worker, paused past its TTL, writes late with token 1.
	fmt.Println("late write refused:", errors.Is(sqlfence.Fence(ctx, env.Pool, "invoices", l.Token()), fence.ErrStale))
	// Output:
	// token 1
	// second worker refused: true
	// fenced write: <nil>
	// next token 2 greater: true
	// late write refused: true
}
