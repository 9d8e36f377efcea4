package redislease

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fencekit/fencekit/internal/testenv"
	"github.com/fencekit/fencekit/lease"
)

func TestCloseEndsAndReleasesEveryLease(t *testing.T) {
	env := testenv.Redis(t)
	ctx := context.Background()
	warm := mustNew(t, env.Client, nil)
	base := warmBase(t, warm, env.Name("warm"))

	c := mustNew(t, env.Client, &lease.Options{RenewInterval: 20 * time.Millisecond})
	var leases []*lease.Lease
	for i := range 20 {
		leases = append(leases, mustAcquire(t, c, env.Name(fmt.Sprint("close-", i)), time.Second))
	}
	// One is released first, one lost: Close skips the first and reports
	// the second only if its key is gone when Close deletes it.
	release(t, leases[0])
	time.Sleep(50 * time.Millisecond) // renewals in flight now and then
	if err := c.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for _, l := range leases {
		if l.Err() != lease.ErrReleased {
			t.Errorf("%s after Close: Err = %v, want ErrReleased", l.Name(), l.Err())
		}
		info, err := warm.Inspect(ctx, l.Name())
		if err != nil || info.Held {
			t.Errorf("%s after Close: %+v, %v; want not held", l.Name(), info, err)
		}
	}
	if _, err := c.Acquire(ctx, env.Name("after"), time.Second); !errors.Is(err, lease.ErrClosed) {
		t.Errorf("Acquire after Close = %v, want ErrClosed", err)
	}
	if _, err := c.AcquireWait(ctx, env.Name("after"), time.Second); !errors.Is(err, lease.ErrClosed) {
		t.Errorf("AcquireWait after Close = %v, want ErrClosed", err)
	}
	if _, err := c.Inspect(ctx, env.Name("after")); !errors.Is(err, lease.ErrClosed) {
		t.Errorf("Inspect after Close = %v, want ErrClosed", err)
	}
	if err := c.Close(ctx); !errors.Is(err, lease.ErrClosed) {
		t.Errorf("second Close = %v, want ErrClosed", err)
	}
	if err := leases[1].Release(ctx); err != nil {
		t.Errorf("Release after Close = %v, want Close's result (nil)", err)
	}
	testenv.CheckGoroutines(t, base)
}

// roundTrips counts a client's round trips (a command alone or a
// pipeline) and the commands they carry.
type roundTrips struct{ trips, cmds atomic.Int64 }

func (h *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.trips.Add(1)
		h.cmds.Add(1)
		return next(ctx, cmd)
	}
}
func (h *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.trips.Add(1)
		h.cmds.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

// holdMany acquires n leases named prefix-i on c, holds them for periods
// renewal intervals, and returns how many round trips and commands the
// renewals took, failing on any loss.
func holdMany(t testing.TB, c *lease.Client, rt *roundTrips, prefix string, n int, ttl time.Duration, periods int) (trips, cmds int64) {
	t.Helper()
	leases := make([]*lease.Lease, n)
	for i := range leases {
		leases[i] = mustAcquire(t, c, fmt.Sprintf("%s-%d", prefix, i), ttl)
	}
	t0, c0 := rt.trips.Load(), rt.cmds.Load()
	time.Sleep(time.Duration(periods)*ttl/3 + ttl/6)
	trips, cmds = rt.trips.Load()-t0, rt.cmds.Load()-c0
	lost := 0
	for _, l := range leases {
		if l.Err() != nil {
			lost++
			if lost < 5 {
				t.Errorf("%s lost: %v", l.Name(), l.Err())
			}
		}
	}
	if lost > 0 {
		t.Fatalf("%d of %d leases lost", lost, n)
	}
	if err := c.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	return trips, cmds
}

func TestRenewalsDueTogetherArePipelined(t *testing.T) {
	// 500 leases acquired one after the other: their renewals coalesce into
	// a few pipelines per renewal interval, not 500 requests.
	env := testenv.Redis(t)
	rdb := redis.NewClient(&redis.Options{Addr: env.Addr, ContextTimeoutEnabled: true})
	t.Cleanup(func() { rdb.Close() })
	rt := &roundTrips{}
	rdb.AddHook(rt)
	c := mustNew(t, rdb, &lease.Options{Logger: slog.New(slog.DiscardHandler)})
	const n, periods = 500, 4
	trips, cmds := holdMany(t, c, rt, env.Name("many"), n, 1500*time.Millisecond, periods)
	t.Logf("%d leases, %d renewal intervals: %d round trips carrying %d commands", n, periods, trips, cmds)
	if cmds < n*periods {
		t.Errorf("%d renewals, want at least %d", cmds, n*periods)
	}
	// Leases acquired within RenewInterval/8 of each other share a
	// pipeline; on a loaded machine acquiring 500 takes longer, so allow
	// a batch per 20 leases.
	if trips > n*periods/20 {
		t.Errorf("%d round trips for %d renewals, want pipelines", trips, cmds)
	}
}

func TestRenewalPipelineAfterScriptFlush(t *testing.T) {
	// Redis forgets its scripts (SCRIPT FLUSH, a restart, a failover): the
	// pipelined renewals that get NOSCRIPT are sent again with EVAL.
	srv := testenv.StartRedisServer(t)
	rdb := srv.Client(t)
	c := mustNew(t, rdb, &lease.Options{RenewInterval: 100 * time.Millisecond})
	var leases []*lease.Lease
	for i := range 50 {
		leases = append(leases, mustAcquire(t, c, fmt.Sprint("flush-", i), 400*time.Millisecond))
	}
	for range 3 {
		if err := rdb.ScriptFlush(context.Background()).Err(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(250 * time.Millisecond)
	}
	for _, l := range leases {
		if l.Err() != nil {
			t.Fatalf("%s lost after SCRIPT FLUSH: %v", l.Name(), l.Err())
		}
	}
	if err := c.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestLeaseMemory(t *testing.T) {
	// The client-side memory of a held lease (target: at most 1 KiB).
	c := newCanned(t) // stores nothing
	const n = 2000
	leases := make([]*lease.Lease, 0, n)
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("memory-%06d", i)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for _, name := range names {
		leases = append(leases, mustAcquire(t, c, name, time.Hour))
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := float64(after.HeapAlloc-before.HeapAlloc) / n
	t.Logf("heap per held lease (lease, grant, keys, context, heap slot): %.0f bytes", per)
	if per > 1024 {
		t.Errorf("%.0f bytes per held lease, want at most 1 KiB", per)
	}
	var wg sync.WaitGroup
	for _, l := range leases {
		wg.Go(func() { l.Release(context.Background()) })
	}
	wg.Wait()
	runtime.KeepAlive(leases)
}
