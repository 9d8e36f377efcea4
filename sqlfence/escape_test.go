package sqlfence_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/sqlfence"
)

// FuzzInTxResourceName runs InTx on hostile resource names in both of
// pgx's query modes that take different paths (a prepared claim run by
// EXECUTE, the claim as text): the BEGIN message splices the name in as a
// literal escaped by pgconn, so the transaction must see the guard row of
// exactly that name, read back with a parameter, holding the token.
func FuzzInTxResourceName(f *testing.F) {
	for _, s := range []string{`plain`, `it's`, `''`, `\`, `\'`, `'\`, `E'x'`, `'); DROP TABLE fencekit_tokens; --`,
		`$$`, `$1`, `"quoted"`, `back\\slashes\n`, `ünï 💥`, `x' || 'y`} {
		f.Add(s)
	}
	env := setup(f)
	ctx := context.Background()
	var pools []*pgxpool.Pool
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeExec} {
		cfg, err := pgxpool.ParseConfig(env.URL)
		if err != nil {
			f.Fatal(err)
		}
		cfg.ConnConfig.DefaultQueryExecMode = mode
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			f.Fatal(err)
		}
		f.Cleanup(pool.Close)
		pools = append(pools, pool)
	}
	var last atomic.Uint64
	f.Fuzz(func(t *testing.T, resource string) {
		for _, pool := range pools {
			tok := fence.Token(last.Add(1))
			err := sqlfence.InTx(ctx, pool, resource, tok, func(tx pgx.Tx) error {
				var got int64
				if err := tx.QueryRow(ctx, `SELECT token FROM fencekit_tokens WHERE resource = $1`, resource).Scan(&got); err != nil {
					return err
				}
				if fence.Token(got) != tok {
					t.Errorf("resource %q: the guard row holds %d, want %v", resource, got, tok)
				}
				return nil
			})
			if errors.Is(err, fence.ErrInvalid) {
				return // a name InTx refuses before sending anything
			}
			if err != nil {
				t.Fatalf("InTx(%q): %v", resource, err)
			}
		}
	})
}
