package stdsql_test

import (
	"context"
	"database/sql"
	"net/url"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers "pgx"
	_ "github.com/lib/pq"              // registers "postgres"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/testenv"
	"github.com/fencekit/fencekit/sqlfence/stdsql"
)

// drivers are the database/sql drivers every test runs over.
var drivers = []string{"pgx", "postgres"}

// open opens a *sql.DB on dbURL through driver, closed at cleanup. lib/pq
// asks for TLS unless told not to.
func open(tb testing.TB, driver, dbURL string) *sql.DB {
	tb.Helper()
	if driver == "postgres" {
		u, err := url.Parse(dbURL)
		if err != nil {
			tb.Fatal(err)
		}
		q := u.Query()
		if q.Get("sslmode") == "" {
			q.Set("sslmode", "disable")
		}
		u.RawQuery = q.Encode()
		dbURL = u.String()
	}
	db, err := sql.Open(driver, dbURL)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

// eachDriver runs f as a subtest per driver, each on a fresh schema with
// fencekit's migrations applied.
func eachDriver(t *testing.T, f func(t *testing.T, db *sql.DB)) {
	for _, d := range drivers {
		t.Run(d, func(t *testing.T) {
			env := testenv.PostgresMigrated(t)
			f(t, open(t, d, env.URL))
		})
	}
}

// testCtx returns a context bounded for one test.
func testCtx(tb testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	tb.Cleanup(cancel)
	return ctx
}

// exec runs statements, failing the test on error.
func exec(tb testing.TB, db *sql.DB, sqls ...string) {
	tb.Helper()
	for _, s := range sqls {
		if _, err := db.ExecContext(testCtx(tb), s); err != nil {
			tb.Fatalf("%s: %v", s, err)
		}
	}
}

// scalar reads one int64 (0 for NULL or no row).
func scalar(tb testing.TB, db *sql.DB, query string, args ...any) int64 {
	tb.Helper()
	var v sql.NullInt64
	if err := db.QueryRowContext(testCtx(tb), query, args...).Scan(&v); err != nil && err != sql.ErrNoRows {
		tb.Fatalf("%s: %v", query, err)
	}
	return v.Int64
}

// current reads resource's committed guard token, 0 when it has no row.
func current(ctx context.Context, db stdsql.Execer, resource string) (fence.Token, error) {
	var tok int64
	err := db.QueryRowContext(ctx, `SELECT coalesce(max(token), 0) FROM fencekit_tokens WHERE resource = $1`, resource).Scan(&tok)
	return fence.Token(tok), err
}
