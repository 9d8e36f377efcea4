package bench

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The many-leases scenario: one client holds manyLeases leases of manyTTL,
// renewed every manyTTL/3.
const (
	manyLeases = 10_000
	manyTTL    = 10 * time.Second
)

// EnvManyWindow sets how long BenchmarkManyLeases holds the leases (a Go
// duration; default 20s, six renewal periods).
const EnvManyWindow = "BENCH_MANY_WINDOW"

func manyWindow(tb testing.TB) time.Duration {
	s := os.Getenv(EnvManyWindow)
	if s == "" {
		return 20 * time.Second
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < manyTTL/3 {
		tb.Fatalf("bench: %s=%q: want a duration of at least %v", EnvManyWindow, s, manyTTL/3)
	}
	return d
}

// BenchmarkManyLeases holds manyLeases leases from one client for a window
// (BENCH_MANY_WINDOW) and measures what keeping them costs. fencekit's
// leases renew themselves (its heartbeat sends the renewals that fall due
// together as one pipeline); redislock and redsync have no heartbeat, so
// each lock gets the goroutine a user would write: a ticker every TTL/3
// calling the library's own renew (redislock Refresh, redsync Extend). It
// runs once whatever b.N. Metrics:
//
//	lost                    leases lost during the window (want 0)
//	renewals/lease/period   renewals sent per lease per TTL/3 (want 1)
//	round-trips/period      Redis round trips per TTL/3 (pipelines count once)
//	client-cpu-ns/renewal   this process's CPU time per renewal
//	redis-cpu-ns/renewal    the Redis server's CPU time per renewal
//	mem-B/lease             heap and goroutine stacks per held lease, after GC
func BenchmarkManyLeases(b *testing.B) {
	for _, name := range rotated([]string{"fencekit", "redislock", "redsync"}) {
		b.Run("lib="+name, func(b *testing.B) {
			env := newRedisPool(b, uniqueKey(name), 64)
			l, err := NewLocker(name, env.Client)
			if err != nil {
				b.Fatal(err)
			}
			warmUp(b, l, env.prefix+"-warm")
			benchMany(b, env, l, manyWindow(b))
		})
	}
}

func benchMany(b *testing.B, env *redisEnv, l Locker, window time.Duration) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)

	helds := make([]Held, manyLeases)
	for i := range helds {
		h, err := l.TryAcquire(ctx, env.prefix+"-"+strconv.Itoa(i), manyTTL)
		if err != nil {
			b.Fatalf("acquire %d: %v", i, err)
		}
		helds[i] = h
	}
	var lost atomic.Int64
	var wg sync.WaitGroup
	if !l.AutoRenews() {
		for _, h := range helds {
			wg.Go(func() {
				t := time.NewTicker(manyTTL / 3)
				defer t.Stop()
				for {
					select {
					case <-ctx.Done():
						return
					case <-t.C:
					}
					if err := h.Renew(ctx, manyTTL); err != nil && ctx.Err() == nil {
						lost.Add(1)
						return
					}
				}
			})
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&m1)
	mem := float64(int64(m1.HeapAlloc+m1.StackInuse)-int64(m0.HeapAlloc+m0.StackInuse)) / manyLeases

	stats0, err := ReadCommandStats(ctx, env.Client)
	if err != nil {
		b.Fatal(err)
	}
	srv0, err := ServerCPU(ctx, env.Client)
	if err != nil {
		b.Fatal(err)
	}
	trips0, cpu0 := env.Trips.Load(), ProcessCPU()
	time.Sleep(window)
	trips, cpu := env.Trips.Load()-trips0, ProcessCPU()-cpu0
	stats1, err := ReadCommandStats(ctx, env.Client)
	if err != nil {
		b.Fatal(err)
	}
	srv1, err := ServerCPU(ctx, env.Client)
	if err != nil {
		b.Fatal(err)
	}
	if l.AutoRenews() {
		for _, h := range helds {
			if h.(fencekitHeld).l.Err() != nil {
				lost.Add(1)
			}
		}
	}
	cancel()
	wg.Wait()

	renewals := float64(stats1.Sub(stats0).Scripts())
	periods := float64(window) / float64(manyTTL/3)
	b.ReportMetric(float64(lost.Load()), "lost")
	b.ReportMetric(renewals/manyLeases/periods, "renewals/lease/period")
	b.ReportMetric(float64(trips)/periods, "round-trips/period")
	b.ReportMetric(float64(cpu)/max(renewals, 1), "client-cpu-ns/renewal")
	b.ReportMetric(float64(srv1-srv0)/max(renewals, 1), "redis-cpu-ns/renewal")
	b.ReportMetric(mem, "mem-B/lease")
	b.Logf("window %v: %d leases lost, %.0f renewals, %d round trips, client CPU %v", window, lost.Load(), renewals, trips, cpu)

	rctx, rcancel := context.WithTimeout(context.Background(), time.Minute)
	defer rcancel()
	var next atomic.Int64
	var rwg sync.WaitGroup
	for range 16 {
		rwg.Go(func() {
			for i := next.Add(1) - 1; i < manyLeases; i = next.Add(1) - 1 {
				helds[i].Release(rctx) // an expired lock's error is not this benchmark's subject
			}
		})
	}
	rwg.Wait()
	if n := lost.Load(); n > 0 {
		b.Errorf("%s lost %d of %d leases during the window", l.Name(), n, manyLeases)
	}
}
