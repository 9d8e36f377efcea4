package sqlfence_test

import (
	"errors"
	"testing"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/sqlfence"
)

// TestClaimMissingRow: Claim on a missing row returns ErrNoRow and records
// nothing on an unbound table (an older holder may still create the row,
// as the docs say); bound WithGuard, the claim lands in the guard row, so
// the older holder's Upsert is refused.
func TestClaimMissingRow(t *testing.T) {
	env := setup(t)
	ctx := testCtx(t)
	exec(t, env.Pool, `CREATE TABLE acct (id int PRIMARY KEY, balance bigint NOT NULL, lock_version bigint NOT NULL DEFAULT 0)`)
	tbl, err := sqlfence.NewTable("acct", "id", "lock_version", "balance")
	if err != nil {
		t.Fatal(err)
	}
	var bal int64
	if err := tbl.Claim(ctx, env.Pool, 1, 200, &bal); !errors.Is(err, sqlfence.ErrNoRow) {
		t.Fatalf("Claim of a missing row = %v; want ErrNoRow", err)
	}
	if err := tbl.Upsert(ctx, env.Pool, 1, 100, 10); err != nil {
		t.Fatalf("unbound table: the older holder's Upsert after the claim = %v; want accepted (nothing was recorded)", err)
	}
	guarded := tbl.WithGuard("acct-2")
	if err := guarded.Claim(ctx, env.Pool, 2, 200, &bal); !errors.Is(err, sqlfence.ErrNoRow) {
		t.Fatalf("guarded Claim of a missing row = %v; want ErrNoRow", err)
	}
	if err := guarded.Upsert(ctx, env.Pool, 2, 100, 10); !errors.Is(err, fence.ErrStale) {
		t.Fatalf("guarded: the older holder's Upsert after the claim = %v; want stale", err)
	}
}
