package redislease

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/testenv"
	"github.com/fencekit/fencekit/lease"
)

func TestHeapStressRealRedis(t *testing.T) {
	// Goroutines share one Client, acquiring own and shared names with TTLs
	// from 20ms to a minute, holding them for up to 300ms (several renewals
	// of the short ones) and releasing them. While a Context is live Redis
	// must hold the lease's value; a live lease's token is above every token
	// released before on its name; no token repeats.
	c, env := newTestClient(t, &lease.Options{Logger: slog.New(slog.DiscardHandler)})
	base := warmBase(t, c, env.Name("warm"))
	ctx := context.Background()
	shared := []string{env.Name("s0"), env.Name("s1"), env.Name("s2")}
	ttls := []time.Duration{20 * time.Millisecond, 50 * time.Millisecond, 200 * time.Millisecond, time.Second, time.Minute}
	var (
		mu       sync.Mutex
		released = map[string]fence.Token{}
		issued   = map[string]map[fence.Token]bool{}
		grants   atomic.Int64
		lost     atomic.Int64
	)
	stop := time.Now().Add(1500 * time.Millisecond)
	var wg sync.WaitGroup
	for g := range 24 {
		wg.Go(func() {
			rnd := rand.New(rand.NewPCG(uint64(g), 1))
			own := env.Name(fmt.Sprintf("own%d", g))
			for time.Now().Before(stop) && !t.Failed() {
				name := own
				if rnd.IntN(2) == 0 {
					name = shared[rnd.IntN(len(shared))]
				}
				ttl := ttls[rnd.IntN(len(ttls))]
				l, err := c.Acquire(ctx, name, ttl)
				if isNotAcquired(err) {
					time.Sleep(time.Duration(rnd.IntN(3000)) * time.Microsecond)
					continue
				}
				if errors.Is(err, lease.ErrLost) && ttl < time.Second { // the reply came after the deadline
					lost.Add(1)
					continue
				}
				if err != nil {
					t.Errorf("acquire %s: %v", name, err)
					return
				}
				grants.Add(1)
				mu.Lock()
				if issued[name] == nil {
					issued[name] = map[fence.Token]bool{}
				}
				if issued[name][l.Token()] {
					t.Errorf("%s: token %v issued twice", name, l.Token())
				}
				issued[name][l.Token()] = true
				if r := released[name]; l.Context().Err() == nil && l.Token() <= r {
					t.Errorf("%s: live lease's token %v not above the released %v", name, l.Token(), r)
				}
				mu.Unlock()
				key := keysOf(name).lock
				for end := time.Now().Add(min(time.Duration(rnd.Int64N(int64(2*ttl))), 300*time.Millisecond)); time.Now().Before(end); {
					// Redis must hold the value until the local deadline. A
					// read sent after it while the Context is still live is a
					// late timer (this process not run: a pause), which the
					// token covers, not an early expiry.
					sent := time.Now()
					v, err := env.Client.Get(ctx, key).Result()
					if v != lockValueOf(l) && l.Context().Err() == nil && sent.Before(l.Deadline()) {
						t.Errorf("%s (TTL %v): Redis has %q (%v), ours is %q, but the Context is live, deadline in %v",
							name, ttl, v, err, lockValueOf(l), time.Until(l.Deadline()))
						break
					}
					time.Sleep(time.Duration(rnd.IntN(5000)) * time.Microsecond)
				}
				if l.Err() != nil {
					lost.Add(1)
					if ttl >= time.Second {
						t.Errorf("%s (TTL %v) lost: %v", name, ttl, l.Err())
					}
				}
				l.Release(ctx)
				mu.Lock()
				released[name] = max(released[name], l.Token())
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	t.Logf("%d grants, %d lost (TTL below 1s, on a busy machine)", grants.Load(), lost.Load())
	if grants.Load() < 100 {
		t.Errorf("only %d grants: the test did not exercise the heap", grants.Load())
	}
	testenv.CheckGoroutines(t, base)
}
