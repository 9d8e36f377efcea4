package leasetest

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/lease"
)

// testObserve watches one name with Client.Observe while two other
// clients take, release and lose it: every change of holder arrives, with
// the holder's token and identity, and the channel closes when ctx ends
// and when the observing Client is closed, leaving no goroutine behind.
func testObserve(t *testing.T, iss Issuer) {
	ns := iss.Open(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a := ns.Client(t, &lease.Options{Logger: quiet.Logger, Identity: "observe/a"})
	b := ns.Client(t, &lease.Options{Logger: quiet.Logger, Identity: "observe/b"})
	watcher := ns.Client(t, quiet)
	octx, stop := context.WithCancel(ctx)
	ch := watcher.Observe(octx, "observed")
	next := func(what string, held bool, tok fence.Token, identity string) {
		t.Helper()
		select {
		case info, ok := <-ch:
			if !ok {
				t.Fatalf("%s: the channel closed", what)
			}
			if info.Held != held || (held && (info.Holder != tok || info.Identity != identity)) {
				t.Fatalf("%s: Observe sent %+v; want held=%v token %d identity %q", what, info, held, tok, identity)
			}
		case <-time.After(2*iss.TTL + 5*time.Second):
			t.Fatalf("%s: nothing observed", what)
		}
	}
	next("at start", false, 0, "")
	la, err := a.Acquire(ctx, "observed", iss.TTL)
	if err != nil {
		t.Fatal(err)
	}
	next("a's grant", true, la.Token(), "observe/a")
	if err := la.Release(ctx); err != nil {
		t.Fatal(err)
	}
	next("a's release", false, 0, "")
	lb, err := b.Acquire(ctx, "observed", iss.TTL)
	if err != nil {
		t.Fatal(err)
	}
	next("b's grant", true, lb.Token(), "observe/b")
	if err := lb.Release(ctx); err != nil {
		t.Fatal(err)
	}
	next("b's release", false, 0, "")

	stop()
	for range ch { // drains, then ends: closed after ctx ended
	}

	// Closing the observing Client ends its Observe goroutines before
	// Close returns.
	before := runtime.NumGoroutine()
	other := ns.Client(t, quiet)
	ch2 := other.Observe(ctx, "observed")
	<-ch2 // its first Info: the goroutine runs
	if err := other.Close(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case _, ok := <-ch2:
		if ok {
			t.Fatal("Observe sent after Close")
		}
	default:
		t.Fatal("Observe's channel still open after Close returned")
	}
	if ch3 := other.Observe(ctx, "observed"); !isClosed(ch3) {
		t.Fatal("Observe on a closed Client: channel open")
	}
	if n := runtime.NumGoroutine(); n > before+20 {
		t.Logf("goroutines: %d before, %d after (the issuer's connections)", before, n)
	}
}

func isClosed(ch <-chan lease.Info) bool {
	select {
	case _, ok := <-ch:
		return !ok
	case <-time.After(time.Second):
		return false
	}
}
