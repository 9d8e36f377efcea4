package sqlfence_test

import (
	"context"
	"math"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/sqlfence"
)

// TestClaimEdgeTokensAndDeletedRow: Exec and InTx, on every kind of handle, at the ends of
// the token range and after an operator deleted the guard row: the token 1
// and math.MaxInt64 are accepted and accepted again (the row-lock path), an
// older token after them is refused with the current one, two writers with
// the row's token both write, and a deleted guard row is claimed anew by
// the next write and guards again.
func TestClaimEdgeTokensAndDeletedRow(t *testing.T) {
	env, ctx := setup(t), testCtx(t)
	dbs := jobsDBs(t, env, true)
	type writer func(ctx context.Context, db sqlfence.TxBeginner, res string, tok fence.Token, state string) error
	viaExec := func(ctx context.Context, db sqlfence.TxBeginner, res string, tok fence.Token, state string) error {
		_, err := sqlfence.Exec(ctx, db, res, tok, `UPDATE jobs SET state = $1 WHERE id = 1`, state)
		return err
	}
	viaInTx := func(ctx context.Context, db sqlfence.TxBeginner, res string, tok fence.Token, state string) error {
		return sqlfence.InTx(ctx, db, res, tok, func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, `UPDATE jobs SET state = $1 WHERE id = 1`, state)
			return err
		})
	}
	const top = fence.Token(math.MaxInt64)
	for _, w := range []struct {
		name  string
		write writer
	}{{"Exec", viaExec}, {"InTx", viaInTx}} {
		for _, db := range dbs {
			t.Run(w.name+"/"+db.name, func(t *testing.T) {
				res := "edge/" + w.name + "/" + db.name
				for _, tok := range []fence.Token{1, 1, top - 1, top, top} {
					if err := w.write(ctx, db.db, res, tok, "at "+tok.String()); err != nil {
						t.Fatalf("write with token %v: %v", tok, err)
					}
					wantState(t, env.Pool, "at "+tok.String())
				}
				for _, tok := range []fence.Token{top - 1, 1} {
					wantStale(t, w.write(ctx, db.db, res, tok, "stale"), res, tok, top)
				}
				wantState(t, env.Pool, "at "+top.String())

				// Two writers with the row's token, at once: both write.
				var wg sync.WaitGroup
				errs := make([]error, 2)
				for i := range errs {
					wg.Go(func() { errs[i] = w.write(ctx, env.Pool, res, top, "twin") })
				}
				wg.Wait()
				for i, err := range errs {
					if err != nil {
						t.Fatalf("writer %d with the row's token: %v", i, err)
					}
				}

				// An operator deletes the guard row: the next write claims it anew.
				exec(t, env.Pool, `DELETE FROM fencekit_tokens WHERE resource = '`+res+`'`)
				if err := w.write(ctx, db.db, res, 7, "after delete"); err != nil {
					t.Fatalf("write with token 7 after the guard row was deleted: %v", err)
				}
				if err := w.write(ctx, db.db, res, 7, "after delete, again"); err != nil {
					t.Fatalf("write with token 7 again: %v", err)
				}
				wantStale(t, w.write(ctx, db.db, res, 6, "stale"), res, 6, 7)
				wantState(t, env.Pool, "after delete, again")
				if cur, err := current(ctx, env.Pool, res); err != nil || cur != 7 {
					t.Fatalf("guard token = %v, %v; want 7", cur, err)
				}
			})
		}
	}
}
