package lease

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fencekit/fencekit/fence"
)

func TestLostMatchesFencedOut(t *testing.T) {
	for _, err := range []error{ErrLost, &LostError{Name: "n", Token: 7, Cause: CauseStolen}} {
		if !errors.Is(err, fence.ErrFencedOut) || !errors.Is(err, ErrLost) {
			t.Errorf("%v: matches ErrFencedOut %v, ErrLost %v; want both", err, errors.Is(err, fence.ErrFencedOut), errors.Is(err, ErrLost))
		}
	}
	if errors.Is(ErrReleased, fence.ErrFencedOut) || errors.Is(ErrLost, fence.ErrStale) {
		t.Error("ErrReleased must not match ErrFencedOut, nor ErrLost ErrStale")
	}
	if ErrLost.Error() != "lease: lost" {
		t.Errorf("ErrLost says %q", ErrLost.Error())
	}
}

// TestStoreTimeoutMatchesContext: a store client that reports its own
// timeout when ctx's deadline passes (go-redis with ContextTimeoutEnabled:
// "i/o timeout") still gives an Acquire or Release error that matches
// context.DeadlineExceeded, as the docs promise a context's error.
func TestStoreTimeoutMatchesContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeBackend()
		c := fakeClient(f, Options{}, nil)
		defer c.Close(context.Background())
		l := mustAcquire(t, c, "held", time.Minute)
		f.set(func(f *fakeBackend) { f.stuck = time.Second }) // answers "i/o timeout" after its ctx ended
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel()
		if _, err := c.Acquire(ctx, "other", time.Minute); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Acquire whose store timed out with ctx = %v; want it to match context.DeadlineExceeded", err)
		}
		ctx, cancel = context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel()
		if err := l.Release(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Release whose store timed out with ctx = %v; want it to match context.DeadlineExceeded", err)
		}
		f.set(func(f *fakeBackend) { f.stuck = 0 })
	})
}
