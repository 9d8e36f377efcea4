package sqlfence_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fencekit/fencekit/sqlfence"
)

// TestServerErrorsNameTheCall: a server or context error that ends InTx,
// Exec or a Table call names the call, the resource and the token once,
// and keeps its chain (errors.As a *pgconn.PgError, errors.Is the
// context's error).
func TestServerErrorsNameTheCall(t *testing.T) {
	env := setup(t)
	ctx := testCtx(t)
	exec(t, env.Pool, `CREATE TABLE acct (id int PRIMARY KEY, balance bigint NOT NULL, lock_version bigint NOT NULL DEFAULT 0)`,
		`INSERT INTO acct (id, balance) VALUES (1, 0)`)
	tbl, err := sqlfence.NewTable("acct", "id", "lock_version", "balance")
	if err != nil {
		t.Fatal(err)
	}
	terminated := func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `SELECT pg_terminate_backend(pg_backend_pid())`)
		return err
	}
	slowInTx := func() error { // the deadline passes in fn's statement
		short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		return sqlfence.InTx(short, env.Pool, "acct-1", 7, func(tx pgx.Tx) error {
			_, err := tx.Exec(short, `SELECT pg_sleep(5)`)
			return err
		})
	}
	for _, tc := range []struct {
		name, want string
		call       func() error
		check      func(error) bool
	}{
		{"InTx, backend terminated", `sqlfence: InTx("acct-1") with token 7`,
			func() error { return sqlfence.InTx(ctx, env.Pool, "acct-1", 7, terminated) },
			func(err error) bool { var pe *pgconn.PgError; return errors.As(err, &pe) && pe.Code == "57P01" }},
		{"InTx, deadline in fn", `sqlfence: InTx("acct-1") with token 7`,
			slowInTx,
			func(err error) bool { return errors.Is(err, context.DeadlineExceeded) }},
		{"Exec, statement fails", `sqlfence: Exec "acct-1" with token 8`,
			func() error { _, err := sqlfence.Exec(ctx, env.Pool, "acct-1", 8, `SELECT 1/0`); return err },
			func(err error) bool { var pe *pgconn.PgError; return errors.As(err, &pe) && pe.Code == "22012" }},
		{"Update, cancelled", `sqlfence: update acct:1 with token 9`,
			func() error {
				c, cancel := context.WithCancel(ctx)
				cancel()
				return tbl.Update(c, env.Pool, 1, 9, 100)
			},
			func(err error) bool { return errors.Is(err, context.Canceled) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) || strings.Count(err.Error(), "sqlfence") != 1 || !tc.check(err) {
				t.Fatalf("error %q; want it to start %q, say sqlfence once and keep its chain", err, tc.want)
			}
		})
	}
}
