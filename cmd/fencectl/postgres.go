package main

import (
	"context"
	"flag"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencekit/fencekit/lease"
	"github.com/fencekit/fencekit/lease/pglease"
)

func init() {
	backends["postgres"] = addPostgresFlags
	backends["postgres-advisory"] = addAdvisoryFlags
}

// postgresURL is the -postgres flag, shared by -backend postgres and
// postgres-advisory (whose registration comes second: the names sort so).
var postgresURL *string

// addPostgresFlags adds the PostgreSQL connection flag of -backend postgres.
func addPostgresFlags(fs *flag.FlagSet) func(conn) (*store, error) {
	postgresURL = fs.String("postgres", envOr(envPostgresURL, defPostgresURL),
		"with -backend postgres or postgres-advisory: PostgreSQL URL; its search_path must reach fencekit_leases (env "+envPostgresURL+"; empty: libpq's PG* variables)")
	return func(c conn) (*store, error) { return connectPostgres(c, *postgresURL, false) }
}

// addAdvisoryFlags: -backend postgres-advisory, the leases of
// pglease.NewAdvisory, uses the -postgres flag.
func addAdvisoryFlags(*flag.FlagSet) func(conn) (*store, error) {
	return func(c conn) (*store, error) { return connectPostgres(c, *postgresURL, true) }
}

// connectPostgres connects the PostgreSQL backend: package pglease, the
// table mode or, with advisory, the advisory-lock mode.
func connectPostgres(c conn, url string, advisory bool) (*store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, usagef("-postgres: %v", err)
	}
	cfg.ConnConfig.ConnectTimeout = c.timeout
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		return nil, err
	}
	issuer := pglease.New
	if advisory {
		issuer = pglease.NewAdvisory
	}
	leases, err := newLeaseClient(func(o *lease.Options) (*lease.Client, error) { return issuer(pool, o) }, c.prefix)
	if err != nil {
		pool.Close()
		return nil, err
	}
	return &store{leases: leases, close: pool.Close}, nil
}
