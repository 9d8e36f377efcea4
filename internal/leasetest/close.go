package leasetest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/fencekit/fencekit/internal/testenv"
	"github.com/fencekit/fencekit/lease"
)

// testCloseJoins checks that Close ends every goroutine the client and
// its issuer started: a held lease's heartbeat, an Observe, an
// AcquireWait that gave up and one still waiting, and the "lease lost" warning of a lease lost
// by a client whose renewals must come back within a millisecond, written
// by a handler that blocks until the test lets it: that Close must wait
// for it. It then looks for goroutines of fencekit's lease packages.
func testCloseJoins(t *testing.T, iss Issuer) {
	ns := iss.Open(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := ns.Client(t, quiet)
	l, err := c.Acquire(ctx, "close", 10*iss.TTL)
	if err != nil {
		t.Fatal(err)
	}
	octx, stopObserving := context.WithCancel(ctx)
	defer stopObserving() // after Close, which must have ended it already
	if info := <-c.Observe(octx, "close"); !info.Held || info.Holder != l.Token() {
		t.Fatalf("Observe: %+v, want held by token %v", info, l.Token())
	}
	wctx, stopWaiting := context.WithTimeout(ctx, 200*time.Millisecond)
	_, err = c.AcquireWait(wctx, "close", iss.TTL) // the client holds it: waits, gives up
	stopWaiting()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("AcquireWait of a held name: %v, want the context's deadline", err)
	}
	waiting := make(chan error, 1)
	go func() { _, err := c.AcquireWait(ctx, "close", iss.TTL); waiting <- err }() // still waiting at Close

	h := &holdingHandler{logged: make(chan struct{}), release: make(chan struct{})}
	fragile := ns.Client(t, &lease.Options{Logger: slog.New(h), DriftMargin: iss.TTL - 10*time.Millisecond, RenewInterval: 9 * time.Millisecond})
	loseOne(t, ctx, fragile, iss.TTL, h.logged)

	closed := make(chan error, 1)
	go func() { closed <- fragile.Close(ctx) }()
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while a lease lost warning was being written", err)
	case <-time.After(200 * time.Millisecond):
	}
	close(h.release)
	if err := <-closed; err != nil {
		t.Fatalf("Close of the client that lost a lease: %v", err)
	}
	time.Sleep(50 * time.Millisecond) // the waiter is refused and watches (it may be later: Close ends it either way)
	if err := c.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	select {
	case err := <-waiting:
		if !errors.Is(err, lease.ErrClosed) {
			t.Fatalf("AcquireWait in flight during Close: %v, want ErrClosed", err)
		}
	default:
		t.Fatal("Close returned before the AcquireWait in flight")
	}
	testenv.CheckNoGoroutineOf(t, "github.com/fencekit/fencekit/lease", "github.com/fencekit/fencekit/internal/join")
}

// loseOne acquires leases on c, whose renewals have a millisecond to come
// back, until one is lost and its warning logged (or a grant's reply came
// too late and it was lost at once).
func loseOne(t *testing.T, ctx context.Context, c *Conn, ttl time.Duration, logged <-chan struct{}) {
	t.Helper()
	for i := range 50 {
		l, err := c.Acquire(ctx, fmt.Sprint("lose-", i), ttl)
		if err != nil && !errors.Is(err, lease.ErrLost) {
			t.Fatal(err)
		}
		if l != nil {
			select {
			case <-l.Done(): // lost and not released: Close gives back what it holds
			case <-time.After(time.Second):
				l.Release(ctx)
				continue
			}
		}
		select {
		case <-logged:
			return
		case <-time.After(time.Second):
			t.Fatal("a lease was lost but no warning logged")
		}
	}
	t.Fatal("no lease lost in 50 tries: renewals came back within a millisecond every time")
}

// holdingHandler is a slog handler whose first "lease lost" record closes
// logged and waits for release before it returns.
type holdingHandler struct {
	logged, release chan struct{}
	once            sync.Once
}

func (h *holdingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *holdingHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *holdingHandler) WithGroup(string) slog.Handler            { return h }
func (h *holdingHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "lease lost" {
		h.once.Do(func() { close(h.logged) })
		<-h.release
	}
	return nil
}
