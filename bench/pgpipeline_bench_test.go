package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencekit/fencekit/lease"
	"github.com/fencekit/fencekit/lease/etcdlease"
	"github.com/fencekit/fencekit/lease/pglease"
)

// BenchmarkIssuerSaturation asks whether pglease.New would gain from
// batching concurrent calls as redislease does: saturationClients
// goroutines share one issuer, each acquiring and releasing its own name
// until b.N operations are done, on the server of FENCEKIT_POSTGRES_URL
// (synchronous_commit as the server has it), each mode in a schema of its
// own:
//
//	mode=pglease          one *lease.Client of pglease.New on a pgxpool of
//	                      the default size (4 connections on 2 vCPUs)
//	mode=pglease-64conns  the same with 64 connections: concurrent commits
//	                      share WAL flushes without any batching
//	mode=pipeline         a prototype of batching: the same statements
//	                      (recorded from pglease, sent with its arguments)
//	                      over the same 4 connections, each connection
//	                      sending all calls waiting when it is free as one
//	                      pipeline (pgconn.Pipeline), a Sync after each
//	                      statement, so each grant is its own implicit
//	                      transaction as in pglease and one failing
//	                      statement fails only itself; each call returns
//	                      when its own result is read
//	mode=pipeline-1tx     the same but each pipeline is one transaction
//	                      (BEGIN, the statements, COMMIT): one commit per
//	                      batch, every call returning after it. An upper
//	                      bound, not a design: a failing statement fails
//	                      its whole batch
//
// issuer=etcd/mode=etcdlease is etcdlease.New on a private one-member etcd,
// whose gRPC client already multiplexes concurrent calls on one
// connection: wal-fsyncs/op against raft-entries/op shows whether the
// server shares fsyncs between them.
//
// Metrics: acq-rel/s; client-cpu-ns/op, this process's CPU time (getrusage);
// postgres-cpu-ns/op, the CPU time of the connections' server backends
// (/proc/PID/schedstat: a server on this machine); rtt/op, round trips
// (statements for pglease, pipelines for the prototype) per operation;
// reads/op, the client's socket reads (Read calls) per operation.
//
// The server is shared with the load of the machine: compare modes within
// interleaved rounds (docs/performance.md, "Lease issuers"):
//
//	go test -c -o b.test . && for r in 1 2 3 4 5 6; do BENCH_ROUND=$r ./b.test -test.run '^$' -test.bench BenchmarkIssuerSaturation -test.benchtime 2000x; done
func BenchmarkIssuerSaturation(b *testing.B) {
	for _, mode := range rotated([]string{"pglease", "pglease-64conns", "pipeline", "pipeline-1tx"}) {
		b.Run("issuer=postgres/mode="+mode, func(b *testing.B) {
			p := &probe{}
			conns := int32(0) // pgxpool's default
			if mode == "pglease-64conns" {
				conns = saturationClients
			}
			var reads atomic.Int64
			pool := benchPoolConns(b, p, conns, &reads)
			if strings.HasPrefix(mode, "pipeline") {
				benchPipelineSaturation(b, pool, &reads, mode == "pipeline-1tx")
				return
			}
			c, err := pglease.New(pool, &lease.Options{KeyPrefix: uniqueKey("sat")})
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close(context.Background())
			benchPgleaseSaturation(b, p, pool, &reads, c)
		})
	}
	b.Run("issuer=etcd/mode=etcdlease", benchEtcdSaturation)
}

// benchEtcdSaturation runs etcdlease.New on a private one-member etcd
// (fsync on); wal-fsyncs/op and raft-entries/op are the server's
// etcd_disk_wal_fsync_duration_seconds_count and
// etcd_server_proposals_committed_total per operation, and
// etcd-cpu-ns/op its CPU time (/proc/PID/stat).
func benchEtcdSaturation(b *testing.B) {
	ctx := context.Background()
	p := &probe{}
	cli, cluster := benchEtcdCluster(b, p)
	c, err := etcdlease.New(cli, &lease.Options{KeyPrefix: uniqueKey("sat")})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close(ctx)
	names := satNames()
	m := cluster.Members[0]
	fsyncs0, entries0 := etcdCounters(b, m.ClientURL)
	srv0, err := ProcCPU(m.Pid())
	if err != nil {
		b.Fatal(err)
	}
	measureSaturation(b, nil, p.sent.Load, nil, func(g int) error {
		l, err := c.Acquire(ctx, names[g], issuerTTL)
		if err != nil {
			return err
		}
		return l.Release(ctx)
	})
	// The counters include the warm-up's saturationClients operations.
	srv, err := ProcCPU(m.Pid())
	if err != nil {
		b.Fatal(err)
	}
	fsyncs, entries := etcdCounters(b, m.ClientURL)
	n := float64(b.N + saturationClients)
	b.ReportMetric((fsyncs-fsyncs0)/n, "wal-fsyncs/op")
	b.ReportMetric((entries-entries0)/n, "raft-entries/op")
	b.ReportMetric(float64(srv-srv0)/n, "etcd-cpu-ns/op")
}

// etcdCounters reads the WAL fsyncs and committed Raft entries of the
// etcd member at clientURL.
func etcdCounters(b *testing.B, clientURL string) (fsyncs, entries float64) {
	resp, err := http.Get(clientURL + "/metrics")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		b.Fatal(err)
	}
	found := 0
	for line := range strings.Lines(string(body)) {
		name, v, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok {
			continue
		}
		var dst *float64
		switch name {
		case "etcd_disk_wal_fsync_duration_seconds_count":
			dst = &fsyncs
		case "etcd_server_proposals_committed_total":
			dst = &entries
		default:
			continue
		}
		if *dst, err = strconv.ParseFloat(v, 64); err != nil {
			b.Fatal(err)
		}
		found++
	}
	if found != 2 {
		b.Fatalf("etcd's /metrics lacks the WAL fsync or committed proposal counts")
	}
	return fsyncs, entries
}

// benchPoolConns is benchPool with a pool of n connections (0: pgxpool's
// default) whose socket reads reads counts.
func benchPoolConns(b *testing.B, p *probe, n int32, reads *atomic.Int64) *pgxpool.Pool {
	cfg := benchPool(b, p).Config()
	if n > 0 {
		cfg.MaxConns = n
	}
	cfg.ConnConfig.Tracer = probeTracer{p}
	cfg.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		return readCounter{c, reads}, err
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close) // before benchPool's cleanup drops the schema
	return pool
}

// readCounter counts a connection's Read calls.
type readCounter struct {
	net.Conn
	n *atomic.Int64
}

func (c readCounter) Read(p []byte) (int, error) {
	c.n.Add(1)
	return c.Conn.Read(p)
}

// poolPIDs opens every connection of pool and returns their server
// processes.
func poolPIDs(b *testing.B, pool *pgxpool.Pool) []uint32 {
	ctx := context.Background()
	var pids []uint32
	var held []*pgxpool.Conn
	for range pool.Config().MaxConns {
		c, err := pool.Acquire(ctx)
		if err != nil {
			b.Fatal(err)
		}
		held = append(held, c)
		pids = append(pids, c.Conn().PgConn().PID())
	}
	for _, c := range held {
		c.Release()
	}
	return pids
}

// satNames are the names of the saturation goroutines.
func satNames() []string {
	names := make([]string, saturationClients)
	for g := range names {
		names[g] = "sat-" + strconv.Itoa(g)
	}
	return names
}

// measureSaturation runs op from saturationClients goroutines after a
// warm-up of every goroutine's op, and reports the metrics of
// BenchmarkIssuerSaturation; trips returns the round trips so far, reads
// (nil: not counted) the socket reads.
func measureSaturation(b *testing.B, pids []uint32, trips, reads func() int64, op func(g int) error) {
	if reads == nil {
		reads = func() int64 { return 0 }
	}
	var wg sync.WaitGroup
	errs := make(chan error, saturationClients)
	for g := range saturationClients { // warm up: connections, prepared statements
		wg.Go(func() {
			if err := op(g); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	trips0, reads0, cpu0, srv0 := trips(), reads(), ProcessCPU(), backendsCPU(pids)
	elapsed := runConcurrently(b, saturationClients, op)
	t, r, cpu, srv := trips()-trips0, reads()-reads0, ProcessCPU()-cpu0, backendsCPU(pids)-srv0
	n := float64(b.N)
	b.ReportMetric(n/elapsed.Seconds(), "acq-rel/s")
	b.ReportMetric(float64(cpu)/n, "client-cpu-ns/op")
	if len(pids) > 0 && srv0 >= 0 {
		b.ReportMetric(float64(srv)/n, "postgres-cpu-ns/op")
	}
	b.ReportMetric(float64(t)/n, "rtt/op")
	if r > 0 {
		b.ReportMetric(float64(r)/n, "reads/op")
	}
}

func benchPgleaseSaturation(b *testing.B, p *probe, pool *pgxpool.Pool, reads *atomic.Int64, c *lease.Client) {
	ctx := context.Background()
	names := satNames()
	pids := poolPIDs(b, pool)
	measureSaturation(b, pids, p.sent.Load, reads.Load, func(g int) error {
		l, err := c.Acquire(ctx, names[g], issuerTTL)
		if err != nil {
			return err
		}
		return l.Release(ctx)
	})
}

// pgStatement is one statement pglease sent: its text and arguments.
type pgStatement struct {
	sql  string
	args []any
}

// recordTracer records the statements a pool's connections send.
type recordTracer struct {
	probeTracer
	mu   sync.Mutex
	sent []pgStatement
}

func (t *recordTracer) TraceQueryStart(ctx context.Context, c *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	t.mu.Lock()
	t.sent = append(t.sent, pgStatement{d.SQL, d.Args})
	t.mu.Unlock()
	return t.probeTracer.TraceQueryStart(ctx, c, d)
}

// pgleaseStatements returns the statements of one Acquire and one Release
// of a pglease.New client on a pool of one connection configured as pool
// (whose tracer must be a probeTracer).
func pgleaseStatements(b *testing.B, pool *pgxpool.Pool) (acquire, release pgStatement) {
	ctx := context.Background()
	cfg := pool.Config()
	rec := &recordTracer{probeTracer: cfg.ConnConfig.Tracer.(probeTracer)}
	cfg.ConnConfig.Tracer = rec
	cfg.MaxConns = 1
	one, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer one.Close()
	rc, err := pglease.New(one, &lease.Options{KeyPrefix: uniqueKey("record")})
	if err != nil {
		b.Fatal(err)
	}
	defer rc.Close(ctx)
	l, err := rc.Acquire(ctx, "record", issuerTTL)
	if err != nil {
		b.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		b.Fatal(err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.sent) != 2 || !strings.Contains(rec.sent[0].sql, "INSERT INTO fencekit_leases") ||
		!strings.Contains(rec.sent[1].sql, "'-infinity'") || len(rec.sent[0].args) != 3 || len(rec.sent[1].args) != 2 {
		b.Fatalf("pglease's Acquire and Release sent %d statements, not the acquire and release this benchmark knows: %v", len(rec.sent), rec.sent)
	}
	return rec.sent[0], rec.sent[1]
}

// pipeliner sends the statements of concurrent callers: each of its
// connections, when free, takes every call waiting and sends them as one
// pipeline (a free connection sends a lone call at once).
type pipeliner struct {
	reqs  chan *pipeReq
	trips atomic.Int64
	oneTx bool // a transaction per pipeline instead of one per statement
	wg    sync.WaitGroup
}

// pipeReq is one call: a prepared statement, its text arguments and, once
// done is closed, the first row of its result (text format) or its error.
type pipeReq struct {
	stmt    string
	params  [][]byte
	row     [][]byte
	err     error
	done    chan struct{}
	replied bool // done is closed (the sender's field)
}

// The prepared statements of a pipeliner's connections.
const (
	pipeAcquire = "fkbench_acquire"
	pipeRelease = "fkbench_release"
)

func newPipeliner(b *testing.B, conns []*pgconn.PgConn, acquire, release string, oneTx bool) *pipeliner {
	ctx := context.Background()
	q := &pipeliner{reqs: make(chan *pipeReq), oneTx: oneTx}
	for _, c := range conns {
		pl := c.StartPipeline(ctx)
		pl.SendPrepare(pipeAcquire, acquire, nil)
		pl.SendPrepare(pipeRelease, release, nil)
		if err := pl.Sync(); err != nil {
			b.Fatal(err)
		}
		if err := pl.Close(); err != nil {
			b.Fatal(err)
		}
		q.wg.Go(func() { q.serve(c) })
	}
	return q
}

// close ends the pipeliner's goroutines.
func (q *pipeliner) close() {
	close(q.reqs)
	q.wg.Wait()
}

// do sends one statement and returns its first row.
func (q *pipeliner) do(stmt string, params ...[]byte) ([][]byte, error) {
	r := &pipeReq{stmt: stmt, params: params, done: make(chan struct{})}
	q.reqs <- r
	<-r.done
	return r.row, r.err
}

// maxPipeline bounds the calls of one pipeline.
const maxPipeline = 256

func (q *pipeliner) serve(c *pgconn.PgConn) {
	batch := make([]*pipeReq, 0, maxPipeline)
	for r := range q.reqs {
		batch = append(batch[:0], r)
	more:
		for len(batch) < maxPipeline {
			select {
			case r, ok := <-q.reqs:
				if !ok {
					break more
				}
				batch = append(batch, r)
			default:
				break more
			}
		}
		q.send(c, batch)
	}
}

var errNoRow = errors.New("bench: pipeline: the statement returned no row")

// send sends batch as one pipeline, sets each call's row or error and
// closes its done: each as soon as its own transaction's result is read.
func (q *pipeliner) send(c *pgconn.PgConn, batch []*pipeReq) {
	pl := c.StartPipeline(context.Background())
	if q.oneTx {
		pl.SendQueryParams("BEGIN", nil, nil, nil, nil)
	}
	for _, r := range batch {
		pl.SendQueryPrepared(r.stmt, r.params, nil, nil)
		if !q.oneTx {
			pl.SendPipelineSync()
		}
	}
	if q.oneTx {
		pl.SendQueryParams("COMMIT", nil, nil, nil, nil)
		pl.SendPipelineSync()
	}
	q.trips.Add(1)
	err := pl.Flush()
	if err == nil && q.oneTx {
		err = pipeResult(pl, nil)
	}
	for _, r := range batch {
		if err != nil {
			r.err = err
			continue
		}
		r.err = pipeResult(pl, r)
		if q.oneTx {
			err = r.err // an error aborts the transaction
			continue
		}
		if _, serr := pl.GetResults(); serr != nil && r.err == nil {
			r.err = serr
		}
		if r.err == nil { // committed: reply now
			close(r.done)
			r.replied = true
		}
	}
	if q.oneTx && err == nil {
		err = pipeResult(pl, nil) // COMMIT: the grants are durable only now
	}
	if cerr := pl.Close(); err == nil {
		err = cerr
	}
	for _, r := range batch {
		if r.replied {
			continue
		}
		if r.err == nil {
			r.err = err
		}
		close(r.done)
	}
}

// pipeResult reads the next result of pl into r's row (r nil: discard it).
func pipeResult(pl *pgconn.Pipeline, r *pipeReq) error {
	res, err := pl.GetResults()
	if err != nil {
		return err
	}
	rr, ok := res.(*pgconn.ResultReader)
	if !ok {
		return fmt.Errorf("bench: pipeline: got %T, want a result", res)
	}
	for rr.NextRow() {
		if r != nil && r.row == nil {
			for _, v := range rr.Values() {
				r.row = append(r.row, append([]byte(nil), v...))
			}
		}
	}
	if _, err := rr.Close(); err != nil {
		return err
	}
	if r != nil && r.row == nil {
		return errNoRow
	}
	return nil
}

// textParam is v as a text-format parameter.
func textParam(v any) []byte {
	switch v := v.(type) {
	case string:
		return []byte(v)
	case int64:
		return strconv.AppendInt(nil, v, 10)
	}
	panic(fmt.Sprintf("bench: no text form for %T", v))
}

// benchPipelineSaturation runs the prototype: every goroutine's acquire,
// then its release, through one pipeliner on the pool's connections, with
// the arguments pglease sent for the recorded call (another name, the same
// TTL and identity).
func benchPipelineSaturation(b *testing.B, pool *pgxpool.Pool, reads *atomic.Int64, oneTx bool) {
	ctx := context.Background()
	acquire, release := pgleaseStatements(b, pool)
	recorded, _ := acquire.args[0].(string)
	prefix, _, ok := strings.Cut(recorded, ":")
	if !ok {
		b.Fatalf("pglease's row key %q has no prefix", recorded)
	}
	ttl, identity := textParam(acquire.args[1]), textParam(acquire.args[2])
	var held []*pgxpool.Conn
	var conns []*pgconn.PgConn
	var pids []uint32
	for range pool.Config().MaxConns {
		hc, err := pool.Acquire(ctx)
		if err != nil {
			b.Fatal(err)
		}
		held = append(held, hc)
		conns = append(conns, hc.Conn().PgConn())
		pids = append(pids, hc.Conn().PgConn().PID())
	}
	defer func() {
		for _, hc := range held {
			hc.Release()
		}
	}()
	q := newPipeliner(b, conns, acquire.sql, release.sql, oneTx)
	defer q.close()
	keys := make([][]byte, saturationClients)
	for g, name := range satNames() {
		keys[g] = []byte(prefix + ":" + name)
	}
	measureSaturation(b, pids, q.trips.Load, reads.Load, func(g int) error {
		row, err := q.do(pipeAcquire, keys[g], ttl, identity)
		if err != nil {
			return err
		}
		if len(row) != 4 || string(row[0]) != "t" {
			return fmt.Errorf("bench: pipeline: acquire of %s refused: %q", keys[g], row)
		}
		row, err = q.do(pipeRelease, keys[g], row[1])
		if err != nil {
			return err
		}
		if len(row) != 3 || string(row[0]) != "t" {
			return fmt.Errorf("bench: pipeline: release of %s failed: %q", keys[g], row)
		}
		return nil
	})
}
