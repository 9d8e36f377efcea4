package lease

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

func TestSynctestAcquireWaitJitter(t *testing.T) {
	// Waiters refused by the same holder do not all retry at its expiry:
	// each adds its own random delay below WaitJitter.
	synctest.Test(t, func(t *testing.T) {
		f := newFakeBackend()
		const jitter = 50 * time.Millisecond
		c := fakeClient(f, Options{WaitJitter: jitter}, nil)
		holder := mustAcquire(t, c, "jitter", 500*time.Millisecond)
		f.crash(holder)
		start := time.Now()
		ctx, cancel := context.WithCancel(context.Background())
		const waiters = 8
		won := make(chan *Lease, waiters)
		var wg sync.WaitGroup
		for range waiters {
			wg.Go(func() {
				if l, err := c.AcquireWait(ctx, "jitter", time.Second); err == nil {
					won <- l
				}
			})
		}
		time.Sleep(600 * time.Millisecond)
		cancel()
		wg.Wait()
		close(won)
		n := 0
		for l := range won {
			n++
			release(t, l)
		}
		holder.end(ErrReleased)
		if n != 1 {
			t.Fatalf("%d waiters got the lease, want 1", n)
		}
		// The first attempts are at +0; the retries after the holder's
		// expiry spread over [500ms, 550ms), one per waiter.
		times := map[time.Duration]bool{}
		retries := 0
		f.mu.Lock()
		for _, call := range f.calls {
			if d := call.sent.Sub(start); call.script == "acquire" && d > 0 {
				if d < 500*time.Millisecond || d >= 500*time.Millisecond+jitter {
					t.Errorf("retry at +%v, want within [500ms, 550ms)", d)
				}
				retries++
				times[d] = true
			}
		}
		f.mu.Unlock()
		if retries != waiters {
			t.Errorf("%d retries, want one per waiter (%d)", retries, waiters)
		}
		if len(times) < waiters/2 {
			t.Errorf("retries at only %d distinct instants for %d waiters: no jitter", len(times), waiters)
		}
	})
}
