package migrations_test

import (
	"context"
	"errors"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-migrate/migrate/v4"
	"github.com/golang-migrate/migrate/v4/database"
	_ "github.com/golang-migrate/migrate/v4/database/pgx/v5" // the program's own migrations
	"github.com/golang-migrate/migrate/v4/source/iofs"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/testenv"
	"github.com/fencekit/fencekit/migrations"
)

// schemaTable is where Up records fencekit's schema version.
const schemaTable = "fencekit_schema_migrations"

func TestMain(m *testing.M) { testenv.Main(m) }

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// latest is the highest version embedded: the version Up records.
func latest(t *testing.T) int64 {
	t.Helper()
	entries, err := fs.ReadDir(migrations.FS, ".")
	if err != nil {
		t.Fatal(err)
	}
	var v int64
	for _, e := range entries {
		n, err := strconv.ParseInt(strings.SplitN(e.Name(), "_", 2)[0], 10, 64)
		if err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		v = max(v, n)
	}
	return v
}

// version reads a golang-migrate version table in schema: -1 when it does
// not exist or holds no row.
func version(t *testing.T, pool *pgxpool.Pool, schema, table string) (v int64, dirty bool) {
	t.Helper()
	ctx := testCtx(t)
	var exists bool
	if err := pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, schema+"."+table).Scan(&exists); err != nil {
		t.Fatal(err)
	}
	if !exists {
		return -1, false
	}
	err := pool.QueryRow(ctx, `SELECT version, dirty FROM `+schema+`.`+table).Scan(&v, &dirty)
	if errors.Is(err, pgx.ErrNoRows) {
		return -1, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return v, dirty
}

func hasTable(t *testing.T, pool *pgxpool.Pool, schema, table string) bool {
	t.Helper()
	var ok bool
	if err := pool.QueryRow(testCtx(t), `SELECT to_regclass($1) IS NOT NULL`, schema+"."+table).Scan(&ok); err != nil {
		t.Fatal(err)
	}
	return ok
}

func TestUpRerunDownUp(t *testing.T) {
	env := testenv.PostgresDatabase(t)
	ctx := testCtx(t)
	want := latest(t)
	if err := migrations.Up(ctx, env.URL); err != nil {
		t.Fatalf("up: %v", err)
	}
	if v, dirty := version(t, env.Pool, "public", schemaTable); v != want || dirty {
		t.Fatalf("after up: %s version %d dirty %v, want %d", schemaTable, v, dirty, want)
	}
	if hasTable(t, env.Pool, "public", "schema_migrations") {
		t.Fatal("Up created schema_migrations, the program's own table")
	}
	// The guard table is the one documented.
	rows, err := env.Pool.Query(ctx, `SELECT column_name || ' ' || data_type || ' ' || is_nullable FROM information_schema.columns
		WHERE table_schema = 'public' AND table_name = 'fencekit_tokens' ORDER BY ordinal_position`)
	if err != nil {
		t.Fatal(err)
	}
	cols, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"resource text NO", "token bigint NO", "updated_at timestamp with time zone NO"}; !slices.Equal(cols, want) {
		t.Fatalf("columns = %v, want %v", cols, want)
	}
	if _, err := env.Pool.Exec(ctx, `INSERT INTO fencekit_tokens (resource, token) VALUES ('neg', -1)`); err == nil {
		t.Fatal("negative token accepted: CHECK constraint missing")
	}
	if _, err := env.Pool.Exec(ctx, `INSERT INTO fencekit_tokens (resource, token) VALUES ('kept', 7)`); err != nil {
		t.Fatal(err)
	}
	// Re-running is a no-op that keeps the data.
	if err := migrations.Up(ctx, env.URL); err != nil {
		t.Fatalf("re-run: %v", err)
	}
	var n int
	if err := env.Pool.QueryRow(ctx, `SELECT count(*) FROM fencekit_tokens WHERE resource = 'kept'`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("after re-run: %d rows, %v; want the row kept", n, err)
	}
	if err := migrations.Down(ctx, strings.Replace(env.URL, "postgres://", "postgresql://", 1)); err != nil {
		t.Fatalf("down: %v", err)
	}
	if hasTable(t, env.Pool, "public", "fencekit_tokens") {
		t.Fatal("fencekit_tokens left after down")
	}
	if v, _ := version(t, env.Pool, "public", schemaTable); v != -1 {
		t.Fatalf("after down: version %d", v)
	}
	if err := migrations.Down(ctx, env.URL); err != nil {
		t.Fatalf("down again: %v", err)
	}
	if err := migrations.Up(ctx, env.URL); err != nil {
		t.Fatalf("up after down: %v", err)
	}
	if v, _ := version(t, env.Pool, "public", schemaTable); v != want {
		t.Fatalf("after up again: version %d, want %d", v, want)
	}
}

func TestUpConcurrent(t *testing.T) {
	env := testenv.PostgresDatabase(t)
	ctx := testCtx(t)
	const runs = 4
	errs := make([]error, runs)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range runs {
		wg.Go(func() {
			<-start
			errs[i] = migrations.Up(ctx, env.URL)
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("run %d: %v", i, err)
		}
	}
	if v, dirty := version(t, env.Pool, "public", schemaTable); v != latest(t) || dirty {
		t.Fatalf("after %d concurrent runs: version %d dirty %v", runs, v, dirty)
	}
}

// A URL naming golang-migrate's table (x-migrations-table, as a program's
// own migrate URL may) still records in fencekit's.
func TestUpIgnoresMigrationsTableParameter(t *testing.T) {
	env := testenv.Postgres(t)
	if err := migrations.Up(testCtx(t), env.URL+"&x-migrations-table=schema_migrations"); err != nil {
		t.Fatal(err)
	}
	if hasTable(t, env.Pool, env.Schema, "schema_migrations") {
		t.Fatal("Up recorded in schema_migrations")
	}
	if v, _ := version(t, env.Pool, env.Schema, schemaTable); v != latest(t) {
		t.Fatalf("%s: version %d, want %d", schemaTable, v, latest(t))
	}
}

// Up honours search_path: each schema gets its own tables.
func TestUpSchemaIsolation(t *testing.T) {
	a, b := testenv.Postgres(t), testenv.Postgres(t)
	if err := migrations.Up(testCtx(t), a.URL); err != nil {
		t.Fatal(err)
	}
	if !hasTable(t, a.Pool, a.Schema, "fencekit_tokens") || !hasTable(t, a.Pool, a.Schema, schemaTable) {
		t.Fatalf("schema %s: tables missing", a.Schema)
	}
	if hasTable(t, b.Pool, b.Schema, "fencekit_tokens") || hasTable(t, b.Pool, b.Schema, schemaTable) {
		t.Fatalf("schema %s touched by a migration of %s", b.Schema, a.Schema)
	}
}

// A run that cannot get golang-migrate's advisory lock gives up at ctx's
// deadline and changes nothing.
func TestUpLockWaitBoundedByContext(t *testing.T) {
	env := testenv.PostgresDatabase(t)
	ctx := testCtx(t)
	id, err := database.GenerateAdvisoryLockId("/"+env.Database, "public", schemaTable) // the driver names the database by its URL path
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, env.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1::bigint)`, id); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	err = migrations.Up(short, env.URL)
	if err == nil || !strings.HasPrefix(err.Error(), "migrations: up") || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Up while the lock is held: %v, want a deadline error", err)
	}
	if msg := err.Error(); strings.Count(msg, "deadline exceeded") != 1 || strings.Contains(msg, "\n") {
		t.Fatalf("Up's error says the deadline more than once or over lines: %q", msg)
	}
	if hasTable(t, env.Pool, "public", "fencekit_tokens") {
		t.Fatal("fencekit_tokens created without the lock")
	}
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_unlock($1::bigint)`, id); err != nil {
		t.Fatal(err)
	}
	if err := migrations.Up(ctx, env.URL); err != nil {
		t.Fatalf("after the lock is released: %v", err)
	}
}

// Bad URLs and a done context are refused before connecting; errors about
// a URL never repeat its password.
func TestUpBadInput(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range []struct {
		ctx     context.Context
		url     string
		want    string
		invalid bool // bad input: matches fence.ErrInvalid
	}{
		{testCtx(t), "mysql://u@h/db", `scheme "mysql"`, true},
		{testCtx(t), "host=localhost dbname=x", "no scheme", true},
		{testCtx(t), "postgres://app:s3cret@db:5432/app%zz", "does not parse", true},
		{testCtx(t), "postgres://app:s3cret@127.0.0.1:1/app", "up", false}, // nothing listens on port 1
		{cancelled, "postgres://app:s3cret@127.0.0.1:1/app", "context canceled", false},
	} {
		err := migrations.Up(c.ctx, c.url)
		if err == nil || !strings.HasPrefix(err.Error(), "migrations: ") || strings.Count(err.Error(), "migrations:") != 1 ||
			!strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("Up(%s) = %v, want a migrations error containing %q once, without the password", c.url, err, c.want)
		}
		if errors.Is(err, fence.ErrInvalid) != c.invalid {
			t.Errorf("Up(%s) = %v: matches fence.ErrInvalid %v, want %v", c.url, err, !c.invalid, c.invalid)
		}
	}
}

// TestUpHidesPasswordKeepsDriverError connects with a password that the
// server's refusal repeats (it is also the database's name): the message
// must not contain it, and errors.As must still reach PostgreSQL's error.
func TestUpHidesPasswordKeepsDriverError(t *testing.T) {
	u, err := url.Parse(testenv.PostgresDatabase(t).URL)
	if err != nil {
		t.Fatal(err)
	}
	const pw = "no_such_db_pw"
	u.User = url.UserPassword(u.User.Username(), pw)
	u.Path = "/" + pw
	err = migrations.Up(testCtx(t), u.String())
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "3D000" {
		t.Errorf("Up to a missing database = %v; want it to match *pgconn.PgError 3D000 (invalid_catalog_name)", err)
	}
	if err == nil || strings.Contains(err.Error(), pw) || !strings.HasPrefix(err.Error(), "migrations: ") {
		t.Errorf("Up = %v; want a migrations error without the password %q", err, pw)
	}
}

// userDir writes a program's own golang-migrate directory: its invoices
// table, then lock_version added by a second migration, as docs/postgres.md
// tells users to do.
func userDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"000001_invoices.up.sql":                `CREATE TABLE invoices (id bigint PRIMARY KEY, total bigint NOT NULL)`,
		"000001_invoices.down.sql":              `DROP TABLE invoices`,
		"000002_invoices_lock_version.up.sql":   `ALTER TABLE invoices ADD COLUMN lock_version bigint NOT NULL DEFAULT 0`,
		"000002_invoices_lock_version.down.sql": `ALTER TABLE invoices DROP COLUMN lock_version`,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// userMigrate runs the program's own migrations in dir on url (up or down),
// recording in golang-migrate's default schema_migrations.
func userMigrate(t *testing.T, dir, url string, up bool) {
	t.Helper()
	src, err := iofs.New(os.DirFS(dir), ".")
	if err != nil {
		t.Fatal(err)
	}
	m, err := migrate.NewWithSourceInstance("iofs", src, strings.Replace(url, "postgres://", "pgx5://", 1))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	step := m.Up
	if !up {
		step = m.Down
	}
	if err := step(); err != nil {
		t.Fatalf("the program's own migrate (up=%v): %v", up, err)
	}
}

// checkBoth checks that the program's migrations (at version user, -1 for
// none) and fencekit's (all applied, or none) are both as expected.
func checkBoth(t *testing.T, env *testenv.PostgresEnv, user int64, fencekit bool) {
	t.Helper()
	if v, dirty := version(t, env.Pool, env.Schema, "schema_migrations"); v != user || dirty {
		t.Fatalf("schema_migrations: version %d dirty %v, want %d clean", v, dirty, user)
	}
	want := int64(-1)
	if fencekit {
		want = latest(t)
	}
	if v, dirty := version(t, env.Pool, env.Schema, schemaTable); v != want || dirty {
		t.Fatalf("%s: version %d dirty %v, want %d clean", schemaTable, v, dirty, want)
	}
	if got := hasTable(t, env.Pool, env.Schema, "fencekit_tokens"); got != fencekit {
		t.Fatalf("fencekit_tokens exists: %v, want %v", got, fencekit)
	}
	var cols int
	if err := env.Pool.QueryRow(testCtx(t), `SELECT count(*) FROM information_schema.columns
		WHERE table_schema = $1 AND table_name = 'invoices' AND column_name = 'lock_version'`, env.Schema).Scan(&cols); err != nil {
		t.Fatal(err)
	}
	if want := user == 2; (cols == 1) != want {
		t.Fatalf("invoices.lock_version exists: %v, want %v", cols == 1, want)
	}
}

// fencekit's migrations and a program's own golang-migrate migrations run
// against one schema in either order, and each reverts without the other.
func TestUpWithUserMigrations(t *testing.T) {
	for _, fencekitFirst := range []bool{true, false} {
		t.Run("fencekitFirst="+strconv.FormatBool(fencekitFirst), func(t *testing.T) {
			env := testenv.Postgres(t)
			ctx := testCtx(t)
			dir := userDir(t)
			if fencekitFirst {
				if err := migrations.Up(ctx, env.URL); err != nil {
					t.Fatal(err)
				}
				userMigrate(t, dir, env.URL, true)
			} else {
				userMigrate(t, dir, env.URL, true)
				if err := migrations.Up(ctx, env.URL); err != nil {
					t.Fatal(err)
				}
			}
			checkBoth(t, env, 2, true)
			if err := migrations.Up(ctx, env.URL); err != nil {
				t.Fatalf("Up again: %v", err)
			}
			checkBoth(t, env, 2, true)
			userMigrate(t, dir, env.URL, false)
			checkBoth(t, env, -1, true)
			userMigrate(t, dir, env.URL, true)
			if err := migrations.Down(ctx, env.URL); err != nil {
				t.Fatal(err)
			}
			checkBoth(t, env, 2, false)
		})
	}
}

// preMove puts schema in the state that sqlfence.Migrate left before
// fencekit had its own table: migration 1 applied, its version recorded in
// schema_migrations (version, dirty), and a guard row in use.
func preMove(t *testing.T, env *testenv.PostgresEnv, recorded int64, dirty bool) {
	t.Helper()
	up, err := fs.ReadFile(migrations.FS, "000001_fencekit_tokens.up.sql")
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	for _, sql := range []string{
		string(up),
		`INSERT INTO fencekit_tokens (resource, token) VALUES ('kept', 41)`,
		`CREATE TABLE schema_migrations (version bigint NOT NULL PRIMARY KEY, dirty boolean NOT NULL)`,
	} {
		if _, err := env.Pool.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	if _, err := env.Pool.Exec(ctx, `INSERT INTO schema_migrations VALUES ($1, $2)`, recorded, dirty); err != nil {
		t.Fatal(err)
	}
}

// A database migrated before the move upgrades cleanly: Up takes it over,
// keeps the guard rows, and never touches schema_migrations, whose rows may
// be the program's own.
func TestUpTakesOverPreMoveDatabase(t *testing.T) {
	// A lone clean version 1 is either sqlfence.Migrate's old record or the
	// program's own first migration (fencekit's SQL applied by hand): Up
	// cannot tell them apart, so it keeps the row.
	t.Run("lone version 1 kept", func(t *testing.T) {
		env := testenv.Postgres(t)
		ctx := testCtx(t)
		preMove(t, env, 1, false)
		if err := migrations.Up(ctx, env.URL); err != nil {
			t.Fatalf("Up on a pre-move database: %v", err)
		}
		if v, dirty := version(t, env.Pool, env.Schema, "schema_migrations"); v != 1 || dirty {
			t.Fatalf("schema_migrations changed to %d dirty %v; want the program's version 1 kept", v, dirty)
		}
		if v, dirty := version(t, env.Pool, env.Schema, schemaTable); v != latest(t) || dirty {
			t.Fatalf("%s: version %d dirty %v", schemaTable, v, dirty)
		}
		var tok int64
		if err := env.Pool.QueryRow(ctx, `SELECT token FROM fencekit_tokens WHERE resource = 'kept'`).Scan(&tok); err != nil || tok != 41 {
			t.Fatalf("guard row after the take-over: %d, %v; want 41", tok, err)
		}
		// When the row was fencekit's, the upgrade step docs/postgres.md
		// gives lets the program's own migrations start from their first.
		if _, err := env.Pool.Exec(ctx, `DELETE FROM schema_migrations WHERE version = 1`); err != nil {
			t.Fatal(err)
		}
		userMigrate(t, userDir(t), env.URL, true)
		checkBoth(t, env, 2, true)
		if err := migrations.Up(ctx, env.URL); err != nil {
			t.Fatalf("Up again: %v", err)
		}
		checkBoth(t, env, 2, true)
	})
	// Any other record is the program's: Up leaves it alone.
	for _, c := range []struct {
		version int64
		dirty   bool
	}{{2, true}, {3, false}, {1, true}} {
		t.Run("schema_migrations at "+strconv.FormatInt(c.version, 10)+" dirty="+strconv.FormatBool(c.dirty), func(t *testing.T) {
			env := testenv.Postgres(t)
			preMove(t, env, c.version, c.dirty)
			if err := migrations.Up(testCtx(t), env.URL); err != nil {
				t.Fatalf("Up on a pre-move database: %v", err)
			}
			if v, dirty := version(t, env.Pool, env.Schema, "schema_migrations"); v != c.version || dirty != c.dirty {
				t.Fatalf("schema_migrations changed to %d dirty %v", v, dirty)
			}
			if v, dirty := version(t, env.Pool, env.Schema, schemaTable); v != latest(t) || dirty {
				t.Fatalf("%s: version %d dirty %v", schemaTable, v, dirty)
			}
		})
	}
	// Down on a pre-move database reverts fencekit's tables too.
	t.Run("Down", func(t *testing.T) {
		env := testenv.Postgres(t)
		preMove(t, env, 1, false)
		if err := migrations.Down(testCtx(t), env.URL); err != nil {
			t.Fatal(err)
		}
		checkBoth(t, env, 1, false) // the program's record is kept
	})
}
