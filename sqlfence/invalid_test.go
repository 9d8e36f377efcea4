package sqlfence_test

import (
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/fencekit/fencekit/sqlfence"
)

// Bad input other than identifiers and tokens wraps ErrInvalidArgument, so
// callers can tell it from a database error, and sends nothing.
func TestBadInputIsErrInvalidArgument(t *testing.T) {
	env := setup(t)
	ctx := testCtx(t)
	pool, counter := countingPool(t, env.URL, 1)
	if _, err := sqlfence.NewTable("t", "id", "id"); !errors.Is(err, sqlfence.ErrInvalidArgument) {
		t.Errorf("NewTable with the key as version column: %v, want ErrInvalidArgument", err)
	}
	if _, err := sqlfence.NewTable("t", "id", "v", "id"); !errors.Is(err, sqlfence.ErrInvalidArgument) {
		t.Errorf("NewTable with the key as a value column: %v, want ErrInvalidArgument", err)
	}
	tbl, err := sqlfence.NewTable("t", "id", "v", "body")
	if err != nil {
		t.Fatal(err)
	}
	before := counter.n.Load()
	for name, err := range map[string]error{
		"InTx empty resource":  sqlfence.InTx(ctx, pool, "", 1, func(pgx.Tx) error { return nil }),
		"InTx nil fn":          sqlfence.InTx(ctx, pool, "r", 1, nil),
		"Fence empty resource": sqlfence.Fence(ctx, pool, "", 1),
		"Update 0 values":      tbl.Update(ctx, pool, 1, 1),
		"WithGuard empty":      tbl.WithGuard("").Update(ctx, pool, 1, 1, "x"),
	} {
		if !errors.Is(err, sqlfence.ErrInvalidArgument) {
			t.Errorf("%s: %v, want ErrInvalidArgument", name, err)
		}
	}
	if n := counter.n.Load() - before; n != 0 {
		t.Errorf("bad input sent %d statements, want 0", n)
	}
}
