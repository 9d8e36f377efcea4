package stdsql_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/sqlfence/stdsql"
)

// TestRaceNoStaleWriteLands: 16 goroutines write with random tokens through
// InTx, Exec and Table.Update; every accepted write logs its token in the
// same transaction (or, for the table, a trigger does). Ordered as
// committed, the logged tokens never go down: no write older than one
// already accepted landed.
func TestRaceNoStaleWriteLands(t *testing.T) {
	eachDriver(t, func(t *testing.T, db *sql.DB) {
		ctx := testCtx(t)
		exec(t, db, `CREATE TABLE wlog (seq bigserial PRIMARY KEY, mode text, tok bigint)`,
			`CREATE TABLE accounts (id int PRIMARY KEY, lock_version bigint NOT NULL DEFAULT 0, balance bigint)`,
			`INSERT INTO accounts (id, balance) VALUES (1, 0)`,
			`CREATE FUNCTION log_version() RETURNS trigger LANGUAGE plpgsql AS $$
				BEGIN INSERT INTO wlog (mode, tok) VALUES ('table', NEW.lock_version); RETURN NEW; END $$`,
			`CREATE TRIGGER accounts_log AFTER UPDATE ON accounts FOR EACH ROW EXECUTE FUNCTION log_version()`)
		acc, err := stdsql.NewTable("accounts", "id", "lock_version", "balance")
		if err != nil {
			t.Fatal(err)
		}
		modes := map[string]func(tok fence.Token) error{
			"intx": func(tok fence.Token) error {
				return stdsql.InTx(ctx, db, "intx", tok, func(tx *sql.Tx) error {
					_, err := tx.ExecContext(ctx, `INSERT INTO wlog (mode, tok) VALUES ('intx', $1)`, int64(tok))
					return err
				})
			},
			"exec": func(tok fence.Token) error {
				_, err := stdsql.Exec(ctx, db, "exec", tok, `INSERT INTO wlog (mode, tok) VALUES ('exec', $1)`, int64(tok))
				return err
			},
			"table": func(tok fence.Token) error { return acc.Update(ctx, db, 1, tok, int64(tok)) },
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		accepted, stale := map[string]int{}, 0
		for g := range 16 {
			wg.Go(func() {
				for i := range 15 {
					mode := []string{"intx", "exec", "table"}[(g+i)%3]
					err := modes[mode](fence.Token(1 + rand.IntN(200)))
					mu.Lock()
					switch {
					case err == nil:
						accepted[mode]++
					case errors.Is(err, fence.ErrStale):
						stale++
					default:
						t.Errorf("%s: %v", mode, err)
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		t.Logf("accepted %v, stale %d", accepted, stale)
		if stale == 0 || len(accepted) != 3 {
			t.Fatalf("the race did not exercise every mode and refusals: accepted %v, stale %d", accepted, stale)
		}
		checkLogOrdered(t, ctx, db)
	})
}

// checkLogOrdered fails when, within a mode, a logged token is smaller than
// one logged before it.
func checkLogOrdered(t *testing.T, ctx context.Context, db *sql.DB) {
	t.Helper()
	rows, err := db.QueryContext(ctx, `SELECT mode, tok FROM wlog ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	maxTok := map[string]int64{}
	var bad []string
	for rows.Next() {
		var mode string
		var tok int64
		if err := rows.Scan(&mode, &tok); err != nil {
			t.Fatal(err)
		}
		if tok < maxTok[mode] {
			bad = append(bad, fmt.Sprintf("%s %d after %d", mode, tok, maxTok[mode]))
		}
		maxTok[mode] = max(maxTok[mode], tok)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(bad) > 0 {
		t.Fatalf("%d stale writes landed, such as %v", len(bad), bad[:min(3, len(bad))])
	}
}
