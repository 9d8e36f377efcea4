package redislease

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/lease"
)

// lockKeyOf is the Redis key holding name's lease on c (one place for the
// tests of Do and Campaign to follow the key layout).
func lockKeyOf(c *lease.Client, name string) string { return keysOf(name).lock }

// freeNow reports whether name can be acquired at once (and releases it).
func freeNow(t *testing.T, c *lease.Client, name string) (fence.Token, bool) {
	t.Helper()
	l, err := c.Acquire(context.Background(), name, time.Second)
	if isNotAcquired(err) {
		return 0, false
	}
	if err != nil {
		t.Fatal(err)
	}
	release(t, l)
	return l.Token(), true
}

func TestDoRunsUnderTheLeaseAndReleases(t *testing.T) {
	c, env := newTestClient(t, nil)
	name := env.Name("do")
	ctx := context.Background()
	var got fence.Token
	err := c.Do(ctx, name, 5*time.Second, func(ctx context.Context, tok fence.Token) error {
		got = tok
		if ctx.Err() != nil {
			t.Errorf("fn's context already done: %v", context.Cause(ctx))
		}
		if _, free := freeNow(t, c, name); free {
			t.Error("the lease was free while fn ran")
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Do = %v", err)
	}
	if got == 0 {
		t.Fatal("fn got token 0")
	}
	next, free := freeNow(t, c, name)
	if !free {
		t.Fatal("the lease is still held after Do returned")
	}
	if next <= got {
		t.Errorf("next token %v not above Do's %v", next, got)
	}
}

func TestDoReturnsFnErrorAndReleases(t *testing.T) {
	c, env := newTestClient(t, nil)
	name := env.Name("do-err")
	boom := errors.New("boom")
	err := c.Do(context.Background(), name, 5*time.Second, func(context.Context, fence.Token) error { return boom })
	if !errors.Is(err, boom) || errors.Is(err, lease.ErrLost) {
		t.Fatalf("Do = %v, want fn's error only", err)
	}
	if _, free := freeNow(t, c, name); !free {
		t.Fatal("the lease is still held after fn failed")
	}
}

func TestDoLeaseLostWhileFnRuns(t *testing.T) {
	c, env := newTestClient(t, &lease.Options{RenewInterval: 20 * time.Millisecond})
	name := env.Name("do-lost")
	var cause error
	err := c.Do(context.Background(), name, 5*time.Second, func(ctx context.Context, tok fence.Token) error {
		if err := env.Client.Del(context.Background(), lockKeyOf(c, name)).Err(); err != nil {
			t.Error(err)
		}
		select {
		case <-ctx.Done(): // the next renewal finds the key gone
			cause = context.Cause(ctx)
		case <-time.After(10 * time.Second):
			t.Error("fn's context still live 10s after its key was deleted")
		}
		return nil // fn did not notice: Do must still say the lease was lost
	})
	if !isLost(err, lease.CauseMissing) || !errors.Is(err, fence.ErrFencedOut) {
		t.Fatalf("Do = %v, want a lost lease (missing) matching ErrLost and fence.ErrFencedOut", err)
	}
	if !isLost(cause, lease.CauseMissing) {
		t.Errorf("fn's context cause = %v, want the lost lease", cause)
	}
}

func TestDoLossFoundAtRelease(t *testing.T) {
	// The key is taken over before the heartbeat looks (renewals every
	// 3.3s): the release finds another owner, and Do reports the loss.
	c, env := newTestClient(t, nil)
	name := env.Name("do-stolen")
	boom := errors.New("boom")
	err := c.Do(context.Background(), name, 10*time.Second, func(ctx context.Context, tok fence.Token) error {
		return errors.Join(boom, env.Client.Set(context.Background(), lockKeyOf(c, name), "1:someone-else", time.Minute).Err())
	})
	if !isLost(err, lease.CauseStolen) || !errors.Is(err, fence.ErrFencedOut) || !errors.Is(err, boom) {
		t.Fatalf("Do = %v, want fn's error and a lost lease (stolen)", err)
	}
}

func TestDoContextEndsWhileFnRuns(t *testing.T) {
	c, env := newTestClient(t, nil)
	name := env.Name("do-cancel")
	ctx, cancel := context.WithCancelCause(context.Background())
	stop := errors.New("operator stopped it")
	err := c.Do(ctx, name, 5*time.Second, func(ctx context.Context, tok fence.Token) error {
		cancel(stop)
		<-ctx.Done()
		return context.Cause(ctx)
	})
	if !errors.Is(err, stop) || errors.Is(err, lease.ErrLost) {
		t.Fatalf("Do = %v, want the caller's cause and no loss", err)
	}
	if _, free := freeNow(t, c, name); !free {
		t.Fatal("the lease is still held after Do's context ended")
	}
}

func TestDoWaitsForTheHolder(t *testing.T) {
	c, env := newTestClient(t, nil)
	name := env.Name("do-wait")
	holder := mustAcquire(t, mustNew(t, env.Client, nil), name, 10*time.Second)
	ran := make(chan fence.Token, 1)
	done := make(chan error, 1)
	go func() {
		done <- c.Do(context.Background(), name, time.Second, func(_ context.Context, tok fence.Token) error {
			ran <- tok
			return nil
		})
	}()
	select {
	case <-ran:
		t.Fatal("fn ran while another holder held the lease")
	case <-time.After(200 * time.Millisecond):
	}
	release(t, holder) // the waiter wakes on the release notification
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if tok := <-ran; tok <= holder.Token() {
		t.Errorf("Do's token %v not above the earlier holder's %v", tok, holder.Token())
	}
}

func TestDoBadInputRunsNothing(t *testing.T) {
	c, env := newTestClient(t, nil)
	fn := func(context.Context, fence.Token) error {
		t.Error("fn ran")
		return nil
	}
	done, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		what string
		ctx  context.Context
		name string
		ttl  time.Duration
		fn   func(context.Context, fence.Token) error
		want error
	}{
		{"nil fn", context.Background(), env.Name("a"), time.Second, nil, lease.ErrInvalid},
		{"bad ttl", context.Background(), env.Name("a"), time.Microsecond, fn, lease.ErrInvalid},
		{"bad name", context.Background(), "a b", time.Second, fn, lease.ErrInvalid},
		{"done context", done, env.Name("a"), time.Second, fn, context.Canceled},
	} {
		if err := c.Do(tc.ctx, tc.name, tc.ttl, tc.fn); !errors.Is(err, tc.want) {
			t.Errorf("%s: Do = %v, want %v", tc.what, err, tc.want)
		}
	}
}

func TestDoReleasesWhenFnPanics(t *testing.T) {
	c, env := newTestClient(t, nil)
	name := env.Name("do-panic")
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Errorf("recovered %v, want fn's panic", r)
			}
		}()
		c.Do(context.Background(), name, 5*time.Second, func(context.Context, fence.Token) error { panic("boom") })
	}()
	if _, free := freeNow(t, c, name); !free {
		t.Fatal("the lease is still held after fn panicked")
	}
}
