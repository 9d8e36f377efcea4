package pglease

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/testenv"
	"github.com/fencekit/fencekit/lease"
)

// TestAdvisoryOneNameStorm: on one name, three advisory clients Acquire
// and AcquireWait (renewing every 30 ms) and release, while an operator
// client calls ForceRelease of the token it last saw and Bump to the
// server's time, for 3 s. No call waits past its 5 s context by more than
// 2 s (no deadlock between the row lock and the advisory lock, nor a
// PostgreSQL deadlock error), no token is granted twice, and afterwards
// the name is free and the next grant's token is above every earlier one.
func TestAdvisoryOneNameStorm(t *testing.T) {
	env := testenv.PostgresMigrated(t)
	const name, callLimit, slack = "storm", 5 * time.Second, 2 * time.Second
	var mu sync.Mutex
	seen := map[fence.Token]bool{}
	var top fence.Token
	var forced, bumped int
	check := func(what string, start time.Time, err error) {
		if d := time.Since(start); d > callLimit+slack {
			t.Errorf("%s returned after %v", what, d)
		}
		if err != nil && strings.Contains(err.Error(), "deadlock") {
			t.Errorf("%s: %v", what, err)
		}
	}
	stop := time.Now().Add(3 * time.Second)
	var wg sync.WaitGroup
	for i := range 3 {
		cl, err := NewAdvisory(env.Pool, quiet)
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close(context.Background())
		wg.Go(func() {
			for j := 0; time.Now().Before(stop); j++ {
				ctx, cancel := context.WithTimeout(context.Background(), callLimit)
				start := time.Now()
				var l *lease.Lease
				var err error
				if (i+j)%2 == 0 {
					l, err = cl.AcquireWait(ctx, name, 90*time.Millisecond)
				} else {
					l, err = cl.Acquire(ctx, name, 90*time.Millisecond)
				}
				check("Acquire", start, err)
				if err == nil {
					mu.Lock()
					if seen[l.Token()] {
						t.Errorf("token %v granted twice", l.Token())
					}
					seen[l.Token()] = true
					top = max(top, l.Token())
					mu.Unlock()
					select { // hold through a few renewals, or until forced out
					case <-l.Done():
					case <-time.After(time.Duration(j%4) * 40 * time.Millisecond):
					}
					start = time.Now()
					err = l.Release(ctx)
					check("Release", start, err)
				}
				cancel()
			}
		})
	}
	op, err := NewAdvisory(env.Pool, quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer op.Close(context.Background())
	wg.Go(func() {
		for j := 0; time.Now().Before(stop); j++ {
			ctx, cancel := context.WithTimeout(context.Background(), callLimit)
			start := time.Now()
			info, err := op.Inspect(ctx, name)
			check("Inspect", start, err)
			if err == nil && info.Held && j%2 == 0 {
				start = time.Now()
				_, err = op.ForceRelease(ctx, name, info.Holder)
				check("ForceRelease", start, err)
				forced++
			} else if err == nil {
				start = time.Now()
				_, _, err = op.Bump(ctx, name, fence.Token(time.Now().UnixMicro()))
				check("Bump", start, err)
				bumped++
			}
			cancel()
			time.Sleep(10 * time.Millisecond)
		}
	})
	wg.Wait()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var l *lease.Lease
	testenv.Poll(t, 20*time.Second, "the name free after the storm", func() bool {
		l, err = op.Acquire(ctx, name, time.Minute)
		if err != nil && !errors.Is(err, lease.ErrNotAcquired) {
			t.Fatal(err)
		}
		return err == nil
	})
	defer l.Release(ctx)
	t.Logf("%d grants, %d ForceRelease, %d Bump calls", len(seen), forced, bumped)
	if len(seen) < 10 || l.Token() <= top {
		t.Fatalf("%d grants, then token %v after %v; want 10 or more, then a larger token", len(seen), l.Token(), top)
	}
}
