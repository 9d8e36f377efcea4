package bench

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/migrations"
	"github.com/fencekit/fencekit/sqlfence"
)

// sqlClients are the numbers of concurrent writers; each writes its own row
// (and, in guard mode, its own resource), so the numbers measure the cost of
// fencing, not contention on one row.
var sqlClients = []int{1, 8}

// sqlToken is the counter fenced writes take their tokens from: one for the
// whole binary, so each row and resource only ever sees newer tokens.
var sqlToken atomic.Int64

const plainUpdate = `UPDATE accounts SET balance = $2 WHERE id = $1`

// BenchmarkSQL compares fenced writes with the same writes unfenced, on one
// pgxpool, in a schema of its own (dropped at the end):
//
//	write=statement    mode=plain         UPDATE accounts SET balance = $2 WHERE id = $1 (autocommit)
//	                   mode=fenced        sqlfence Table.Update: the same UPDATE with
//	                                      "AND lock_version <= $tok", setting lock_version,
//	                                      in one statement (row / lock_version mode)
//	                   mode=fenced-guard  the same through Table.WithGuard: the statement
//	                                      also claims the client's guard row
//	                   mode=fenced-exec   sqlfence.Exec: a claim and the UPDATE in one pipeline
//	                   mode=noop-pipeline the same pipeline with a no-op in the claim's place
//	                                      (SELECT $1::text, $2::bigint): what any second
//	                                      statement costs
//	write=transaction  mode=plain         BEGIN; the UPDATE; COMMIT
//	                   mode=fenced        sqlfence.InTx: BEGIN; claim the guard row;
//	                                      the UPDATE; COMMIT (guard mode)
//	                   mode=fenced-newtoken  the same, each write with a new token
//
// Each client takes one token when it starts and presents it in every
// write, as a lease holder does; in mode=fenced-newtoken every write is a
// new holder's first, so every claim stores a new token.
//
// ns/op is wall time per write with all clients running (so 1e9/ns/op is the
// throughput, also reported as writes/s); client-cpu-ns/op is this
// process's CPU time per write and postgres-cpu-ns/op the pool's server
// backends' (from /proc/PID/schedstat: a server on this machine), which
// the machine's load moves less than the wall time. The pool's sessions run with
// synchronous_commit off, unless BENCH_SQL_SYNC=1.
func BenchmarkSQL(b *testing.B) {
	db := newSQLEnv(b)
	table, err := sqlfence.NewTable("accounts", "id", "lock_version", "balance")
	if err != nil {
		b.Fatal(err)
	}
	guarded := make([]*sqlfence.Table, sqlClients[len(sqlClients)-1])
	for c := range guarded {
		guarded[c] = table.WithGuard("acct-" + strconv.Itoa(c))
	}
	type writer func(ctx context.Context, client int, tok fence.Token) error
	kinds := []struct {
		write string
		modes map[string]writer
	}{
		{"statement", map[string]writer{
			"plain": func(ctx context.Context, c int, tok fence.Token) error {
				return execOne(ctx, db.pool, plainUpdate, c, int64(tok))
			},
			"fenced": func(ctx context.Context, c int, tok fence.Token) error {
				return table.Update(ctx, db.pool, c, tok, int64(tok))
			},
			"fenced-guard": func(ctx context.Context, c int, tok fence.Token) error {
				return guarded[c].Update(ctx, db.pool, c, tok, int64(tok))
			},
			"fenced-exec": func(ctx context.Context, c int, tok fence.Token) error {
				return fencedExec(ctx, db.pool, c, tok)
			},
			"noop-pipeline": func(ctx context.Context, c int, tok fence.Token) error {
				return noopPipeline(ctx, db.pool, c, tok)
			},
		}},
		{"transaction", map[string]writer{
			"plain": func(ctx context.Context, c int, tok fence.Token) error {
				return pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
					return execOne(ctx, tx, plainUpdate, c, int64(tok))
				})
			},
			"fenced": func(ctx context.Context, c int, tok fence.Token) error {
				return fencedTx(ctx, db.pool, c, tok)
			},
			"fenced-newtoken": func(ctx context.Context, c int, _ fence.Token) error {
				return fencedTx(ctx, db.pool, c, fence.Token(sqlToken.Add(1)))
			},
			"fenced-exec": func(ctx context.Context, c int, tok fence.Token) error {
				return fencedExec(ctx, db.pool, c, tok)
			},
		}},
	}
	for _, k := range kinds {
		for _, clients := range sqlClients {
			for _, mode := range rotated([]string{"plain", "fenced", "fenced-guard", "fenced-newtoken", "fenced-exec", "noop-pipeline"}) {
				w, ok := k.modes[mode]
				if !ok {
					continue
				}
				name := fmt.Sprintf("write=%s/clients=%d/mode=%s", k.write, clients, mode)
				b.Run(name, func(b *testing.B) { runWriters(b, db, clients, w) })
			}
		}
	}
}

// fencedTx is client c's InTx around plainUpdate.
func fencedTx(ctx context.Context, pool *pgxpool.Pool, c int, tok fence.Token) error {
	return sqlfence.InTx(ctx, pool, "acct-"+strconv.Itoa(c), tok, func(tx pgx.Tx) error {
		return execOne(ctx, tx, plainUpdate, c, int64(tok))
	})
}

// fencedExec is client c's sqlfence.Exec of plainUpdate: one round trip.
func fencedExec(ctx context.Context, pool *pgxpool.Pool, c int, tok fence.Token) error {
	_, err := sqlfence.Exec(ctx, pool, "acct-"+strconv.Itoa(c), tok, plainUpdate, c, int64(tok))
	return err
}

// noopPipeline sends the pipeline sqlfence.Exec sends for plainUpdate with
// a no-op statement in the claim's place.
func noopPipeline(ctx context.Context, pool *pgxpool.Pool, c int, tok fence.Token) error {
	b := &pgx.Batch{}
	b.Queue(`SELECT $1::text, $2::bigint`, "acct-"+strconv.Itoa(c), int64(tok))
	b.Queue(plainUpdate, c, int64(tok))
	br := pool.SendBatch(ctx, b)
	_, err := br.Exec()
	if err == nil {
		var tag pgconn.CommandTag
		if tag, err = br.Exec(); err == nil && tag.RowsAffected() != 1 {
			err = fmt.Errorf("bench: %s changed %d rows, want 1", plainUpdate, tag.RowsAffected())
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return err
}

// runWriters runs b.N writes spread over clients goroutines, each client
// presenting one token of its own.
func runWriters(b *testing.B, db *sqlEnv, clients int, write func(context.Context, int, fence.Token) error) {
	ctx := context.Background()
	var next atomic.Int64
	errs := make(chan error, clients)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0, srv0 := ProcessCPU(), backendsCPU(db.pids)
	start := time.Now()
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			tok := fence.Token(sqlToken.Add(1))
			for next.Add(1) <= int64(b.N) {
				if err := write(ctx, c, tok); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu, srv := ProcessCPU()-cpu0, backendsCPU(db.pids)-srv0
	b.StopTimer()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "writes/s")
	b.ReportMetric(float64(cpu)/float64(b.N), "client-cpu-ns/op")
	if srv0 >= 0 {
		b.ReportMetric(float64(srv)/float64(b.N), "postgres-cpu-ns/op")
	}
}

// backendsCPU returns the CPU time the server processes pids have used, in
// ns (the first field of /proc/PID/schedstat), or -1 when one cannot be
// read (a server on another machine).
func backendsCPU(pids []uint32) time.Duration {
	var sum time.Duration
	for _, pid := range pids {
		b, err := os.ReadFile("/proc/" + strconv.FormatUint(uint64(pid), 10) + "/schedstat")
		if err != nil {
			return -1
		}
		f, _, _ := strings.Cut(string(b), " ")
		ns, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return -1
		}
		sum += time.Duration(ns)
	}
	return sum
}

// execer is what *pgxpool.Pool and pgx.Tx have in common for Exec.
type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// execOne runs sql and checks that it changed exactly one row.
func execOne(ctx context.Context, db execer, sql string, args ...any) error {
	tag, err := db.Exec(ctx, sql, args...)
	if err != nil {
		return err
	}
	if n := tag.RowsAffected(); n != 1 {
		return fmt.Errorf("bench: %s changed %d rows, want 1", sql, n)
	}
	return nil
}

// sqlEnv is the benchmark's schema and pool.
type sqlEnv struct {
	pool *pgxpool.Pool
	pids []uint32 // the pool's server backends
}

// newSQLEnv creates a schema of its own with fencekit's migrations and an
// accounts table holding one row per client, and drops it at cleanup.
func newSQLEnv(b *testing.B) *sqlEnv {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	base := servers.PostgresURL()
	schema := "fkbench_" + strconv.Itoa(int(time.Now().UnixNano()%1e9))
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		b.Fatalf("bench: PostgreSQL at %s: %v", EnvPostgresURL, err)
	}
	defer admin.Close(context.Background())
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			b.Errorf("bench: drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			b.Errorf("bench: drop schema %s: %v", schema, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		b.Fatalf("bench: %s: %v", EnvPostgresURL, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	if err := migrations.Up(ctx, u.String()); err != nil {
		b.Fatal(err)
	}
	cfg, err := pgxpool.ParseConfig(u.String())
	if err != nil {
		b.Fatal(err)
	}
	cfg.MaxConns = int32(2 * sqlClients[len(sqlClients)-1])
	if os.Getenv("BENCH_SQL_SYNC") != "1" {
		// What the modes differ in is their statements; every commit's
		// fsync is the same for all of them, and on a disk shared with
		// other clients its wait varies by more than the statements cost
		// (see docs/performance.md). BENCH_SQL_SYNC=1 keeps it.
		cfg.ConnConfig.RuntimeParams["synchronous_commit"] = "off"
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	if _, err := pool.Exec(ctx, `CREATE TABLE accounts (id bigint PRIMARY KEY, balance bigint NOT NULL,
		lock_version bigint NOT NULL DEFAULT 0)`); err != nil {
		b.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO accounts (id, balance) SELECT g, 0 FROM generate_series(0, 63) g`); err != nil {
		b.Fatal(err)
	}
	// Open every connection now, so no benchmark pays for connecting.
	conns := make([]*pgxpool.Conn, 0, pool.Config().MaxConns)
	for range pool.Config().MaxConns {
		c, err := pool.Acquire(ctx)
		if err != nil {
			b.Fatal(err)
		}
		conns = append(conns, c)
	}
	env := &sqlEnv{pool: pool}
	for _, c := range conns {
		env.pids = append(env.pids, c.Conn().PgConn().PID())
		c.Release()
	}
	return env
}
