package stdsql_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/valid"
	"github.com/fencekit/fencekit/sqlfence/stdsql"
)

// TestBadInput: every call refuses bad input before sending anything, with
// one error matching fence.ErrInvalid that names the problem once, and
// nothing changes in the database.
func TestBadInput(t *testing.T) {
	eachDriver(t, func(t *testing.T, db *sql.DB) {
		ctx := testCtx(t)
		exec(t, db, `CREATE TABLE accounts (id int PRIMARY KEY, lock_version bigint NOT NULL DEFAULT 0, balance bigint)`,
			`INSERT INTO accounts (id, balance) VALUES (1, 100)`)
		acc, err := stdsql.NewTable("accounts", "id", "lock_version", "balance")
		if err != nil {
			t.Fatal(err)
		}
		fn := func(*sql.Tx) error { return nil }
		var nilDB *sql.DB
		var nilTable *stdsql.Table
		cases := []struct {
			name, want string
			err        error
		}{
			{"zero token", "token is zero", stdsql.Claim(ctx, db, "r", 0)},
			{"token above bigint", "above", stdsql.InTx(ctx, db, "r", valid.MaxToken+1, fn)},
			{"empty resource", "resource", stdsql.Claim(ctx, db, "", 1)},
			{"control character", "resource", func() error { _, err := stdsql.Exec(ctx, db, "a\x00b", 1, "SELECT 1"); return err }()},
			{"nil db", "nil database handle", stdsql.Claim(ctx, nilDB, "r", 1)},
			{"nil fn", "nil fn", stdsql.InTx(ctx, db, "r", 1, nil)},
			{"empty query", "empty query", func() error { _, err := stdsql.Exec(ctx, db, "r", 1, ""); return err }()},
			{"wrong number of values", "2 values for 1 columns", acc.Update(ctx, db, 1, 5, 1, 2)},
			{"wrong number of dest", "0 destinations for 1 columns", acc.Claim(ctx, db, 1, 5)},
			{"nil table", "nil *stdsql.Table", nilTable.Update(ctx, db, 1, 5, 1)},
			{"bad guard", "WithGuard resource", acc.WithGuard("").Update(ctx, db, 1, 5, 1)},
			{"bad table name", `table name "a;b"`, func() error { _, err := stdsql.NewTable("a;b", "id", "v"); return err }()},
			{"column twice", "named twice", func() error { _, err := stdsql.NewTable("t", "id", "v", "id"); return err }()},
		}
		for _, c := range cases {
			if !errors.Is(c.err, fence.ErrInvalid) || !strings.HasPrefix(c.err.Error(), "stdsql: ") ||
				!strings.Contains(c.err.Error(), c.want) || strings.Count(c.err.Error(), "stdsql:") != 1 {
				t.Errorf("%s: %v; want one stdsql error matching fence.ErrInvalid that says %q", c.name, c.err, c.want)
			}
		}
		// A cancelled context is refused with its error, nothing sent.
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if err := stdsql.Claim(cctx, db, "r", 1); !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled ctx: %v", err)
		}
		if n := scalar(t, db, `SELECT count(*) FROM fencekit_tokens`); n != 0 {
			t.Errorf("bad input claimed %d guard rows", n)
		}
		if v := scalar(t, db, `SELECT lock_version * 1000 + balance FROM accounts`); v != 100 {
			t.Errorf("bad input changed the row: %d", v)
		}
	})
}
