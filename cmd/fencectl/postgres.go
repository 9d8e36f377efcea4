package main

import (
	"context"
	"flag"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/lease"
	"github.com/fencekit/fencekit/lease/pglease"
)

func init() { backends["postgres"] = addPostgresFlags }

// addPostgresFlags adds the PostgreSQL connection flag of -backend postgres.
func addPostgresFlags(fs *flag.FlagSet) func(conn) (store, error) {
	url := fs.String("postgres", envOr(envPostgresURL, defPostgresURL),
		"with -backend postgres: PostgreSQL URL; its search_path must reach fencekit_leases (env "+envPostgresURL+")")
	return func(c conn) (store, error) { return connectPostgres(c, *url) }
}

// pgStore is the PostgreSQL backend: package pglease (the table mode).
type pgStore struct {
	conn
	pool   *pgxpool.Pool
	leases *lease.Client
}

func connectPostgres(c conn, url string) (store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, usagef("-postgres: %v", err)
	}
	cfg.ConnConfig.ConnectTimeout = c.timeout
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		return nil, err
	}
	leases, err := newLeaseClient(func(o *lease.Options) (*lease.Client, error) { return pglease.New(pool, o) }, c.prefix)
	if err != nil {
		pool.Close()
		return nil, err
	}
	return &pgStore{conn: c, pool: pool, leases: leases}, nil
}

func (s *pgStore) client() *lease.Client { return s.leases }
func (s *pgStore) close() error          { s.pool.Close(); return nil }

func (s *pgStore) names(ctx context.Context, pattern string) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	return pglease.Names(ctx, s.pool, s.prefix, pattern)
}

func (s *pgStore) forceRelease(ctx context.Context, name string, only fence.Token) (releaseResult, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	r, err := pglease.ForceRelease(ctx, s.pool, s.prefix, name, only)
	return releaseResult{Name: name, Released: r.Released, Held: r.Held, Holder: uint64(r.Holder), Identity: r.Identity,
		RemainingMS: ms(r.Remaining)}, err
}

func (s *pgStore) bump(context.Context, string, fence.Token) (bumpResult, error) {
	return bumpResult{}, unsupported("postgres", "bump", "a lease row's token is its counter, raised only by grants")
}

// releases: none; watch polls (before each TTL can run out).
func (s *pgStore) releases(context.Context, string) (<-chan fence.Token, error) { return nil, nil }
