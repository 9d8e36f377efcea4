package sqlfence_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-migrate/migrate/v4/database"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencekit/fencekit/internal/testenv"
	"github.com/fencekit/fencekit/sqlfence"
)

// migrationState reports whether fencekit_tokens exists in schema and
// golang-migrate's recorded version (-1: none).

// latestVersion is the highest migration in migrations/ (2: fencekit_leases).
const latestVersion = 2

func migrationState(t *testing.T, pool *pgxpool.Pool, schema string) (exists bool, version int64, dirty bool) {
	t.Helper()
	ctx := testCtx(t)
	if err := pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, schema+".fencekit_tokens").Scan(&exists); err != nil {
		t.Fatal(err)
	}
	version = -1
	err := pool.QueryRow(ctx, `SELECT coalesce((SELECT version FROM `+schema+`.schema_migrations), -1), coalesce((SELECT dirty FROM `+schema+`.schema_migrations), false)`).Scan(&version, &dirty)
	if err != nil && !strings.Contains(err.Error(), "does not exist") {
		t.Fatal(err)
	}
	return exists, version, dirty
}

func TestMigrateUpRerunDownUp(t *testing.T) {
	env := testenv.PostgresDatabase(t)
	ctx := testCtx(t)
	if ok, v, _ := migrationState(t, env.Pool, "public"); ok || v != -1 {
		t.Fatalf("fresh database already has fencekit_tokens=%v version=%d", ok, v)
	}
	if err := sqlfence.Migrate(ctx, env.URL); err != nil {
		t.Fatalf("up: %v", err)
	}
	if ok, v, dirty := migrationState(t, env.Pool, "public"); !ok || v != latestVersion || dirty {
		t.Fatalf("after up: table=%v version=%d dirty=%v", ok, v, dirty)
	}
	// The table is the one documented.
	rows, err := env.Pool.Query(ctx, `SELECT column_name || ' ' || data_type || ' ' || is_nullable FROM information_schema.columns
		WHERE table_schema = 'public' AND table_name = 'fencekit_tokens' ORDER BY ordinal_position`)
	if err != nil {
		t.Fatal(err)
	}
	var cols []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			t.Fatal(err)
		}
		cols = append(cols, c)
	}
	want := []string{"resource text NO", "token bigint NO", "updated_at timestamp with time zone NO"}
	if !slices.Equal(cols, want) {
		t.Fatalf("columns = %v, want %v", cols, want)
	}
	if _, err := env.Pool.Exec(ctx, `INSERT INTO fencekit_tokens (resource, token) VALUES ('neg', -1)`); err == nil {
		t.Fatal("negative token accepted: CHECK constraint missing")
	}
	if err := sqlfence.Fence(ctx, env.Pool, "kept", 7); err != nil {
		t.Fatal(err)
	}
	// Re-running is a no-op that keeps the data.
	if err := sqlfence.Migrate(ctx, env.URL); err != nil {
		t.Fatalf("re-run: %v", err)
	}
	if cur, err := sqlfence.Current(ctx, env.Pool, "kept"); err != nil || cur != 7 {
		t.Fatalf("after re-run: token %d, %v; want 7", cur, err)
	}
	if err := sqlfence.MigrateDown(ctx, strings.Replace(env.URL, "postgres://", "postgresql://", 1)); err != nil {
		t.Fatalf("down: %v", err)
	}
	if ok, v, _ := migrationState(t, env.Pool, "public"); ok || v != -1 {
		t.Fatalf("after down: table=%v version=%d", ok, v)
	}
	if err := sqlfence.MigrateDown(ctx, env.URL); err != nil {
		t.Fatalf("down again: %v", err)
	}
	if err := sqlfence.Migrate(ctx, env.URL); err != nil {
		t.Fatalf("up after down: %v", err)
	}
	if ok, v, _ := migrationState(t, env.Pool, "public"); !ok || v != latestVersion {
		t.Fatalf("after up again: table=%v version=%d", ok, v)
	}
	if cur, err := sqlfence.Current(ctx, env.Pool, "kept"); err != nil || cur != 0 {
		t.Fatalf("after down and up: token %d, %v; want 0 (fresh table)", cur, err)
	}
}

func TestMigrateConcurrent(t *testing.T) {
	env := testenv.PostgresDatabase(t)
	ctx := testCtx(t)
	const runs = 4
	errs := make([]error, runs)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range runs {
		wg.Go(func() {
			<-start
			errs[i] = sqlfence.Migrate(ctx, env.URL)
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("run %d: %v", i, err)
		}
	}
	if ok, v, dirty := migrationState(t, env.Pool, "public"); !ok || v != latestVersion || dirty {
		t.Fatalf("after %d concurrent runs: table=%v version=%d dirty=%v", runs, ok, v, dirty)
	}
}

// Migrate honours search_path: each test schema gets its own tables.
func TestMigrateSchemaIsolation(t *testing.T) {
	a, b := testenv.Postgres(t), testenv.Postgres(t)
	ctx := testCtx(t)
	if err := sqlfence.Migrate(ctx, a.URL); err != nil {
		t.Fatal(err)
	}
	if ok, v, _ := migrationState(t, a.Pool, a.Schema); !ok || v != latestVersion {
		t.Fatalf("schema %s: table=%v version=%d", a.Schema, ok, v)
	}
	if ok, v, _ := migrationState(t, b.Pool, b.Schema); ok || v != -1 {
		t.Fatalf("schema %s touched by a migration of %s: table=%v version=%d", b.Schema, a.Schema, ok, v)
	}
}

// A run that cannot get golang-migrate's advisory lock gives up at ctx's
// deadline and changes nothing.
func TestMigrateLockWaitBoundedByContext(t *testing.T) {
	env := testenv.PostgresDatabase(t)
	ctx := testCtx(t)
	id, err := database.GenerateAdvisoryLockId("/"+env.Database, "public", "schema_migrations") // the driver names the database by its URL path
	if err != nil {
		t.Fatal(err)
	}
	conn := connect(t, env.URL)
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1::bigint)`, id); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	if err := sqlfence.Migrate(short, env.URL); err == nil || !strings.HasPrefix(err.Error(), "sqlfence: migrate up") {
		t.Fatalf("Migrate while the lock is held: %v, want an error", err)
	}
	if ok, _, _ := migrationState(t, env.Pool, "public"); ok {
		t.Fatal("fencekit_tokens created without the lock")
	}
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_unlock($1::bigint)`, id); err != nil {
		t.Fatal(err)
	}
	if err := sqlfence.Migrate(ctx, env.URL); err != nil {
		t.Fatalf("after the lock is released: %v", err)
	}
}

// Errors about a URL never repeat its password: neither a URL that does not
// parse nor a server that cannot be reached.
func TestMigrateErrorsHidePassword(t *testing.T) {
	for _, u := range []string{
		"postgres://app:s3cret@db:5432/app%zz",  // does not parse
		"postgres://app:s3cret@127.0.0.1:1/app", // nothing listens on port 1
	} {
		err := sqlfence.Migrate(testCtx(t), u)
		if err == nil || !strings.HasPrefix(err.Error(), "sqlfence: ") || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("Migrate(%s) = %v, want a sqlfence error without the password", u, err)
		}
	}
}
