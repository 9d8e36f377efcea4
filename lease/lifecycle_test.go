package lease

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fencekit/fencekit/internal/testenv"
)

func TestCloseEndsAndReleasesEveryLease(t *testing.T) {
	env := testenv.Redis(t)
	ctx := context.Background()
	warm := mustNew(t, env.Client, nil)
	base := warmBase(t, warm, env.Name("warm"))

	c := mustNew(t, env.Client, &Options{RenewInterval: 20 * time.Millisecond})
	var leases []*Lease
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
		if l.Err() != ErrReleased {
			t.Errorf("%s after Close: Err = %v, want ErrReleased", l.Name(), l.Err())
		}
		info, err := warm.Inspect(ctx, l.Name())
		if err != nil || info.Held {
			t.Errorf("%s after Close: %+v, %v; want not held", l.Name(), info, err)
		}
	}
	if _, err := c.Acquire(ctx, env.Name("after"), time.Second); !errors.Is(err, ErrClosed) {
		t.Errorf("Acquire after Close = %v, want ErrClosed", err)
	}
	if _, err := c.AcquireWait(ctx, env.Name("after"), time.Second); !errors.Is(err, ErrClosed) {
		t.Errorf("AcquireWait after Close = %v, want ErrClosed", err)
	}
	if _, err := c.Inspect(ctx, env.Name("after")); !errors.Is(err, ErrClosed) {
		t.Errorf("Inspect after Close = %v, want ErrClosed", err)
	}
	if err := c.Close(ctx); !errors.Is(err, ErrClosed) {
		t.Errorf("second Close = %v, want ErrClosed", err)
	}
	if err := leases[1].Release(ctx); err != nil {
		t.Errorf("Release after Close = %v, want Close's result (nil)", err)
	}
	checkGoroutines(t, base)
}

func TestSynctestCloseCutsRenewalsInFlight(t *testing.T) {
	// Redis stops answering with renewals in flight: Close ends every lease
	// at once, cancels the renewals, and returns when ctx ends, counting
	// the leases it could not delete. synctest.Test fails if a goroutine
	// is left.
	synctest.Test(t, func(t *testing.T) {
		f := newFakeRedis()
		c := fakeClient(f, Options{}, nil)
		a := mustAcquire(t, c, "a", 3*time.Second)
		b := mustAcquire(t, c, "b", 3*time.Second)
		f.set(func(f *fakeRedis) { f.down = true })
		time.Sleep(1500 * time.Millisecond) // the renewal sent at +1s hangs
		if !f.renewing("a") {
			t.Fatal("no renewal in flight")
		}
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		err := c.Close(ctx)
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "2 of 2 leases not deleted") {
			t.Errorf("Close with Redis down = %v, want DeadlineExceeded naming 2 leases", err)
		}
		if got := time.Since(start); got != 100*time.Millisecond {
			t.Errorf("Close took %v, want 100ms (its ctx)", got)
		}
		if a.Err() != ErrReleased || b.Err() != ErrReleased {
			t.Errorf("after Close: %v, %v; want ErrReleased", a.Err(), b.Err())
		}
		synctest.Wait()
		if f.renewing("a") || f.renewing("b") {
			t.Error("renewal still in flight after Close")
		}
	})
}

func TestSynctestAcquireRacingClose(t *testing.T) {
	// An Acquire whose grant arrives after Close gives the grant back and
	// returns ErrClosed: no lease outlives its Client.
	synctest.Test(t, func(t *testing.T) {
		f := newFakeRedis()
		f.latency = 10 * time.Millisecond
		c := fakeClient(f, Options{}, nil)
		got := make(chan error, 1)
		go func() {
			_, err := c.Acquire(context.Background(), "race", time.Second)
			got <- err
		}()
		time.Sleep(5 * time.Millisecond) // the acquire is in flight
		if err := c.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := <-got; !errors.Is(err, ErrClosed) {
			t.Fatalf("Acquire racing Close = %v, want ErrClosed", err)
		}
		if info, _ := f.Inspect(context.Background(), "race"); info.Held {
			t.Fatal("the grant that arrived after Close is still held")
		}
	})
}

func TestSynctestLostLeaseLogsItsCause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeRedis()
		var buf syncBuffer
		c := fakeClient(f, Options{}, &buf)
		l := mustAcquire(t, c, "logged", 300*time.Millisecond)
		f.steal("logged")
		<-l.Done()
		synctest.Wait() // the log is written by a goroutine of its own
		out := buf.String()
		if strings.Contains(out, "err=<nil>") || !strings.Contains(out, "cause=stolen") || !strings.Contains(out, "belongs to another owner") {
			t.Fatalf("log of a stolen lease does not say why:\n%s", out)
		}
	})
}

func TestSynctestAcquireWaitTimeoutIsOneLine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeRedis()
		c := fakeClient(f, Options{}, nil)
		holder := mustAcquire(t, c, "busy", time.Second)
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		_, err := c.AcquireWait(ctx, "busy", time.Second)
		if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrNotAcquired) || strings.Contains(err.Error(), "\n") {
			t.Fatalf("AcquireWait timeout = %q, want one line matching DeadlineExceeded and ErrNotAcquired", err)
		}
		var na *NotAcquiredError
		if !errors.As(err, &na) || na.Holder != holder.Token() {
			t.Fatalf("AcquireWait timeout = %v, want the last refusal's holder %v", err, holder.Token())
		}
		release(t, holder)
	})
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
func holdMany(t testing.TB, c *Client, rt *roundTrips, prefix string, n int, ttl time.Duration, periods int) (trips, cmds int64) {
	t.Helper()
	leases := make([]*Lease, n)
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
	c := mustNew(t, rdb, &Options{Logger: slog.New(slog.DiscardHandler)})
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
	c := mustNew(t, rdb, &Options{RenewInterval: 100 * time.Millisecond})
	var leases []*Lease
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
	c := newScripted(nil, &cannedScripter{}, nil) // stores nothing
	const n = 2000
	leases := make([]*Lease, 0, n)
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

func TestSynctestCloseLeavesNoLeaseLive(t *testing.T) {
	// Close at a random moment, with renewals due, in flight and just
	// answered: afterwards no lease of the Client is live and its heap is
	// empty, whatever the heartbeat was doing.
	for seed := range uint64(16) {
		synctest.Test(t, func(t *testing.T) {
			rnd := rand.New(rand.NewPCG(seed, 11))
			f := newFakeRedis()
			f.latency = time.Duration(rnd.IntN(5)) * time.Millisecond
			c := fakeClient(f, Options{}, nil)
			var leases []*Lease
			for i := range 40 {
				ttl := time.Duration(30+rnd.IntN(300)) * time.Millisecond
				leases = append(leases, mustAcquire(t, c, fmt.Sprint("l", i), ttl))
				time.Sleep(time.Duration(rnd.IntN(3)) * time.Millisecond)
			}
			time.Sleep(time.Duration(rnd.IntN(500)) * time.Millisecond)
			if err := c.Close(context.Background()); err != nil && !errors.Is(err, ErrLost) {
				t.Errorf("failed for seed=%d: Close: %v", seed, err)
			}
			for _, l := range leases {
				if l.Err() == nil {
					t.Errorf("failed for seed=%d: %s live after Close", seed, l.Name())
				}
			}
			if n := c.hb.len(); n != 0 {
				t.Errorf("failed for seed=%d: %d leases in the heap after Close", seed, n)
			}
		})
	}
}

func TestSynctestCloseReportsFailedDeletes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeRedis()
		c := fakeClient(f, Options{}, nil)
		for i := range 3 {
			mustAcquire(t, c, fmt.Sprint("l", i), time.Second)
		}
		f.set(func(f *fakeRedis) { f.failRel = 1 })
		err := c.Close(context.Background())
		if !errors.Is(err, errFake) || !strings.Contains(err.Error(), "1 of 3 leases not deleted") || strings.Contains(err.Error(), "%!") {
			t.Fatalf("Close with one failed delete = %v, want it counted and wrapped", err)
		}
		held := 0
		for i := range 3 {
			if info, _ := f.Inspect(context.Background(), fmt.Sprint("l", i)); info.Held {
				held++
			}
		}
		if held != 1 {
			t.Errorf("%d keys left after Close, want the one whose delete failed", held)
		}
	})
}
