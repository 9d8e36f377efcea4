// Package migrations holds fencekit's PostgreSQL schema as numbered
// golang-migrate files (NNNNNN_name.up.sql / .down.sql), embedded in [FS].
//
// Apply them with sqlfence.Migrate, which reads FS through golang-migrate's
// iofs source and pgx v5 driver:
//
//	err := sqlfence.Migrate(ctx, "postgres://user@host:5432/db")
//
// Tables are created unqualified, so they land in the first schema of the
// connection's search_path, as does golang-migrate's schema_migrations table.
// To use them from another tool, point it at this directory (for example
// `migrate -path migrations -database pgx5://... up`).
package migrations

import "embed"

// FS holds the migration files at its root, in golang-migrate's naming.
//
//go:embed *.sql
var FS embed.FS
