package pglease_test

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencekit/fencekit/internal/leasetest"
	"github.com/fencekit/fencekit/internal/testenv"
	"github.com/fencekit/fencekit/lease"
	"github.com/fencekit/fencekit/lease/pglease"
)

// The conformance suite of internal/leasetest, run on this issuer: every
// issuer's package runs the same list of cases through leasetest.Run with
// its own factory.

const envLeaseURL = "LEASETEST_LEASE_URL"

var postgresIssuer = leasetest.Issuer{
	Name: "postgres",
	TTL:  time.Second,
	Open: func(t testing.TB) leasetest.Namespace {
		env := testenv.Postgres(t)
		testenv.MigrateLeases(t, env.Pool)
		return pgNS{env: env}
	},
	FromEnv: func(ctx context.Context) (*lease.Client, error) {
		pool, err := pgxpool.New(ctx, os.Getenv(envLeaseURL))
		if err != nil {
			return nil, err
		}
		return pglease.New(pool, nil)
	},
}

// advisoryIssuer is pglease.NewAdvisory on the same namespaces as
// postgresIssuer.
var advisoryIssuer = leasetest.Issuer{
	Name:         "postgres-advisory",
	TTL:          time.Second,
	SessionBound: true,
	Open: func(t testing.TB) leasetest.Namespace {
		env := testenv.Postgres(t)
		testenv.MigrateLeases(t, env.Pool)
		return pgNS{env: env, advisory: true}
	},
	FromEnv: func(ctx context.Context) (*lease.Client, error) {
		pool, err := pgxpool.New(ctx, os.Getenv(envLeaseURL))
		if err != nil {
			return nil, err
		}
		return pglease.NewAdvisory(pool, nil)
	},
}

func init() { leasetest.Register(postgresIssuer, advisoryIssuer) }

// The two suites run one after the other: CloseLeavesNoGoroutine looks for
// goroutines of every lease package.

func TestConformance(t *testing.T) { leasetest.Run(t, postgresIssuer) }

func TestConformanceAdvisory(t *testing.T) { leasetest.Run(t, advisoryIssuer) }

// pgNS is a schema for pglease.New, or for pglease.NewAdvisory when
// advisory is set.
type pgNS struct {
	env      *testenv.PostgresEnv
	advisory bool
}

// Env gives children an application_name of the namespace's schema, by
// which EndChildSessions finds their sessions.
func (ns pgNS) Env() []string {
	return []string{envLeaseURL + "=" + ns.env.URL + "&application_name=" + ns.env.Schema}
}

func (ns pgNS) EndChildSessions(t testing.TB) {
	_, err := ns.env.Pool.Exec(context.Background(), `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1`, ns.env.Schema)
	if err != nil {
		t.Fatal(err)
	}
}

func (ns pgNS) Client(t testing.TB, opts *lease.Options) *leasetest.Conn {
	cfg, err := pgxpool.ParseConfig(ns.env.URL)
	if err != nil {
		t.Fatal(err)
	}
	var sent atomic.Int64
	cfg.ConnConfig.Tracer = countTracer{&sent}
	// The suite tests the protocol, not PostgreSQL's durability: without a
	// WAL flush per commit, 10,000 grants take seconds, not a minute.
	cfg.ConnConfig.RuntimeParams["synchronous_commit"] = "off"
	newClient := pglease.New
	var app string
	if ns.advisory {
		newClient = pglease.NewAdvisory
		app = fmt.Sprintf("leasetest-%d", appSeq.Add(1))
		cfg.ConnConfig.RuntimeParams["application_name"] = app
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	cut := pool.Close
	if ns.advisory {
		// Each held lease has a connection of its own, out of the pool:
		// cut those too, from the server's side.
		// pool.Close waits for them to come back, which the heartbeat
		// does once it finds them closed.
		cut = func() {
			ns.env.Pool.Exec(context.Background(), `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1`, app)
			go pool.Close()
		}
	}
	c, err := newClient(pool, opts)
	if err != nil {
		t.Fatal(err)
	}
	leasetest.CloseAtCleanup(t, c)
	return &leasetest.Conn{Client: c, Cut: cut, Sent: sent.Load}
}

// appSeq numbers the advisory clients' application names.
var appSeq atomic.Int64

// countTracer counts the statements a pool sends.
type countTracer struct{ n *atomic.Int64 }

func (c countTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	return ctx
}

func (countTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
