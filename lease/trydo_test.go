package lease

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fencekit/fencekit/fence"
)

func TestSynctestTryDoRunsOnlyWhenFree(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeBackend()
		c := fakeClient(f, Options{}, nil)
		ctx := context.Background()

		var got fence.Token
		ran, err := c.TryDo(ctx, "job", time.Second, func(ctx context.Context, tok fence.Token) error {
			got = tok
			if info, _ := c.Inspect(ctx, "job"); !info.Held || info.Holder != tok {
				t.Errorf("fn runs without holding the lease: %+v", info)
			}
			return nil
		})
		if !ran || err != nil || got == 0 {
			t.Fatalf("TryDo on a free lease = %v, %v (token %v); want it to run", ran, err, got)
		}
		if info, _ := c.Inspect(ctx, "job"); info.Held {
			t.Fatal("the lease is still held after TryDo returned")
		}

		holder := mustAcquire(t, c, "job", 10*time.Second)
		sent := len(f.calls)
		start := time.Now()
		bounded, cancel := context.WithTimeout(ctx, time.Second) // a TryDo that waited would end here
		defer cancel()
		ran, err = c.TryDo(bounded, "job", time.Second, func(context.Context, fence.Token) error {
			t.Error("fn ran while someone else held the lease")
			return nil
		})
		if ran || err != nil || time.Since(start) != 0 || len(f.calls) != sent+1 {
			t.Fatalf("TryDo on a held lease = %v, %v after %v and %d requests; want false, nil at once after one",
				ran, err, time.Since(start), len(f.calls)-sent)
		}
		release(t, holder)

		boom := errors.New("boom")
		ran, err = c.TryDo(ctx, "job", time.Second, func(context.Context, fence.Token) error { return boom })
		if !ran || !errors.Is(err, boom) {
			t.Fatalf("TryDo with a failing fn = %v, %v; want true and fn's error", ran, err)
		}

		f.set(func(f *fakeBackend) { f.down = true })
		short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		ran, err = c.TryDo(short, "job", time.Second, func(context.Context, fence.Token) error { return nil })
		if ran || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("TryDo with the store down = %v, %v; want false and the context's error", ran, err)
		}
	})
}

func TestSynctestTryDoBadInputSendsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeBackend()
		c := fakeClient(f, Options{}, nil)
		fn := func(context.Context, fence.Token) error { t.Error("fn ran"); return nil }
		for _, tc := range []struct {
			name string
			ttl  time.Duration
			fn   func(context.Context, fence.Token) error
		}{
			{"a b", time.Second, fn},
			{"ok", time.Millisecond, fn},
			{"ok", time.Second, nil},
		} {
			if ran, err := c.TryDo(context.Background(), tc.name, tc.ttl, tc.fn); ran || !errors.Is(err, ErrInvalid) {
				t.Errorf("TryDo(%q, %v) = %v, %v; want false, ErrInvalid", tc.name, tc.ttl, ran, err)
			}
		}
		if len(f.calls) != 0 {
			t.Fatalf("%d requests sent for bad input", len(f.calls))
		}
	})
}
