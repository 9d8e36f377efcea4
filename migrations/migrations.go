// Package migrations holds fencekit's PostgreSQL schema as numbered
// golang-migrate files (NNNNNN_name.up.sql / .down.sql), embedded in [FS],
// and applies them with [Up]:
//
//	err := migrations.Up(ctx, "postgres://user@host:5432/db")
//
// Up records what it applied in its own table, fencekit_schema_migrations,
// never in golang-migrate's default schema_migrations, which belongs to the
// program's own migrations: both can run against one database, in either
// order. Tables are created unqualified, so they land in the first schema
// of the connection's search_path.
//
// With another migration tool (goose, Atlas, Flyway, psql), apply the .up.sql
// files in version order instead, as plain SQL; docs/postgres.md shows them.
//
// Package sqlfence does not import this package: a program that only writes
// through sqlfence links neither golang-migrate nor a database/sql driver.
package migrations

import "embed"

// FS holds the migration files at its root, in golang-migrate's naming.
//
//go:embed *.sql
var FS embed.FS
