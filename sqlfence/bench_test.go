package sqlfence_test

import (
	"context"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/sqlfence"
)

// The benchmarks interleave the fenced operation and its unfenced twin in
// every iteration (alternating which goes first), timing each, so that the
// ratio is measured under the same load, which matters on a shared machine.
// Reported metrics:
//
//	plain-ns/op, fenced-ns/op  latency of each (per client)
//	fenced/plain-throughput    plain-ns/op ÷ fenced-ns/op (1.0 = free)
//	plain-stmts/op, fenced-stmts/op  statements sent (a batch counts once),
//	                                 each one round trip once pgx has cached
//	                                 the prepared statement
//	clients                    concurrent clients on a pool of that size

type stmtCounterKey struct{}

// ctxCounter counts statements sent with a context carrying a counter.
type ctxCounter struct{}

func (ctxCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	if c, ok := ctx.Value(stmtCounterKey{}).(*atomic.Int64); ok {
		c.Add(1)
	}
	return ctx
}

func (ctxCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// A batch is one round trip: it counts as one statement.
func (c ctxCounter) TraceBatchStart(ctx context.Context, conn *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return c.TraceQueryStart(ctx, conn, pgx.TraceQueryStartData{})
}

func (ctxCounter) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

func (ctxCounter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

func benchPool(b *testing.B, url string, clients int) *pgxpool.Pool {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		b.Fatal(err)
	}
	cfg.ConnConfig.Tracer = ctxCounter{}
	cfg.MaxConns = int32(clients)
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	return pool
}

// pairOp runs one operation for client c at iteration i.
type pairOp func(ctx context.Context, pool *pgxpool.Pool, c int, i int) error

// runPair runs plain and fenced interleaved with clients concurrent clients.
func runPair(b *testing.B, pool *pgxpool.Pool, clients int, plain, fenced pairOp) {
	var plainNs, fencedNs, plainStmts, fencedStmts, ops atomic.Int64
	var nextClient atomic.Int64
	timed := func(ctx context.Context, op pairOp, ns *atomic.Int64, c, i int) {
		t0 := time.Now()
		if err := op(ctx, pool, c, i); err != nil {
			b.Error(err)
		}
		ns.Add(int64(time.Since(t0)))
	}
	body := func(next func() bool) {
		c := int(nextClient.Add(1) - 1)
		pctx := context.WithValue(context.Background(), stmtCounterKey{}, &plainStmts)
		fctx := context.WithValue(context.Background(), stmtCounterKey{}, &fencedStmts)
		// Warm pgx's statement cache on this client's connection (not
		// counted: the context carries no counter).
		_ = plain(context.Background(), pool, c, 0)
		_ = fenced(context.Background(), pool, c, 0)
		for i := 1; next(); i++ {
			if i%2 == 0 {
				timed(pctx, plain, &plainNs, c, i)
				timed(fctx, fenced, &fencedNs, c, i)
			} else {
				timed(fctx, fenced, &fencedNs, c, i)
				timed(pctx, plain, &plainNs, c, i)
			}
			ops.Add(1)
		}
	}
	b.ResetTimer()
	if clients == 1 {
		n := 0
		body(func() bool { n++; return n <= b.N })
	} else {
		b.SetParallelism((clients + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
		b.RunParallel(func(pb *testing.PB) { body(pb.Next) })
	}
	b.StopTimer()
	n := float64(max(ops.Load(), 1))
	p, f := float64(plainNs.Load())/n, float64(fencedNs.Load())/n
	b.ReportMetric(p, "plain-ns/op")
	b.ReportMetric(f, "fenced-ns/op")
	b.ReportMetric(p/f, "fenced/plain-throughput")
	b.ReportMetric(float64(plainStmts.Load())/n, "plain-stmts/op")
	b.ReportMetric(float64(fencedStmts.Load())/n, "fenced-stmts/op")
	b.ReportMetric(float64(nextClient.Load()), "clients")
}

// BenchmarkRowUpdate compares Table.Update (fenced by lock_version) with
// the same UPDATE without the version check, each client on its own row.
func BenchmarkRowUpdate(b *testing.B) {
	env := setup(b)
	exec(b, env.Pool, `CREATE TABLE acct (id int PRIMARY KEY, balance bigint NOT NULL, lock_version bigint NOT NULL DEFAULT 0)`,
		`INSERT INTO acct (id, balance) SELECT g, 0 FROM generate_series(0, 255) g`)
	tbl, err := sqlfence.NewTable("acct", "id", "lock_version", "balance")
	if err != nil {
		b.Fatal(err)
	}
	plain := func(ctx context.Context, pool *pgxpool.Pool, c, i int) error {
		_, err := pool.Exec(ctx, `UPDATE acct SET balance = $2 WHERE id = $1`, c, i)
		return err
	}
	var tok atomic.Int64
	fenced := func(ctx context.Context, pool *pgxpool.Pool, c, i int) error {
		return tbl.Update(ctx, pool, c, fence.Token(tok.Add(1)), i)
	}
	for _, clients := range []int{1, 8} {
		b.Run(clientsName(clients), func(b *testing.B) {
			runPair(b, benchPool(b, env.URL, clients), clients, plain, fenced)
		})
	}
}

// BenchmarkInTx compares InTx around one UPDATE with a plain transaction
// around the same UPDATE, each client on its own resource and row.
func BenchmarkInTx(b *testing.B) {
	env := setup(b)
	exec(b, env.Pool, `CREATE TABLE data (id int PRIMARY KEY, v bigint NOT NULL)`,
		`INSERT INTO data SELECT g, 0 FROM generate_series(0, 255) g`)
	update := func(ctx context.Context, tx pgx.Tx, c, i int) error {
		_, err := tx.Exec(ctx, `UPDATE data SET v = $2 WHERE id = $1`, c, i)
		return err
	}
	plain := func(ctx context.Context, pool *pgxpool.Pool, c, i int) error {
		return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return update(ctx, tx, c, i) })
	}
	resources := make([]string, 256)
	for i := range resources {
		resources[i] = "bench-" + strconv.Itoa(i)
	}
	var tok atomic.Int64
	fenced := func(ctx context.Context, pool *pgxpool.Pool, c, i int) error {
		return sqlfence.InTx(ctx, pool, resources[c], fence.Token(tok.Add(1)), func(tx pgx.Tx) error {
			return update(ctx, tx, c, i)
		})
	}
	for _, clients := range []int{1, 8} {
		b.Run(clientsName(clients), func(b *testing.B) {
			runPair(b, benchPool(b, env.URL, clients), clients, plain, fenced)
		})
	}
}

func clientsName(n int) string { return "clients=" + strconv.Itoa(n) }

// BenchmarkExec compares Exec (claim and UPDATE in one pipeline) with, as
// "plain", a transaction around the same UPDATE (against=tx) and the
// UPDATE alone in autocommit (against=autocommit), each client on its own
// resource and row. Targets: ≥ 2× a transaction's throughput and ≤ 1.15×
// an autocommit statement's latency (fenced/plain-throughput ≥ 0.87).
func BenchmarkExec(b *testing.B) {
	env := setup(b)
	exec(b, env.Pool, `CREATE TABLE data (id int PRIMARY KEY, v bigint NOT NULL)`,
		`INSERT INTO data SELECT g, 0 FROM generate_series(0, 255) g`)
	const upd = `UPDATE data SET v = $2 WHERE id = $1`
	against := map[string]pairOp{
		"tx": func(ctx context.Context, pool *pgxpool.Pool, c, i int) error {
			return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { _, err := tx.Exec(ctx, upd, c, i); return err })
		},
		"autocommit": func(ctx context.Context, pool *pgxpool.Pool, c, i int) error {
			_, err := pool.Exec(ctx, upd, c, i)
			return err
		},
	}
	resources := make([]string, 256)
	for i := range resources {
		resources[i] = "bench-exec-" + strconv.Itoa(i)
	}
	var tok atomic.Int64
	fenced := func(ctx context.Context, pool *pgxpool.Pool, c, i int) error {
		_, err := sqlfence.Exec(ctx, pool, resources[c], fence.Token(tok.Add(1)), upd, c, i)
		return err
	}
	for _, name := range []string{"tx", "autocommit"} {
		for _, clients := range []int{1, 8} {
			b.Run("against="+name+"/"+clientsName(clients), func(b *testing.B) {
				runPair(b, benchPool(b, env.URL, clients), clients, against[name], fenced)
			})
		}
	}
}
