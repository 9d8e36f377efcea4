package redislease

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fencekit/fencekit/internal/testenv"
	"github.com/fencekit/fencekit/lease"
)

var manyFor = flag.Duration("lease.many", 0,
	"hold 10,000 leases (TTL 10s) on one Client for this long (make soak: 60s); 0: 1,000 leases (TTL 2s) for 3 renewal intervals")

func TestManyLeasesOneClient(t *testing.T) {
	// One Client holds many leases on real Redis: none is lost, every
	// renewal comes on time, the renewals take a few round trips per
	// renewal interval. It reports round trips per interval, client CPU per
	// renewal and heap per held lease (docs/performance.md).
	n, ttl, hold := 1000, 2*time.Second, 3*(2*time.Second/3)+300*time.Millisecond
	if *manyFor > 0 {
		n, ttl, hold = 10_000, 10*time.Second, *manyFor
	}
	env := testenv.Redis(t)
	rdb := redis.NewClient(&redis.Options{Addr: env.Addr, ContextTimeoutEnabled: true})
	t.Cleanup(func() { rdb.Close() })
	rt := &roundTrips{}
	rdb.AddHook(rt)
	c := mustNew(t, rdb, &lease.Options{Logger: slog.New(slog.DiscardHandler)})
	release(t, mustAcquire(t, c, env.Name("warm"), time.Second))
	tm := struct{ ttl, margin, interval time.Duration }{ttl, ttl/100 + 2*time.Millisecond, ttl / 3} // the defaults

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	leases := make([]*lease.Lease, n)
	for i := range leases {
		leases[i] = mustAcquire(t, c, env.Name(fmt.Sprint("many-", i)), ttl)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	heapPer := float64(after.HeapAlloc) - float64(before.HeapAlloc)
	heapPer /= float64(n)

	// Sample every lease's remaining time: right before a renewal is
	// confirmed it is TTL - margin - interval; less means a late renewal.
	onTime := tm.ttl - tm.margin - tm.interval
	var worst time.Duration // how late the latest renewal was
	trips0, cmds0, cpu0 := rt.trips.Load(), rt.cmds.Load(), cpuTime(t)
	for end := time.Now().Add(hold); time.Now().Before(end); time.Sleep(tm.interval / 10) {
		now := time.Now()
		for _, l := range leases {
			if late := onTime - l.Deadline().Sub(now); late > worst {
				worst = late
			}
		}
	}
	trips, renewals, cpu := rt.trips.Load()-trips0, rt.cmds.Load()-cmds0, cpuTime(t)-cpu0
	lost := 0
	for _, l := range leases {
		if l.Err() != nil {
			lost++
		}
	}
	intervals := float64(hold) / float64(tm.interval)
	t.Logf("%d leases, TTL %v, held %v (%.1f renewal intervals): %d lost, %d renewals in %d round trips (%.1f per interval), latest renewal %v late; client CPU %v per renewal (sampling included); heap %.0f B per held lease",
		n, ttl, hold, intervals, lost, renewals, trips, float64(trips)/intervals, worst.Round(time.Millisecond),
		(cpu / time.Duration(max(renewals, 1))).Round(100*time.Nanosecond), heapPer)
	if lost > 0 {
		t.Errorf("%d of %d leases lost", lost, n)
	}
	if want := int64(float64(n) * (intervals - 1)); renewals < want {
		t.Errorf("%d renewals, want at least %d", renewals, want)
	}
	if worst > tm.interval/2 {
		t.Errorf("a renewal was confirmed %v late (interval %v)", worst, tm.interval)
	}
	if trips > renewals/20 {
		t.Errorf("%d round trips for %d renewals, want pipelines", trips, renewals)
	}
	// Other tests' and go-redis's allocations (and -race) blur the figure
	// here: TestLeaseMemory holds it to the target in make test.
	if *manyFor > 0 && heapPer > 1024 {
		t.Errorf("heap %.0f B per held lease, want at most 1 KiB", heapPer)
	}
	if err := c.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// cpuTime returns this process's user + system CPU time so far: the
// client's work, not a redis-server's (a child process).
func cpuTime(t testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
