package redislease

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fencekit/fencekit/internal/testenv"
	"github.com/fencekit/fencekit/lease"
)

// concurrentAcquireRelease runs g goroutines that each acquire and release
// names of their own n times on c, failing on any error.
func concurrentAcquireRelease(t *testing.T, c *lease.Client, prefix string, g, n int) {
	t.Helper()
	ctx := context.Background()
	var wg sync.WaitGroup
	for i := range g {
		wg.Go(func() {
			for j := range n {
				l, err := c.Acquire(ctx, fmt.Sprintf("%s-%d-%d", prefix, i, j), time.Minute)
				if err != nil {
					t.Errorf("Acquire: %v", err)
					return
				}
				if err := l.Release(ctx); err != nil {
					t.Errorf("Release: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestBatchSharesRoundTrips: concurrent acquires and releases of one Client
// take far fewer round trips than calls, while a lone call takes exactly
// one; with Options.NoBatch every call takes its own.
func TestBatchSharesRoundTrips(t *testing.T) {
	env := testenv.Redis(t)
	const g, n = 32, 20
	const calls = 2 * g * n
	for _, noBatch := range []bool{false, true} {
		t.Run(fmt.Sprintf("NoBatch=%v", noBatch), func(t *testing.T) {
			rdb := redis.NewClient(&redis.Options{Addr: env.Addr, PoolSize: g})
			t.Cleanup(func() { rdb.Close() })
			rt := &scriptTrips{}
			rdb.AddHook(rt)
			c := mustNew(t, rdb, &lease.Options{NoBatch: noBatch})
			defer c.Close(context.Background())
			prefix := env.Name(fmt.Sprintf("batch-%v", noBatch))
			release(t, mustAcquire(t, c, prefix+"-warm", time.Minute)) // loads the scripts

			rt.reset()
			l := mustAcquire(t, c, prefix+"-lone", time.Minute)
			if n := rt.trips.Load(); n != 1 {
				t.Errorf("a lone Acquire took %d round trips, want 1", n)
			}
			release(t, l)
			if n := rt.trips.Load(); n != 2 {
				t.Errorf("a lone Release took %d round trips, want 1", n-1)
			}

			rt.reset()
			concurrentAcquireRelease(t, c, prefix, g, n)
			trips, cmds := rt.trips.Load(), rt.scripts.Load()
			t.Logf("%d goroutines: %d calls in %d round trips carrying %d scripts", g, calls, trips, cmds)
			if cmds != calls {
				t.Errorf("%d scripts sent for %d calls", cmds, calls)
			}
			if noBatch && trips != calls {
				t.Errorf("NoBatch: %d round trips for %d calls, want one each", trips, calls)
			}
			if !noBatch && trips > calls/2 {
				t.Errorf("%d round trips for %d concurrent calls, want at most half as many", trips, calls)
			}
		})
	}
}

// blockHook holds every script whose keys include key until release is
// closed, after telling held.
type blockHook struct {
	key     string
	held    chan struct{}
	release chan struct{}
	once    sync.Once
}

func (h *blockHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *blockHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if strings.Contains(fmt.Sprint(cmd.Args()), h.key) {
			h.once.Do(func() { close(h.held) })
			<-h.release
		}
		return next(ctx, cmd)
	}
}
func (h *blockHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestBatchQueuedCallCancelled: while one call is in flight, a call whose
// context ends in the queue returns at once with the context's error and
// is never sent; the queue then moves on.
func TestBatchQueuedCallCancelled(t *testing.T) {
	env := testenvRedisCounting(t)
	first, queued, after := env.Name("first"), env.Name("queued"), env.Name("after")
	hook := &blockHook{key: keysOf(first).lock, held: make(chan struct{}), release: make(chan struct{})}
	rdb := redis.NewClient(&redis.Options{Addr: env.Addr, ContextTimeoutEnabled: true})
	t.Cleanup(func() { rdb.Close() })
	rdb.AddHook(hook)
	c := mustNew(t, rdb, nil)
	defer c.Close(context.Background())
	release(t, mustAcquire(t, c, after, time.Minute)) // loads the script

	inFlight := make(chan error, 1)
	go func() {
		l, err := c.Acquire(context.Background(), first, time.Minute)
		if err == nil {
			err = l.Release(context.Background())
		}
		inFlight <- err
	}()
	<-hook.held // the first Acquire is in flight: the next call queues

	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan error, 1)
	go func() {
		_, err := c.Acquire(ctx, queued, time.Minute)
		got <- err
	}()
	time.Sleep(50 * time.Millisecond) // let it queue
	cancel()
	select {
	case err := <-got:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("queued Acquire whose context ended = %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a queued Acquire did not return when its context ended")
	}
	close(hook.release)
	if err := <-inFlight; err != nil {
		t.Fatalf("the Acquire in flight: %v", err)
	}
	ctx2 := context.Background()
	if n, err := env.client.Exists(ctx2, keysOf(queued).lock, keysOf(queued).token).Result(); err != nil || n != 0 {
		t.Fatalf("the cancelled Acquire was sent: %d of its keys exist (%v)", n, err)
	}
	// The batcher is idle again: the next call goes out at once.
	assertIdle(t, c, queued, nil)
}

// assertIdle checks that c's batcher is idle: an Acquire of name returns
// within 10 s, in one round trip if rt is not nil.
func assertIdle(t *testing.T, c *lease.Client, name string, rt *scriptTrips) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if rt != nil {
		rt.reset()
	}
	l, err := c.Acquire(ctx, name, time.Minute)
	if err != nil {
		t.Fatalf("Acquire on an idle Client: %v (is a send still marked in flight?)", err)
	}
	if rt != nil && rt.trips.Load() != 1 {
		t.Errorf("a lone Acquire took %d round trips, want 1", rt.trips.Load())
	}
	release(t, l)
}

// TestBatchCancelStorm: 16 goroutines whose calls' contexts end within 0-2
// ms, about a round trip, so that calls leave the queue at every step
// (queued, woken to send, carried): every call returns, and the batcher
// is idle afterwards.
func TestBatchCancelStorm(t *testing.T) {
	env := testenv.Redis(t)
	rdb := redis.NewClient(&redis.Options{Addr: env.Addr, ContextTimeoutEnabled: true, PoolSize: 16})
	t.Cleanup(func() { rdb.Close() })
	rt := &scriptTrips{}
	rdb.AddHook(rt)
	c := mustNew(t, rdb, &lease.Options{Logger: slog.New(slog.DiscardHandler)})
	defer c.Close(context.Background())
	assertIdle(t, c, env.Name("warm"), nil)
	var wg sync.WaitGroup
	var ok atomicInt
	for i := range 16 {
		wg.Go(func() {
			for j := range 150 {
				ctx, cancel := context.WithTimeout(context.Background(), time.Duration((i*31+j*17)%2000)*time.Microsecond)
				l, err := c.Acquire(ctx, env.Name(fmt.Sprintf("storm-%d-%d", i, j)), time.Second)
				if err == nil {
					ok.Add(1)
					l.Release(ctx)
				}
				cancel()
			}
		})
	}
	wg.Wait()
	t.Logf("%d of %d acquires granted, %d pipelines", ok.Load(), 16*150, rt.pipelines.Load())
	assertIdle(t, c, env.Name("after"), rt)
}

// TestBatchErrorsStayPerCall sends one pipeline of acquires and a release on
// a Redis that has forgotten some scripts (SCRIPT FLUSH): a refusal, a
// script error and NOSCRIPT each stay with their own request.
func TestBatchErrorsStayPerCall(t *testing.T) {
	srv := testenv.StartRedisServer(t)
	rdb := srv.Client(t)
	rt := &scriptTrips{}
	rdb.AddHook(rt)
	b := newBackend(rdb, nil)
	ctx := context.Background()
	held, err := b.Acquire(ctx, "held", time.Minute, "other")
	if err != nil {
		t.Fatal(err)
	}
	if err := rdb.HSet(ctx, keysOf("broken").token, "f", "v").Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.ScriptLoad(ctx, acquireSrc).Err(); err != nil { // release.lua stays unknown
		t.Fatal(err)
	}
	acq := func(name string) *request {
		k := keysOf(name)
		return &request{script: acquireScript, keys: k.both[:], args: []any{int64(60000), "me:0123456789abcdef"}}
	}
	hv := held.Value.(*redisGrant)
	reqs := []*request{acq("free"), acq("held"), acq("broken"),
		{script: releaseScript, keys: hv.both[:1], args: []any{hv.value}}}
	rt.reset()
	b.calls.send(ctx, reqs)
	if n := rt.pipelines.Load(); n != 2 {
		t.Errorf("%d round trips, want 2: the pipeline, then EVAL for the NOSCRIPT release", n)
	}
	if tok, held, _, _, err := parseAcquire(reqs[0].cmd.Val()); reqs[0].cmd.Err() != nil || err != nil || held || tok == 0 {
		t.Errorf("free name: %v %v %v", reqs[0].cmd.Err(), err, held)
	}
	if _, held, _, h, err := parseAcquire(reqs[1].cmd.Val()); reqs[1].cmd.Err() != nil || err != nil || !held || parseHolder(h).identity != "other" {
		t.Errorf("held name: %v %v held=%v holder %q", reqs[1].cmd.Err(), err, held, h)
	}
	if err := reqs[2].cmd.Err(); err == nil || !strings.Contains(err.Error(), "token counter") {
		t.Errorf("broken counter: %v, want the script's error", err)
	}
	if res, err := reqs[3].cmd.Int64(); err != nil || res != 1 {
		t.Errorf("release after NOSCRIPT: %d %v, want 1", res, err)
	}
}

// scriptTrips counts the round trips that carry scripts (acquire, renew,
// release), the pipelines among them and the scripts, leaving out what
// go-redis sends on its own (a new connection's HELLO and CLIENT SETINFO).
type scriptTrips struct{ trips, pipelines, scripts atomicInt }

func (h *scriptTrips) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *scriptTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if scriptName(cmd) != "" {
			h.trips.Add(1)
			h.scripts.Add(1)
		}
		return next(ctx, cmd)
	}
}
func (h *scriptTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		n := 0
		for _, cmd := range cmds {
			if scriptName(cmd) != "" {
				n++
			}
		}
		if n > 0 {
			h.trips.Add(1)
			h.pipelines.Add(1)
			h.scripts.Add(int64(n))
		}
		return next(ctx, cmds)
	}
}

// reset zeroes the counts.
func (h *scriptTrips) reset() {
	h.trips.Store(0)
	h.pipelines.Store(0)
	h.scripts.Store(0)
}

// TestBatchFaultPausedServer runs 12 goroutines acquiring and releasing 3
// names with short contexts on one Client while the private Redis is paused
// (SIGSTOP) for longer than the TTL again and again, so that replies are
// lost and leases expire: no grant may come while an earlier holder's local
// deadline is ahead, tokens increase, every call returns soon after its
// context ends, and the batcher is idle afterwards.
func TestBatchFaultPausedServer(t *testing.T) {
	srv := testenv.StartRedisServer(t)
	batchUnderFault(t, srv, func() error {
		if err := srv.Pause(); err != nil {
			return err
		}
		time.Sleep(2 * 150 * time.Millisecond)
		return srv.Resume()
	})
}

// TestBatchFaultRestartedServer is TestBatchFaultPausedServer with the
// private Redis restarted without persistence instead of paused, while
// calls queue behind pipelines in flight: the counters and the scripts are
// gone (NOSCRIPT in a pipeline), yet tokens increase and one holder holds.
func TestBatchFaultRestartedServer(t *testing.T) {
	srv := testenv.StartRedisServer(t)
	batchUnderFault(t, srv, func() error { return srv.Restart(context.Background()) })
}

// batchUnderFault runs the callers of TestBatchFaultPausedServer while
// fault runs 4 times, 150 ms apart, and checks its invariants.
func batchUnderFault(t *testing.T, srv *testenv.RedisServer, fault func() error) {
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, ContextTimeoutEnabled: true, MaxRetries: -1, PoolSize: 12})
	t.Cleanup(func() { rdb.Close() })
	rt := &scriptTrips{}
	rdb.AddHook(rt)
	c := mustNew(t, rdb, &lease.Options{DriftMargin: 20 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	defer c.Close(context.Background())
	const ttl, slack = 150 * time.Millisecond, 2 * time.Second
	names := []string{"a", "b", "c"}

	var mu sync.Mutex
	holder := map[string]*lease.Lease{}
	last := map[string]uint64{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var grants atomicInt
	for i := range 12 {
		wg.Go(func() {
			for j := 0; ; j++ {
				select {
				case <-stop:
					return
				default:
				}
				name := names[(i+j)%len(names)]
				limit := time.Duration(10+(i*7+j*13)%70) * time.Millisecond
				ctx, cancel := context.WithTimeout(context.Background(), limit)
				start := time.Now()
				l, err := c.Acquire(ctx, name, ttl)
				if d := time.Since(start); d > limit+slack {
					t.Errorf("Acquire returned %v after its %v context", d, limit)
				}
				if err != nil {
					cancel()
					continue
				}
				grants.Add(1)
				mu.Lock()
				if h := holder[name]; h != nil && !errors.Is(h.Err(), lease.ErrReleased) && time.Now().Before(h.Deadline()) {
					t.Errorf("%s granted (token %v) while token %v's deadline is %v ahead", name, l.Token(), h.Token(), time.Until(h.Deadline()))
				}
				if uint64(l.Token()) <= last[name] {
					t.Errorf("%s: token %v after %v", name, l.Token(), last[name])
				}
				holder[name], last[name] = l, uint64(l.Token())
				mu.Unlock()
				time.Sleep(time.Duration(j%5) * time.Millisecond)
				start = time.Now()
				l.Release(ctx)
				if d := time.Since(start); d > limit+slack {
					t.Errorf("Release returned %v after its %v context", d, limit)
				}
				cancel()
			}
		})
	}
	for range 4 {
		time.Sleep(150 * time.Millisecond)
		if err := fault(); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(150 * time.Millisecond)
	close(stop)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("calls still running 30 s after the last pause")
	}
	t.Logf("%d grants, %d pipelines", grants.Load(), rt.pipelines.Load())
	if grants.Load() == 0 || rt.pipelines.Load() == 0 {
		t.Fatal("no grant or no pipeline: the test did not exercise batching")
	}
	assertIdle(t, c, "after", rt)
}

// TestBatchCluster: on a Cluster client, whose pipelines go-redis splits by
// node, concurrent calls on names spread over three masters are batched and
// each gets its own answer.
func TestBatchCluster(t *testing.T) {
	rc := testenv.StartRedisCluster(t, 3)
	cc := rc.Client(t)
	rt := &scriptTrips{}
	cc.AddHook(rt)
	c := mustNew(t, cc, nil)
	defer c.Close(context.Background())
	ctx := context.Background()
	err := cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
		return errors.Join(node.ScriptLoad(ctx, acquireSrc).Err(), node.ScriptLoad(ctx, releaseSrc).Err())
	})
	if err != nil {
		t.Fatal(err)
	}
	rt.reset()
	const g, n = 16, 20
	concurrentAcquireRelease(t, c, "cluster", g, n)
	t.Logf("%d calls in %d round trips (%d pipelines) carrying %d scripts", 2*g*n, rt.trips.Load(), rt.pipelines.Load(), rt.scripts.Load())
	if rt.scripts.Load() != 2*g*n || rt.pipelines.Load() == 0 {
		t.Fatalf("%d scripts, %d pipelines for %d concurrent calls; want one script each, some pipelines", rt.scripts.Load(), rt.pipelines.Load(), 2*g*n)
	}
	// Every name was granted and released: none is held now.
	for i := range g {
		for j := range n {
			info, err := c.Inspect(ctx, fmt.Sprintf("cluster-%d-%d", i, j))
			if err != nil || info.Held || info.Last == 0 {
				t.Fatalf("cluster-%d-%d: %+v, %v; want released after a grant", i, j, info, err)
			}
		}
	}
}
