package lease

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencekit/fencekit/fence"
)

// sent counts the requests f received.
func (f *fakeBackend) sent() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls)
}

// A TTL above MaxTTL is refused before anything is sent; MaxTTL itself is
// granted. Before MaxTTL a 200-year TTL was granted.
func TestTTLAboveMaxIsRefused(t *testing.T) {
	f := newFakeBackend()
	c := fakeClient(f, Options{}, nil)
	defer c.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, ttl := range []time.Duration{MaxTTL + time.Millisecond, 200 * 365 * 24 * time.Hour} {
		_, err := c.Acquire(ctx, "a", ttl)
		if !errors.Is(err, ErrInvalid) || !errors.Is(err, fence.ErrInvalid) || !strings.Contains(err.Error(), "above the maximum 24h0m0s") {
			t.Errorf("Acquire(TTL %v) = %v; want ErrInvalid naming the maximum", ttl, err)
		}
		_, err = c.AcquireWait(ctx, "a", ttl)
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("AcquireWait(TTL %v) = %v; want ErrInvalid", ttl, err)
		}
	}
	if n := f.sent(); n != 0 {
		t.Fatalf("%d requests sent for TTLs above MaxTTL", n)
	}
	release(t, mustAcquire(t, c, "a", MaxTTL))
}

// Every method of a nil *Lease or *Client returns an error matching
// ErrInvalid (or a zero value) instead of panicking. Before, a nil *Lease
// panicked.
func TestNilLeaseAndClient(t *testing.T) {
	ctx := context.Background()
	var l *Lease
	if err := l.Release(ctx); !errors.Is(err, ErrInvalid) || err.Error() != "lease: nil *lease.Lease (the Acquire that returned it failed)" {
		t.Errorf("nil Lease: Release = %v", err)
	}
	if err := l.Err(); !errors.Is(err, ErrInvalid) {
		t.Errorf("nil Lease: Err = %v", err)
	}
	if cause := context.Cause(l.Context()); !errors.Is(cause, ErrInvalid) {
		t.Errorf("nil Lease: Context's cause = %v, want ErrInvalid", cause)
	}
	select {
	case <-l.Done():
	default:
		t.Error("nil Lease: Done is not closed")
	}
	if l.Token() != 0 || l.Name() != "" || !l.Deadline().IsZero() {
		t.Errorf("nil Lease: Token %d, Name %q, Deadline %v; want zeros", l.Token(), l.Name(), l.Deadline())
	}

	var c *Client
	fn := func(context.Context, fence.Token) error { return nil }
	_, errInspect := c.Inspect(ctx, "a")
	_, errTryDo := c.TryDo(ctx, "a", time.Second, fn)
	for what, err := range map[string]error{
		"Acquire":  func() error { _, err := c.Acquire(ctx, "a", time.Second); return err }(),
		"Wait":     func() error { _, err := c.AcquireWait(ctx, "a", time.Second); return err }(),
		"Inspect":  errInspect,
		"Do":       c.Do(ctx, "a", time.Second, fn),
		"TryDo":    errTryDo,
		"Campaign": c.Campaign(ctx, "a", time.Second, fn),
		"Close":    c.Close(ctx),
	} {
		if !errors.Is(err, ErrInvalid) || err.Error() != "lease: nil *lease.Client" {
			t.Errorf("nil Client: %s = %v; want ErrInvalid", what, err)
		}
	}
	if _, err := NewClient(nil, nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("NewClient(nil) = %v; want ErrInvalid", err)
	}
}

// Every error says "lease:" once, also when it wraps a lease sentinel or
// error. Before, a closed client's Acquire said
// `lease: acquire "a": nothing sent: lease: client closed`.
func TestErrorsSayLeaseOnce(t *testing.T) {
	ctx := context.Background()
	f := newFakeBackend()
	c := fakeClient(f, Options{}, nil)
	holder := fakeClient(f, Options{}, nil)
	held := mustAcquire(t, holder, "held", time.Second)
	defer release(t, held)

	short, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
	defer cancel()
	_, errWait := c.AcquireWait(short, "held", time.Second)
	done, cancelDone := context.WithCancel(ctx)
	cancelDone()
	l := mustAcquire(t, c, "mine", time.Second)
	errRelease := l.Release(done)
	errs := map[string]error{
		"AcquireWait timed out": errWait,
		"Acquire held":          func() error { _, err := c.Acquire(ctx, "held", time.Second); return err }(),
		"Release ctx done":      errRelease,
	}
	invalid := map[string]error{
		"bad name":              func() error { _, err := c.Acquire(ctx, "a b", time.Second); return err }(),
		"bad TTL":               func() error { _, err := c.Acquire(ctx, "a", time.Microsecond); return err }(),
		"bad option":            func() error { _, err := NewClient(f, &Options{RetryDelay: -1}); return err }(),
		"identity with a space": func() error { _, err := NewClient(f, &Options{Identity: "a b"}); return err }(),
		"identity with NUL":     func() error { _, err := NewClient(f, &Options{Identity: "a\x00"}); return err }(),
		"identity not UTF-8":    func() error { _, err := NewClient(f, &Options{Identity: "\xff"}); return err }(),
		"identity of 16 KB":     func() error { _, err := NewClient(f, &Options{Identity: strings.Repeat("i", 16<<10)}); return err }(),
		"identity of 129 bytes": func() error {
			_, err := NewClient(f, &Options{Identity: strings.Repeat("i", maxIdentityLen+1)})
			return err
		}(),
		"Do nil fn":         c.Do(ctx, "a", time.Second, nil),
		"TryDo nil fn":      func() error { _, err := c.TryDo(ctx, "a", time.Second, nil); return err }(),
		"Campaign nil lead": c.Campaign(ctx, "a", time.Second, nil),
	}
	for what, err := range invalid {
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v; want ErrInvalid", what, err)
		}
		errs[what] = err
	}
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	_, errInspect := c.Inspect(ctx, "a")
	errs["Acquire closed"] = func() error { _, err := c.Acquire(ctx, "a", time.Second); return err }()
	errs["AcquireWait closed"] = func() error { _, err := c.AcquireWait(ctx, "a", time.Second); return err }()
	errs["Inspect closed"] = errInspect
	errs["Close twice"] = c.Close(ctx)
	for what, err := range errs {
		if err == nil {
			t.Errorf("%s: no error", what)
			continue
		}
		if msg := err.Error(); !strings.HasPrefix(msg, "lease: ") || strings.Count(msg, "lease:") != 1 || strings.Contains(msg, "fence:") || len(msg) > 200 {
			t.Errorf("%s: %.300q; want a short message, \"lease:\" once, at the start", what, msg)
		}
	}
	if !errors.Is(errs["Acquire closed"], ErrClosed) || !errors.Is(errs["AcquireWait timed out"], ErrNotAcquired) {
		t.Errorf("the wrapped errors no longer match: %v; %v", errs["Acquire closed"], errs["AcquireWait timed out"])
	}
}
