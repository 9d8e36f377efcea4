package testenv

import (
	"context"
	"io/fs"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencekit/fencekit/migrations"
)

// MigrateLeases creates fencekit_leases as fencekit's migrations leave it
// (every NNNNNN_fencekit_leases*.up.sql file, in version order) in the
// first schema of pool's search_path, without the rest of the schema.
func MigrateLeases(tb testing.TB, pool *pgxpool.Pool) {
	tb.Helper()
	files, err := fs.Glob(migrations.FS, "*_fencekit_leases*.up.sql") // sorted: by version
	if err != nil || len(files) == 0 {
		tb.Fatalf("testenv: no fencekit_leases migrations (%v)", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, f := range files {
		sql, err := fs.ReadFile(migrations.FS, f)
		if err == nil {
			_, err = pool.Exec(ctx, string(sql))
		}
		if err != nil {
			tb.Fatalf("testenv: apply %s: %v", f, err)
		}
	}
}
