package sqlfence_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/testenv"
	"github.com/fencekit/fencekit/sqlfence"
)

// setup returns a fresh schema with fencekit's migrations applied.
func setup(tb testing.TB) *testenv.PostgresEnv { return testenv.PostgresMigrated(tb) }

// testCtx returns a context bounded for one test.
func testCtx(tb testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	tb.Cleanup(cancel)
	return ctx
}

// execer is what *pgx.Conn, *pgxpool.Pool and pgx.Tx have for statements
// without results.
type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// exec runs statements, failing the test on error.
func exec(tb testing.TB, db execer, sqls ...string) {
	tb.Helper()
	for _, s := range sqls {
		if _, err := db.Exec(testCtx(tb), s); err != nil {
			tb.Fatalf("%s: %v", s, err)
		}
	}
}

// queryCounter is a pgx tracer counting the statements a connection sends.
type queryCounter struct{ n atomic.Int64 }

func (c *queryCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	return ctx
}

func (c *queryCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// countingPool opens a pool on url whose statements are counted.
func countingPool(tb testing.TB, url string, maxConns int32) (*pgxpool.Pool, *queryCounter) {
	tb.Helper()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		tb.Fatal(err)
	}
	qc := &queryCounter{}
	cfg.ConnConfig.Tracer = qc
	if maxConns > 0 {
		cfg.MaxConns = maxConns
	}
	pool, err := pgxpool.NewWithConfig(testCtx(tb), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(pool.Close)
	return pool, qc
}

// connect opens a dedicated connection, closed at cleanup.
func connect(tb testing.TB, url string) *pgx.Conn {
	tb.Helper()
	conn, err := pgx.Connect(testCtx(tb), url)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// sqlRecorder is a pgx tracer keeping the text of every statement a
// connection sends.
type sqlRecorder struct {
	mu   sync.Mutex
	sqls []string
}

func (r *sqlRecorder) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	r.mu.Lock()
	r.sqls = append(r.sqls, d.SQL)
	r.mu.Unlock()
	return ctx
}

func (r *sqlRecorder) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// take returns the statements recorded since the last take.
func (r *sqlRecorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.sqls
	r.sqls = nil
	return s
}

// recordingConn opens a connection whose statements are recorded.
func recordingConn(tb testing.TB, url string) (*pgx.Conn, *sqlRecorder) {
	tb.Helper()
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		tb.Fatal(err)
	}
	rec := &sqlRecorder{}
	cfg.Tracer = rec
	conn, err := pgx.ConnectConfig(testCtx(tb), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { conn.Close(context.Background()) })
	return conn, rec
}

// current reads resource's committed guard token, 0 when it has no row.
func current(ctx context.Context, db sqlfence.Querier, resource string) (fence.Token, error) {
	var tok int64
	err := db.QueryRow(ctx, `SELECT coalesce(max(token), 0) FROM fencekit_tokens WHERE resource = $1`, resource).Scan(&tok)
	return fence.Token(tok), err
}

// lockVersion reads the lock_version of table's row with id (0 for NULL).
func lockVersion(ctx context.Context, db sqlfence.Querier, table string, id any) (fence.Token, error) {
	var v int64
	err := db.QueryRow(ctx, `SELECT coalesce(lock_version, 0) FROM `+table+` WHERE id = $1`, id).Scan(&v)
	return fence.Token(v), err
}
