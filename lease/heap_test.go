package lease

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// renewedAt returns when the renewals of lease name were sent, from start.
func renewedAt(f *fakeBackend, c *Client, start time.Time, name string) []time.Duration {
	key := name
	var out []time.Duration
	for _, call := range f.renewCalls() {
		if call.key == key {
			out = append(out, call.sent.Sub(start))
		}
	}
	return out
}

// every returns first, first+d, ... up to last.
func every(first, d, last time.Duration) []time.Duration {
	var out []time.Duration
	for t := first; t <= last; t += d {
		out = append(out, t)
	}
	return out
}

// checkHeap reports a broken heap: an entry whose slot is not its index,
// or a parent that wakes after its child.
func (h *heartbeat) checkHeap() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, l := range h.heap {
		if l.slot != i {
			return fmt.Errorf("heap[%d] has slot %d", i, l.slot)
		}
		if p := (i - 1) / 2; i > 0 && l.wake.Before(h.heap[p].wake) {
			return fmt.Errorf("heap[%d] wakes before its parent heap[%d]", i, p)
		}
	}
	return nil
}

func (h *heartbeat) len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.heap)
}

func TestSynctestHeapShortLeaseAfterLong(t *testing.T) {
	// One timer per Client: a lease added while the timer is armed far
	// ahead (a long lease's first renewal) re-arms it, and the long lease
	// is still renewed, and lost, on time once the short ones are gone.
	synctest.Test(t, func(t *testing.T) {
		f := newFakeBackend()
		c := fakeClient(f, Options{}, nil)
		start := time.Now()
		long := mustAcquire(t, c, "long", time.Hour) // the timer is armed for +20m
		short := mustAcquire(t, c, "short", 300*time.Millisecond)
		time.Sleep(time.Second + time.Millisecond)
		if got, want := renewedAt(f, c, start, "short"), every(100*time.Millisecond, 100*time.Millisecond, time.Second); !slices.Equal(got, want) {
			t.Errorf("short lease renewed at %v, want %v", got, want)
		}
		release(t, short)

		// The timer is left armed for short's next renewal; it fires for
		// nothing and re-arms for +20m. A lease added then re-arms it again.
		time.Sleep(time.Second)
		midAt := time.Since(start) // +2.001s
		mid := mustAcquire(t, c, "mid", 3*time.Second)
		time.Sleep(8*time.Second + 500*time.Millisecond)
		if got, want := renewedAt(f, c, start, "mid"), every(midAt+time.Second, time.Second, midAt+8*time.Second); !slices.Equal(got, want) {
			t.Errorf("mid lease renewed at %v, want %v", got, want)
		}
		release(t, mid)

		time.Sleep(20*time.Minute - time.Since(start) + time.Millisecond)
		if got, want := renewedAt(f, c, start, "long"), []time.Duration{20 * time.Minute}; !slices.Equal(got, want) {
			t.Errorf("long lease renewed at %v, want %v", got, want)
		}
		if err := c.hb.checkHeap(); err != nil || c.hb.len() != 1 {
			t.Errorf("heap: %v, %d leases; want only the long one", err, c.hb.len())
		}
		// Redis stops answering: the long lease ends at the deadline of its
		// last renewal, 20m + 1h - (36s + 2ms).
		f.set(func(f *fakeBackend) { f.down = true })
		<-long.Done()
		if got, want := time.Since(start), 20*time.Minute+time.Hour-36*time.Second-2*time.Millisecond; got != want {
			t.Errorf("long lease lost at +%v, want +%v", got, want)
		}
		if !isLost(long.Err(), CauseExpired) {
			t.Errorf("Err = %v, want LostError expired", long.Err())
		}
		if c.hb.len() != 0 {
			t.Errorf("%d leases left in the heap", c.hb.len())
		}
	})
}

// stallingHandler is a slog handler whose first "lease lost" record takes
// stall to write (a log pipe that is full, a remote collector). It records
// the name of that record's lease.
type stallingHandler struct {
	stall   time.Duration
	stalled atomic.Pointer[string]
}

func (h *stallingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *stallingHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *stallingHandler) WithGroup(string) slog.Handler            { return h }
func (h *stallingHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "lease lost" {
		return nil
	}
	var name string
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "name" {
			name = a.Value.String()
		}
		return true
	})
	if h.stalled.CompareAndSwap(nil, &name) {
		time.Sleep(h.stall)
	}
	return nil
}

func TestSynctestHeapSlowLoggerHoldsUpNoOtherLease(t *testing.T) {
	// The heartbeat ends every lease that is due at one instant. Ending a lease
	// logs through the user's handler before cancelling its Context; a slow
	// write may delay that lease, but must not keep another lease's Context
	// live past its deadline.
	synctest.Test(t, func(t *testing.T) {
		f := newFakeBackend()
		h := &stallingHandler{stall: time.Second}
		c := fakeClient(f, Options{Logger: slog.New(h)}, nil)
		start := time.Now()
		var mu sync.Mutex
		ended := map[string]time.Duration{}
		for _, name := range []string{"a", "b", "c"} {
			l := mustAcquire(t, c, name, 300*time.Millisecond) // deadline +295ms
			context.AfterFunc(l.Context(), func() {
				mu.Lock()
				ended[name] = time.Since(start)
				mu.Unlock()
			})
		}
		f.set(func(f *fakeBackend) { f.down = true })
		time.Sleep(2 * time.Second)
		mu.Lock()
		defer mu.Unlock()
		stalled := h.stalled.Load()
		if stalled == nil {
			t.Fatal("no lease lost")
		}
		for name, at := range ended {
			if name != *stalled && at != 295*time.Millisecond {
				t.Errorf("%s lost at +%v, want +295ms (its deadline), whatever %s's log write does", name, at, *stalled)
			}
		}
		if len(ended) != 3 {
			t.Errorf("%d leases ended, want 3", len(ended))
		}
	})
}

func TestSynctestHeapManyLeases(t *testing.T) {
	// Many leases with TTLs from 10ms to 2s on one Client, acquired,
	// renewed through bursts of failures and released at random instants:
	// no Context outlives its deadline, Redis never holds someone else's
	// value (or nothing) while a Context is live, nothing is sent after a
	// lease ended, and the heap ends empty and well-formed.
	for seed := range uint64(4) {
		synctest.Test(t, func(t *testing.T) {
			rnd := rand.New(rand.NewPCG(seed, 7))
			f := newFakeBackend()
			f.latency = time.Duration(seed) * 3 * time.Millisecond
			c := fakeClient(f, Options{}, nil)
			const n = 60
			type plan struct{ at, hold, ttl time.Duration }
			plans := make([]plan, n)
			for i := range plans {
				plans[i] = plan{
					at:   time.Duration(rnd.IntN(2000)) * time.Millisecond,
					hold: time.Duration(rnd.IntN(3000)) * time.Millisecond,
					ttl:  time.Duration(10+rnd.IntN(2000)) * time.Millisecond,
				}
			}
			faults := make([]int, 6)
			for i := range faults {
				faults[i] = rnd.IntN(40)
			}
			var wg sync.WaitGroup
			wg.Go(func() { // bursts of failed renewals
				for _, k := range faults {
					time.Sleep(500 * time.Millisecond)
					f.set(func(f *fakeBackend) { f.failNext = k })
				}
			})
			var mu sync.Mutex
			ended := map[*Lease]time.Time{}
			for i, p := range plans {
				wg.Go(func() {
					rnd := rand.New(rand.NewPCG(seed, uint64(i)))
					time.Sleep(p.at)
					name := fmt.Sprintf("l%d", i)
					l, err := c.Acquire(context.Background(), name, p.ttl)
					if errors.Is(err, ErrLost) { // the reply came after the deadline
						return
					}
					if err != nil {
						t.Errorf("failed for seed=%d: acquire %s: %v", seed, name, err)
						return
					}
					context.AfterFunc(l.Context(), func() {
						mu.Lock()
						ended[l] = time.Now()
						mu.Unlock()
					})
					key := name
					for end := time.Now().Add(p.hold); time.Now().Before(end); time.Sleep(time.Duration(1+rnd.IntN(7)) * time.Millisecond) {
						f.mu.Lock()
						v, ok := f.value[key]
						ours := ok && v == lockValueOf(l) && time.Now().Before(f.expires[key])
						f.mu.Unlock()
						if !ours && l.Context().Err() == nil {
							t.Errorf("failed for seed=%d: %s: the store has %q (ours %q) but the Context is live, deadline in %v",
								seed, name, v, lockValueOf(l), time.Until(l.Deadline()))
							return
						}
					}
					l.Release(context.Background())
					<-l.Done()
				})
			}
			wg.Wait()
			synctest.Wait()
			mu.Lock()
			defer mu.Unlock()
			var lost int
			for l, at := range ended {
				if at.After(l.Deadline()) {
					t.Errorf("failed for seed=%d: %s ended %v after its deadline (%v)", seed, l.Name(), at.Sub(l.Deadline()), l.Err())
				}
				if isLost(l.Err(), CauseExpired) {
					lost++
					if !at.Equal(l.Deadline()) {
						t.Errorf("failed for seed=%d: %s expired at %v from its deadline, want exactly at it", seed, l.Name(), at.Sub(l.Deadline()))
					}
				}
				key := l.Name()
				for _, call := range f.renewCalls() {
					if call.key == key && call.sent.After(at) {
						t.Errorf("failed for seed=%d: %s renewed %v after it ended", seed, l.Name(), call.sent.Sub(at))
					}
				}
				if f.renewing(l.Name()) {
					t.Errorf("failed for seed=%d: %s still renewing", seed, l.Name())
				}
			}
			if err := c.hb.checkHeap(); err != nil || c.hb.len() != 0 {
				t.Errorf("failed for seed=%d: heap %v with %d leases, want empty", seed, err, c.hb.len())
			}
			t.Logf("seed %d: %d leases, %d expired, %d renewals", seed, len(ended), lost, len(f.renewCalls()))
		})
	}
}

func TestHeapClientsOnTheirOwnClocks(t *testing.T) {
	// A Client runs on the clock it was made with: one made outside any
	// bubble keeps renewing in real time while one made in a
	// testing/synctest bubble renews on the bubble's clock, in this bubble
	// and in the next.
	f := newFakeBackend()
	c := fakeClient(f, Options{}, nil)
	out := mustAcquire(t, c, "out", 300*time.Millisecond) // renewed every 100ms
	// The bubble cannot read the real clock: a goroutine outside keeps it.
	var elapsed atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for start := time.Now(); ; time.Sleep(time.Millisecond) {
			elapsed.Store(int64(time.Since(start)))
			select {
			case <-stop:
				return
			default:
			}
		}
	})
	defer func() { close(stop); wg.Wait() }()
	renewals := func() int { return len(renewedAt(f, c, time.Time{}, "out")) }
	inBubble := func(t *testing.T) {
		fb := newFakeBackend()
		cb := fakeClient(fb, Options{}, nil)
		start := time.Now()
		in := mustAcquire(t, cb, "in", 300*time.Millisecond)
		// Without letting the bubble's clock move, let real time pass
		// until out has been renewed once more.
		for n := renewals(); renewals() < n+1; runtime.Gosched() {
			if time.Duration(elapsed.Load()) > time.Second {
				t.Fatalf("out (TTL 300ms) not renewed for 1s of real time while a bubble ran; Err %v", out.Err())
			}
		}
		long := mustAcquire(t, cb, "long", time.Hour)
		time.Sleep(time.Second + time.Millisecond)
		if got, want := renewedAt(fb, cb, start, "in"), every(100*time.Millisecond, 100*time.Millisecond, time.Second); !slices.Equal(got, want) {
			t.Errorf("in the bubble: renewed at %v, want %v", got, want)
		}
		if err := cb.Close(context.Background()); err != nil {
			t.Error(err)
		}
		if in.Err() != ErrReleased || long.Err() != ErrReleased {
			t.Errorf("after Close: %v, %v; want ErrReleased", in.Err(), long.Err())
		}
	}
	synctest.Test(t, inBubble)
	synctest.Test(t, inBubble)
	if err := out.Err(); err != nil {
		t.Fatalf("out lost: %v", err)
	}
	release(t, out)
}

// blockingHandler is a slog handler whose "lease lost" records take an hour
// to write (stderr to a full pipe, a log driver applying backpressure).
type blockingHandler struct{ written atomic.Int32 }

func (h *blockingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *blockingHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *blockingHandler) WithGroup(string) slog.Handler            { return h }
func (h *blockingHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "lease lost" {
		time.Sleep(time.Hour)
		h.written.Add(1)
	}
	return nil
}

func TestSynctestLostLeaseEndsWhateverTheLogHandlerDoes(t *testing.T) {
	// The "lease lost" warning goes through the user's handler, which may
	// block; the Context must end at the deadline (or on the "not yours"
	// reply) all the same, and the warning still be written.
	synctest.Test(t, func(t *testing.T) {
		f := newFakeBackend()
		h := &blockingHandler{}
		c := fakeClient(f, Options{Logger: slog.New(h)}, nil)
		start := time.Now()
		stolen := mustAcquire(t, c, "stolen", 300*time.Millisecond)
		time.Sleep(10 * time.Millisecond)
		f.steal("stolen")
		<-stolen.Done()
		if got := time.Since(start); got != 100*time.Millisecond || !isLost(stolen.Err(), CauseStolen) {
			t.Errorf("stolen lease ended at +%v (%v), want +100ms (its next renewal)", got, stolen.Err())
		}
		start = time.Now()
		expired := mustAcquire(t, c, "expired", 300*time.Millisecond)
		f.set(func(f *fakeBackend) { f.down = true })
		<-expired.Done()
		if got := time.Since(start); got != 295*time.Millisecond || !isLost(expired.Err(), CauseExpired) {
			t.Errorf("lease ended at +%v (%v), want +295ms (its deadline)", got, expired.Err())
		}
		time.Sleep(2 * time.Hour)
		if n := h.written.Load(); n != 2 {
			t.Errorf("%d warnings written, want 2", n)
		}
	})
}
