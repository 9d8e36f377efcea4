package lease

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fencekit/fencekit/internal/testenv"
)

// fakeClient returns a client whose scripts run on f, logging into buf.
func fakeClient(f *fakeBackend, opts Options, buf *testenv.SyncBuffer) *Client {
	if buf != nil {
		opts.Logger = slog.New(slog.NewTextHandler(buf, nil))
	} else if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	c, err := NewClient(f, &opts)
	if err != nil {
		panic(err)
	}
	return c
}

func TestSynctestRenewalCadence(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeBackend()
		f.latency = 7 * time.Millisecond
		c := fakeClient(f, Options{}, nil)
		start := time.Now()
		l := mustAcquire(t, c, "cadence", 300*time.Millisecond)
		time.Sleep(time.Second + 10*time.Millisecond) // the last reply comes at +1.007s
		calls := f.renewCalls()
		// Every 100ms (TTL/3) counted from when the previous request was
		// sent, not from its reply: 100, 200, ..., 1000.
		if len(calls) != 10 {
			t.Fatalf("%d renewals in 1s, want 10", len(calls))
		}
		for i, call := range calls {
			if got, want := call.sent.Sub(start), time.Duration(i+1)*100*time.Millisecond; got != want {
				t.Errorf("renewal %d sent at +%v, want +%v", i, got, want)
			}
			// The request's own deadline never outlasts the lease's deadline.
			if prevDeadline := start.Add(time.Duration(i)*100*time.Millisecond + 300*time.Millisecond - 5*time.Millisecond); !call.deadline.Equal(prevDeadline) {
				t.Errorf("renewal %d request deadline +%v, want the lease deadline +%v", i, call.deadline.Sub(start), prevDeadline.Sub(start))
			}
		}
		// Deadline = last confirmed request's send time + TTL - margin (3ms + 2ms).
		if got, want := l.Deadline().Sub(start), time.Second+295*time.Millisecond; got != want {
			t.Errorf("deadline +%v, want +%v", got, want)
		}
		release(t, l)
		n := len(f.renewCalls())
		time.Sleep(time.Second)
		if m := len(f.renewCalls()); m != n {
			t.Errorf("%d renewals after Release", m-n)
		}
	})
}

func TestSynctestDeadlineCountedFromSend(t *testing.T) {
	for _, mode := range []string{"down", "stuck"} {
		t.Run(mode, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFakeBackend()
				f.latency = 40 * time.Millisecond // the acquire reply comes 40ms after the request
				c := fakeClient(f, Options{}, nil)
				start := time.Now()
				l := mustAcquire(t, c, "deadline", 300*time.Millisecond)
				f.set(func(f *fakeBackend) {
					if mode == "down" {
						f.down = true // requests end with their context
					} else {
						f.stuck = 3 * time.Second // requests ignore their context
					}
				})
				<-l.Done()
				// Lost at send + TTL - margin: 295ms after the acquire was
				// sent, not after its reply arrived (that would be 335ms).
				if got := time.Since(start); got != 295*time.Millisecond {
					t.Errorf("lost at +%v, want +295ms", got)
				}
				if !isLost(l.Err(), CauseExpired) {
					t.Fatalf("Err = %v, want LostError expired", l.Err())
				}
				// The request's context and the deadline timer end at the same
				// instant; either explains the loss.
				if !strings.Contains(l.Err().Error(), "renewal sent 195ms before the deadline is still unanswered") &&
					!errors.Is(l.Err(), context.DeadlineExceeded) {
					t.Errorf("Err = %v, want it to carry the last renewal error", l.Err())
				}
				// The heartbeat goroutine exits once its request returns.
				// synctest.Test fails if any goroutine is left.
				synctest.Wait()
				if r := f.renewing("deadline"); r != (mode == "stuck") {
					t.Errorf("renewal running after the deadline: %v, want %v", r, mode == "stuck")
				}
				time.Sleep(4 * time.Second)
				if f.renewing("deadline") {
					t.Error("renewal still running after its request returned")
				}
			})
		})
	}
}

func TestSynctestReleaseLeavesRenewalInFlight(t *testing.T) {
	// Release ends the lease at once but does not cancel its renewal in
	// flight: a pooled driver closes the connection of a cancelled request
	// (pgx, see lease/pglease). The request ends on its own or, as here
	// when it hangs, at the batch's deadline; its answer changes nothing.
	synctest.Test(t, func(t *testing.T) {
		f := newFakeBackend()
		c := fakeClient(f, Options{}, nil)
		l := mustAcquire(t, c, "a", 3*time.Second)
		deadline := l.Deadline()
		f.set(func(f *fakeBackend) { f.down = true })
		time.Sleep(1500 * time.Millisecond) // the renewal sent at +1s hangs
		if !f.renewing("a") {
			t.Fatal("no renewal in flight")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel()
		if err := l.Release(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Release with the store down = %v, want DeadlineExceeded", err)
		}
		if l.Err() != ErrReleased {
			t.Fatalf("after Release: Err = %v, want ErrReleased", l.Err())
		}
		time.Sleep(time.Until(deadline) - time.Millisecond)
		synctest.Wait()
		if !f.renewing("a") {
			t.Fatal("Release cancelled the renewal in flight")
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if f.renewing("a") {
			t.Error("renewal still in flight after its deadline")
		}
		if l.Err() != ErrReleased {
			t.Errorf("after the renewal's answer: Err = %v, want ErrReleased", l.Err())
		}
		f.set(func(f *fakeBackend) { f.down = false })
		if err := c.Close(context.Background()); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
}

func TestSynctestTransientErrorsRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeBackend()
		c := fakeClient(f, Options{RetryDelay: 20 * time.Millisecond}, nil)
		start := time.Now()
		l := mustAcquire(t, c, "retry", 300*time.Millisecond)
		f.set(func(f *fakeBackend) { f.failNext = 5 }) // 100, 120, 140, 160, 180 fail; 200 works
		time.Sleep(250 * time.Millisecond)
		if l.Err() != nil {
			t.Fatalf("lost after transient errors: %v", l.Err())
		}
		calls := f.renewCalls()
		if len(calls) != 6 || calls[5].sent.Sub(start) != 200*time.Millisecond {
			t.Fatalf("%d renewals, last at %v; want 6, the last at +200ms", len(calls), calls[len(calls)-1].sent.Sub(start))
		}
		if got := l.Deadline().Sub(start); got != 495*time.Millisecond {
			t.Errorf("deadline +%v, want +495ms", got)
		}
		// Failing until the deadline loses the lease exactly there.
		f.set(func(f *fakeBackend) { f.failNext = 1000 })
		<-l.Done()
		if got := time.Since(start); got != 495*time.Millisecond {
			t.Errorf("lost at +%v, want +495ms", got)
		}
		if !isLost(l.Err(), CauseExpired) || !errors.Is(l.Err(), errFake) {
			t.Errorf("Err = %v, want expired carrying %v", l.Err(), errFake)
		}
		// Release after a loss still runs the compare-and-delete and
		// reports the loss; the key had expired by then.
		f.set(func(f *fakeBackend) { f.failNext = 0 })
		time.Sleep(100 * time.Millisecond)
		if err := l.Release(context.Background()); !isLost(err, CauseMissing) {
			t.Errorf("Release after loss = %v", err)
		}
	})
}

func TestSynctestStolenEndsAtNextHeartbeat(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeBackend()
		buf := new(testenv.SyncBuffer)
		c := fakeClient(f, Options{RenewInterval: 50 * time.Millisecond}, buf)
		start := time.Now()
		l := mustAcquire(t, c, "stolen", time.Second)
		time.Sleep(10 * time.Millisecond)
		f.steal("stolen")
		<-l.Done()
		if got := time.Since(start); got != 50*time.Millisecond {
			t.Errorf("lost at +%v, want +50ms (the next heartbeat)", got)
		}
		if !isLost(l.Err(), CauseStolen) {
			t.Errorf("Err = %v", l.Err())
		}
		synctest.Wait() // the warning is written after the Context ends
		if !strings.Contains(buf.String(), "lease lost") || !strings.Contains(buf.String(), "cause=stolen") {
			t.Errorf("log = %q, want a lease lost warning", buf.String())
		}
	})
}

func TestSynctestDoneOnceUnderRaces(t *testing.T) {
	// Release, a theft and the deadline all try to end the lease at about
	// the same instant: exactly one cause wins, Done closes once.
	for seed := range 20 {
		synctest.Test(t, func(t *testing.T) {
			f := newFakeBackend()
			c := fakeClient(f, Options{RenewInterval: 30 * time.Millisecond}, nil)
			l := mustAcquire(t, c, "race", 100*time.Millisecond)
			time.Sleep(time.Duration(seed) * 5 * time.Millisecond)
			f.set(func(f *fakeBackend) { f.down = seed%2 == 0 })
			f.steal("race")
			var wg sync.WaitGroup
			errs := make([]error, 3)
			for i := range 3 {
				wg.Go(func() {
					ctx, cancel := context.WithTimeout(context.Background(), time.Second)
					defer cancel()
					errs[i] = l.Release(ctx)
				})
			}
			wg.Wait()
			<-l.Done()
			cause := l.Err()
			if !errors.Is(cause, ErrReleased) && !errors.Is(cause, ErrLost) {
				t.Fatalf("seed %d: cause %v", seed, cause)
			}
			for _, err := range errs[1:] {
				if err != errs[0] && !(errors.Is(err, context.DeadlineExceeded) || errors.Is(errs[0], context.DeadlineExceeded)) {
					t.Errorf("seed %d: Release results differ: %v vs %v", seed, err, errs[0])
				}
			}
			if l.Err() != cause {
				t.Errorf("seed %d: cause changed from %v to %v", seed, cause, l.Err())
			}
		})
	}
}

func TestSynctestP99Warning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeBackend()
		f.latency = 40 * time.Millisecond // above TTL/10 = 30ms
		buf := new(testenv.SyncBuffer)
		c := fakeClient(f, Options{}, buf)
		l := mustAcquire(t, c, "slow", 300*time.Millisecond)
		time.Sleep(450 * time.Millisecond) // 4 heartbeats: not enough samples
		if strings.Contains(buf.String(), "p99") {
			t.Fatalf("warned after 4 samples: %s", buf.String())
		}
		time.Sleep(2 * time.Second) // 24 heartbeats: one warning (rate limited)
		if n := strings.Count(buf.String(), "p99 latency"); n != 1 {
			t.Fatalf("%d warnings, want 1:\n%s", n, buf.String())
		}
		if p := c.HeartbeatP99(); p != 40*time.Millisecond {
			t.Errorf("HeartbeatP99 = %v, want 40ms", p)
		}
		release(t, l)

		f2 := newFakeBackend()
		f2.latency = 20 * time.Millisecond // below TTL/10
		buf2 := new(testenv.SyncBuffer)
		c2 := fakeClient(f2, Options{}, buf2)
		l2 := mustAcquire(t, c2, "fast", 300*time.Millisecond)
		time.Sleep(2 * time.Second)
		if strings.Contains(buf2.String(), "p99") {
			t.Errorf("warned at 20ms with a 300ms TTL: %s", buf2.String())
		}
		release(t, l2)
	})
}

func TestSynctestAcquireWaitWakesAtHolderExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeBackend()
		c := fakeClient(f, Options{WaitJitter: -1}, nil)
		holder := mustAcquire(t, c, "wait", 500*time.Millisecond)
		f.crash(holder)
		start := time.Now()
		l, err := c.AcquireWait(context.Background(), "wait", time.Second)
		if err != nil {
			t.Fatal(err)
		}
		// Woken exactly when the key expired: one refused attempt, one grant.
		if got := time.Since(start); got != 500*time.Millisecond {
			t.Errorf("acquired after %v, want 500ms", got)
		}
		if n := f.count("acquire"); n != 3 {
			t.Errorf("%d acquire attempts, want 3 (holder, refused, granted)", n)
		}
		if l.Token() <= holder.Token() {
			t.Errorf("token %v not above %v", l.Token(), holder.Token())
		}
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		if _, err := c.AcquireWait(ctx, "wait", time.Second); !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrNotAcquired) {
			t.Errorf("AcquireWait past ctx = %v, want DeadlineExceeded and ErrNotAcquired", err)
		}
		release(t, l)
		holder.end(ErrReleased)
	})
}

func TestSynctestLateAcquireReplyIsAnError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeBackend()
		f.latency = 400 * time.Millisecond
		c := fakeClient(f, Options{}, nil)
		l, err := c.Acquire(context.Background(), "late", 300*time.Millisecond)
		if l != nil || err == nil {
			t.Fatalf("Acquire with a reply 400ms after the request, TTL 300ms: lease %v, err %v; want no lease and an error", l, err)
		}
		var lost *LostError
		if !errors.Is(err, ErrLost) || !errors.As(err, &lost) || lost.Cause != CauseExpired {
			t.Fatalf("err = %v; want a *LostError with CauseExpired", err)
		}
		f.mu.Lock()
		_, held := f.value["late"]
		f.mu.Unlock()
		if held {
			t.Fatal("the late grant was not given back")
		}
		synctest.Wait()
		if n := len(f.renewCalls()); n != 0 {
			t.Errorf("%d renewals of a grant that came after its deadline", n)
		}
		if err := c.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

func TestSynctestReleaseWaitsForTheReleaseInFlight(t *testing.T) {
	// Releases of one lease called while one is in flight wait for its
	// answer and return it, sending nothing; one whose context ends first
	// returns at once.
	synctest.Test(t, func(t *testing.T) {
		f := newFakeBackend()
		c := fakeClient(f, Options{}, nil)
		defer c.Close(context.Background())
		l := mustAcquire(t, c, "a", 3*time.Second)
		f.set(func(f *fakeBackend) { f.latency = 10 * time.Millisecond })
		errs := make(chan error, 3)
		for range 3 {
			go func() { errs <- l.Release(context.Background()) }()
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
		defer cancel()
		synctest.Wait() // one Release sent, two waiting
		if err := l.Release(ctx); !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "another Release ran") {
			t.Errorf("Release whose context ends while another runs = %v, want DeadlineExceeded, another Release ran", err)
		}
		for range 3 {
			select {
			case err := <-errs:
				if err != nil {
					t.Errorf("concurrent Release = %v, want nil", err)
				}
			case <-time.After(time.Second):
				t.Fatal("a Release waiting for the one in flight never returned")
			}
		}
		if n := f.count("release"); n != 1 {
			t.Errorf("%d releases sent, want 1", n)
		}
	})
}
