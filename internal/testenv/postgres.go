package testenv

import (
	"context"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencekit/fencekit/migrations"
)

// PostgresEnv is one test's own namespace on the PostgreSQL server.
type PostgresEnv struct {
	// URL connects to the test's database with search_path set to Schema,
	// so unqualified names (and golang-migrate's table) land in it.
	URL string
	// Schema is the test's schema ("public" for [PostgresDatabase]).
	Schema string
	// Database is the database URL points to.
	Database string
	// Pool is a pool on URL, closed at cleanup.
	Pool *pgxpool.Pool
}

var pgServer resolved

// postgresBase returns the server's base URL, or ends the test.
func postgresBase(tb testing.TB) string {
	tb.Helper()
	pgServer.once.Do(func() {
		u, _ := getenv(EnvPostgresURL, DefaultPostgresURL)
		pgServer.where, pgServer.err = u, pingPostgres(u)
	})
	if pgServer.err != nil {
		unavailable(tb, "PostgreSQL", redactURL(pgServer.where), EnvPostgresURL, pgServer.err)
	}
	return pgServer.where
}

// Postgres returns a fresh schema on the PostgreSQL server found through
// FENCEKIT_POSTGRES_URL, dropped with everything in it at cleanup.
func Postgres(tb testing.TB) *PostgresEnv {
	tb.Helper()
	base := postgresBase(tb)
	schema := "fk_" + underscore(uniqueID(tb))
	env := &PostgresEnv{URL: withParam(tb, base, "search_path", schema), Schema: schema, Database: dbName(tb, base)}
	ident := pgx.Identifier{schema}.Sanitize()
	return provision(tb, base, env, "CREATE SCHEMA "+ident, "DROP SCHEMA IF EXISTS "+ident+" CASCADE")
}

// PostgresMigrated is [Postgres] with fencekit's migrations applied to the
// schema (migrations.Up).
func PostgresMigrated(tb testing.TB) *PostgresEnv {
	tb.Helper()
	env := Postgres(tb)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := migrations.Up(ctx, env.URL); err != nil {
		tb.Fatalf("testenv: migrations.Up: %v", err)
	}
	return env
}

// PostgresDatabase returns a fresh database on the server, dropped at
// cleanup (terminating any connection still open to it). It costs more than
// [Postgres]; use it for tests of whole-database behaviour such as migrations.
func PostgresDatabase(tb testing.TB) *PostgresEnv {
	tb.Helper()
	base := postgresBase(tb)
	db := "fk_" + underscore(uniqueID(tb))
	u, err := url.Parse(base)
	if err != nil {
		tb.Fatalf("testenv: parse %s: %v", EnvPostgresURL, err)
	}
	u.Path = "/" + db
	env := &PostgresEnv{URL: u.String(), Schema: "public", Database: db}
	ident := pgx.Identifier{db}.Sanitize()
	return provision(tb, base, env, "CREATE DATABASE "+ident, "DROP DATABASE IF EXISTS "+ident+" WITH (FORCE)")
}

// provision runs create on the server, opens env.Pool on env.URL, and at
// cleanup closes the pool and runs drop.
func provision(tb testing.TB, base string, env *PostgresEnv, create, drop string) *PostgresEnv {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin(tb, ctx, base, create)
	pool, err := pgxpool.New(ctx, env.URL)
	if err != nil {
		tb.Fatalf("testenv: open pool: %v", err)
	}
	env.Pool = pool
	tb.Cleanup(func() {
		env.Pool.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		admin(tb, ctx, base, drop)
	})
	return env
}

// admin runs one statement on a short-lived connection to the base URL.
func admin(tb testing.TB, ctx context.Context, base, sql string) {
	tb.Helper()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		tb.Fatalf("testenv: connect to PostgreSQL: %v", err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, sql); err != nil {
		tb.Fatalf("testenv: %s: %v", sql, err)
	}
}

func pingPostgres(connURL string) error {
	ctx, cancel := context.WithTimeout(context.Background(), dialTimeout)
	defer cancel()
	cfg, err := pgx.ParseConfig(connURL)
	if err != nil {
		return fmt.Errorf("parse URL: %w", err)
	}
	cfg.ConnectTimeout = dialTimeout
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	return conn.Ping(ctx)
}

func withParam(tb testing.TB, base, key, value string) string {
	tb.Helper()
	u, err := url.Parse(base)
	if err != nil {
		tb.Fatalf("testenv: parse %s: %v", EnvPostgresURL, err)
	}
	q := u.Query()
	q.Set(key, value)
	u.RawQuery = q.Encode()
	return u.String()
}

func dbName(tb testing.TB, base string) string {
	cfg, err := pgx.ParseConfig(base)
	if err != nil {
		tb.Fatalf("testenv: parse %s: %v", EnvPostgresURL, err)
	}
	return cfg.Database
}

// redactURL hides a password in a URL for messages.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return s
	}
	return u.Redacted()
}

func underscore(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c == '-' {
			b[i] = '_'
		}
	}
	return string(b)
}
