package bench

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/fencekit/fencekit/internal/testenv"
	"github.com/fencekit/fencekit/lease"
	"github.com/fencekit/fencekit/lease/etcdlease"
	"github.com/fencekit/fencekit/lease/pglease"
	"github.com/fencekit/fencekit/lease/redislease"
)

// BenchmarkIssuer compares the stores behind one *lease.Client:
//
//	op=acquire-release  Acquire then Release of one name, timed together
//	op=renew            heartbeat renewals of one held lease, back to back
//	                    (RenewInterval 1ns), each timed from the previous
//	                    one's completion
//	op=handoff          Release of a held name to the grant of a waiter
//	                    (AcquireWait, waiting 10ms already): the wake-up
//	                    path (pub/sub, LISTEN/NOTIFY, a watch)
//
// issuer=redis is a private redis-server (no persistence), postgres the
// server of FENCEKIT_POSTGRES_URL (synchronous_commit on: a WAL flush per
// grant), postgres-advisory the same server with pglease.NewAdvisory (renew
// is an empty statement on the lease's connection), etcd a private one-member
// etcd that fsyncs, zookeeper a private standalone ZooKeeper that fsyncs
// (session timeout = TTL). Metrics: p50-ns and
// p99-ns, and rtt/op, the requests the client sent per operation.
func BenchmarkIssuer(b *testing.B) {
	for _, op := range []struct {
		name string
		fn   func(*testing.B, *probe, *lease.Client)
	}{
		{"acquire-release", benchIssuerAcquireRelease},
		{"renew", benchIssuerRenew},
		{"handoff", benchIssuerHandoff},
	} {
		b.Run("op="+op.name, func(b *testing.B) {
			for _, name := range rotated([]string{"redis", "postgres", "postgres-advisory", "etcd", "zookeeper"}) {
				b.Run("issuer="+name, func(b *testing.B) {
					p := &probe{}
					interval := time.Nanosecond // renewals back to back
					if op.name == "handoff" {
						interval = 0 // the default, TTL/3
					}
					c := newIssuer(b, name, p, interval)
					op.fn(b, p, c)
				})
			}
		})
	}
}

// probe counts the requests a client sends and records when each request
// that ends a renewal (Redis: the script; PostgreSQL: the statement; etcd:
// the transaction after the keepalive) completes.
type probe struct {
	sent  atomic.Int64
	mu    sync.Mutex
	marks []time.Time
	want  int           // close done at this many marks
	done  chan struct{} // nil when not armed
}

func (p *probe) mark() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done == nil {
		return
	}
	p.marks = append(p.marks, time.Now())
	if len(p.marks) == p.want {
		close(p.done)
		p.done = nil
	}
}

// arm starts recording n marks and returns a channel closed at the last.
func (p *probe) arm(n int) <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.marks, p.want = p.marks[:0], n
	p.done = make(chan struct{})
	return p.done
}

func (p *probe) gaps() []time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	g := make([]time.Duration, 0, len(p.marks))
	for i := 1; i < len(p.marks); i++ {
		g = append(g, p.marks[i].Sub(p.marks[i-1]))
	}
	return g
}

func newIssuer(b *testing.B, name string, p *probe, interval time.Duration) *lease.Client {
	opts := &lease.Options{KeyPrefix: uniqueKey(name), RenewInterval: interval}
	var c *lease.Client
	var err error
	switch name {
	case "redis":
		env := newRedis(b, opts.KeyPrefix)
		env.Client.AddHook(probeHook{p})
		c, err = redislease.New(env.Client, opts)
	case "postgres":
		c, err = pglease.New(benchPool(b, p), opts)
	case "postgres-advisory":
		c, err = pglease.NewAdvisory(benchPool(b, p), opts)
	case "etcd":
		c, err = etcdlease.New(benchEtcd(b, p), opts)
	case "zookeeper":
		c, err = newZooKeeperIssuer(b, p, opts)
	}
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// benchPool returns a pool on a fresh schema holding fencekit_leases.
func benchPool(b *testing.B, p *probe) *pgxpool.Pool {
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(servers.PostgresURL())
	if err != nil {
		b.Fatal(err)
	}
	schema := "fkbench_" + uniqueKey()
	for i := range []byte(schema) {
		if schema[i] == '-' {
			schema = schema[:i] + "_" + schema[i+1:]
		}
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	cfg.ConnConfig.Tracer = probeTracer{p}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := pool.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		b.Fatal(err)
	}
	testenv.MigrateLeases(b, pool)
	b.Cleanup(func() {
		pool.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
		pool.Close()
	})
	return pool
}

// benchEtcd starts a private one-member etcd (fsync on) and returns a
// client of it.
func benchEtcd(b *testing.B, p *probe) *clientv3.Client {
	cli, _ := benchEtcdCluster(b, p)
	return cli
}

// benchEtcdCluster is benchEtcd, also returning the cluster.
func benchEtcdCluster(b *testing.B, p *probe) (*clientv3.Client, *testenv.EtcdCluster) {
	cluster := testenv.StartEtcdCluster(b, 1)
	unary := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		p.sent.Add(1)
		err := invoker(ctx, method, req, reply, cc, opts...)
		if method == "/etcdserverpb.KV/Txn" {
			p.mark()
		}
		return err
	}
	stream := func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		p.sent.Add(1)
		return streamer(ctx, desc, cc, method, opts...)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: cluster.Endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop(),
		DialOptions: []grpc.DialOption{grpc.WithChainUnaryInterceptor(unary), grpc.WithChainStreamInterceptor(stream)}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cli.Close() })
	return cli, cluster
}

type probeHook struct{ p *probe }

func (h probeHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h probeHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.p.sent.Add(1)
		err := next(ctx, cmd)
		h.p.mark()
		return err
	}
}

func (h probeHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.p.sent.Add(1)
		err := next(ctx, cmds)
		h.p.mark()
		return err
	}
}

type probeTracer struct{ p *probe }

func (t probeTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	t.p.sent.Add(1)
	return ctx
}

func (t probeTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) { t.p.mark() }

// issuerTTL is the TTL of the benchmarks' leases (whole seconds, for etcd).
const issuerTTL = 10 * time.Second

func benchIssuerAcquireRelease(b *testing.B, p *probe, c *lease.Client) {
	ctx := context.Background()
	acquireRelease := func() {
		l, err := c.Acquire(ctx, "ar", issuerTTL)
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			b.Fatal(err)
		}
	}
	for range 10 { // warm up: connections, prepared statements, scripts
		acquireRelease()
	}
	lat := make([]time.Duration, b.N)
	sent := p.sent.Load()
	b.ResetTimer()
	for i := range b.N {
		start := time.Now()
		acquireRelease()
		lat[i] = time.Since(start)
	}
	b.StopTimer()
	b.ReportMetric(float64(p.sent.Load()-sent)/float64(b.N), "rtt/op")
	reportPercentiles(b, lat)
}

func benchIssuerRenew(b *testing.B, p *probe, c *lease.Client) {
	ctx := context.Background()
	l, err := c.Acquire(ctx, "renew", issuerTTL)
	if err != nil {
		b.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // warm up
	sent := p.sent.Load()
	b.ResetTimer()
	select {
	case <-p.arm(b.N + 1):
	case <-time.After(2 * time.Minute):
		b.Fatalf("%d of %d renewals in two minutes", len(p.gaps()), b.N)
	}
	b.StopTimer()
	b.ReportMetric(float64(p.sent.Load()-sent)/float64(b.N+1), "rtt/op")
	if err := l.Release(ctx); err != nil {
		b.Fatal(err)
	}
	reportPercentiles(b, p.gaps())
}

func benchIssuerHandoff(b *testing.B, p *probe, c *lease.Client) {
	ctx := context.Background()
	lat := make([]time.Duration, b.N)
	b.ResetTimer()
	for i := range b.N + 3 { // 3 warm-up hand-offs
		b.StopTimer()
		l, err := c.Acquire(ctx, "handoff", issuerTTL)
		if err != nil {
			b.Fatal(err)
		}
		got := make(chan *lease.Lease, 1)
		go func() {
			l2, err := c.AcquireWait(ctx, "handoff", issuerTTL)
			if err != nil {
				b.Error(err)
			}
			got <- l2
		}()
		time.Sleep(10 * time.Millisecond) // refused, and waiting
		b.StartTimer()
		start := time.Now()
		if err := l.Release(ctx); err != nil {
			b.Fatal(err)
		}
		l2 := <-got
		if i >= 3 {
			lat[i-3] = time.Since(start)
		}
		b.StopTimer()
		if l2 == nil {
			return
		}
		if err := l2.Release(ctx); err != nil {
			b.Fatal(err)
		}
	}
	reportPercentiles(b, lat)
}
