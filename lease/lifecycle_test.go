package lease

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fencekit/fencekit/internal/testenv"
)

func TestSynctestCloseCutsRenewalsInFlight(t *testing.T) {
	// Redis stops answering with renewals in flight: Close ends every lease
	// at once, cancels the renewals, and returns when ctx ends, counting
	// the leases it could not delete. synctest.Test fails if a goroutine
	// is left.
	synctest.Test(t, func(t *testing.T) {
		f := newFakeBackend()
		c := fakeClient(f, Options{}, nil)
		a := mustAcquire(t, c, "a", 3*time.Second)
		b := mustAcquire(t, c, "b", 3*time.Second)
		f.set(func(f *fakeBackend) { f.down = true })
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
		f := newFakeBackend()
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
		f := newFakeBackend()
		var buf testenv.SyncBuffer
		c := fakeClient(f, Options{Identity: "worker-7/42"}, &buf)
		l := mustAcquire(t, c, "logged", 300*time.Millisecond)
		f.steal("logged")
		<-l.Done()
		synctest.Wait() // the log is written by a goroutine of its own
		out := buf.String()
		for _, want := range []string{"cause=stolen", "identity=worker-7/42", "backend=fake", `held by \"worker-7/42\" lost: fake shows another holder`} {
			if strings.Contains(out, "err=<nil>") || !strings.Contains(out, want) {
				t.Fatalf("log of a stolen lease does not say %s:\n%s", want, out)
			}
		}
		var lost *LostError
		if !errors.As(l.Err(), &lost) || lost.Identity != "worker-7/42" || lost.Backend != "fake" {
			t.Fatalf("Err() = %#v, want the identity and the backend", l.Err())
		}
	})
}

func TestSynctestAcquireWaitTimeoutIsOneLine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeBackend()
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

func TestSynctestCloseLeavesNoLeaseLive(t *testing.T) {
	// Close at a random moment, with renewals due, in flight and just
	// answered: afterwards no lease of the Client is live and its heap is
	// empty, whatever the heartbeat was doing.
	for seed := range uint64(16) {
		synctest.Test(t, func(t *testing.T) {
			rnd := rand.New(rand.NewPCG(seed, 11))
			f := newFakeBackend()
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
		f := newFakeBackend()
		c := fakeClient(f, Options{}, nil)
		for i := range 3 {
			mustAcquire(t, c, fmt.Sprint("l", i), time.Second)
		}
		f.set(func(f *fakeBackend) { f.failRel = 1 })
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
