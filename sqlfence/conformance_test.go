package sqlfence_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/fencetest"
	"github.com/fencekit/fencekit/sqlfence"
)

// TestConformsToMemStore applies the same seeded sequence of writes (a few
// resources, tokens drawn from a small range so that equal, older and newer
// tokens all occur) to fencetest.Store, the reference, and to both sqlfence
// modes, and checks that every write gets the same verdict, every refusal
// names the same current token, and the stored tokens agree at the end.
func TestConformsToMemStore(t *testing.T) {
	env := setup(t)
	ctx := testCtx(t)
	exec(t, env.Pool, `CREATE TABLE conf (id text PRIMARY KEY, v text, lock_version bigint NOT NULL DEFAULT 0)`)
	table, err := sqlfence.NewTable("conf", "id", "lock_version", "v")
	if err != nil {
		t.Fatal(err)
	}
	resources := []string{"r0", "r1", "r2"}
	for _, r := range resources {
		exec(t, env.Pool, fmt.Sprintf(`INSERT INTO conf (id) VALUES ('%s')`, r))
	}
	for seed := uint64(1); seed <= 4; seed++ {
		ref := fencetest.NewStore()
		rng := rand.New(rand.NewPCG(seed, 99))
		prefix := fmt.Sprintf("s%d-", seed)
		for i := range 60 {
			res := resources[rng.IntN(len(resources))]
			tok := fence.Token(1 + rng.IntN(12))
			val := fmt.Sprintf("%d-%d", seed, i)
			want := ref.Put(prefix+res, tok, []byte(val))

			guard := sqlfence.InTx(ctx, env.Pool, prefix+res, tok, func(tx pgx.Tx) error { return nil })
			row := table.Update(ctx, env.Pool, res, tok, val)
			for mode, got := range map[string]error{"guard": guard, "row": row} {
				if (want == nil) != (got == nil) {
					t.Fatalf("seed=%d write %d (%s, token %d): MemStore says %v, %s mode says %v", seed, i, res, tok, want, mode, got)
				}
				var ws, gs *fence.StaleError
				if errors.As(want, &ws) {
					if !errors.As(got, &gs) || gs.Current != ws.Current || gs.Presented != ws.Presented {
						t.Fatalf("seed=%d write %d: %s mode refusal %v, reference %v", seed, i, mode, got, want)
					}
				}
			}
		}
		for _, res := range resources {
			cur, err := current(ctx, env.Pool, prefix+res)
			if err != nil {
				t.Fatal(err)
			}
			ver, err := lockVersion(ctx, env.Pool, "conf", res)
			if err != nil {
				t.Fatal(err)
			}
			if want := ref.Current(prefix + res); cur != want || ver != want {
				t.Fatalf("seed=%d %s: guard row %d, lock_version %d, reference %d", seed, res, cur, ver, want)
			}
		}
		exec(t, env.Pool, `UPDATE conf SET lock_version = 0`)
	}
}
