package metricstest

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // registers "pgx"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/obs"
	"github.com/fencekit/fencekit/internal/testenv"
	"github.com/fencekit/fencekit/sqlfence/stdsql"
)

// TestStaleRejectedStdsql: every write stdsql refuses as stale (Claim,
// InTx, Exec, Table.Update) counts once in
// fencekit_stale_rejected_total{store="postgres"}, as sqlfence's do;
// accepted writes and a missing row do not.
func TestStaleRejectedStdsql(t *testing.T) {
	pg := testenv.PostgresMigrated(t)
	ctx := context.Background()
	db, err := sql.Open("pgx", pg.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, s := range []string{`CREATE TABLE docs (id int PRIMARY KEY, body text, lock_version bigint NOT NULL DEFAULT 0)`,
		`INSERT INTO docs (id, body) VALUES (1, '')`} {
		if _, err := db.ExecContext(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	docs, err := stdsql.NewTable("docs", "id", "lock_version", "body")
	if err != nil {
		t.Fatal(err)
	}
	before := staleRejected(t, obs.StorePostgres)
	if err := stdsql.Claim(ctx, db, "docs", 5); err != nil {
		t.Fatal(err)
	}
	if err := docs.Update(ctx, db, 1, 5, "v5"); err != nil {
		t.Fatal(err)
	}
	if got := staleRejected(t, obs.StorePostgres) - before; got != 0 {
		t.Fatalf("accepted writes counted %v refusals", got)
	}
	_, execErr := stdsql.Exec(ctx, db, "docs", 3, `UPDATE docs SET body = 'x'`)
	refusals := []error{
		stdsql.Claim(ctx, db, "docs", 4),
		stdsql.InTx(ctx, db, "docs", 4, func(*sql.Tx) error { return nil }),
		execErr,
		docs.Update(ctx, db, 1, 4, "v4"),
	}
	for i, err := range refusals {
		if !errors.Is(err, fence.ErrStale) {
			t.Fatalf("write %d: %v, want stale", i, err)
		}
	}
	if err := docs.Update(ctx, db, 9, 6, "x"); !errors.Is(err, stdsql.ErrNoRow) {
		t.Fatalf("missing row: %v", err)
	}
	if got := staleRejected(t, obs.StorePostgres) - before; got != float64(len(refusals)) {
		t.Fatalf(`fencekit_stale_rejected_total{store="postgres"} rose by %v, want %d`, got, len(refusals))
	}
}
