package zklease

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencekit/fencekit/internal/testenv"
	"github.com/fencekit/fencekit/lease"
)

// opDelete is ZooKeeper's opcode of a delete request.
const opDelete = 2

// TestCloseWaitsForRetriedDelete releases a lease whose delete reply is
// lost as the server goes away: the node's delete is retried in the
// background. Close must wait for that retry, which succeeds once the
// server is back, and leave no goroutine of the package behind.
func TestCloseWaitsForRetriedDelete(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a, p := releaseLostReply(t, ctx)
	const down = 1500 * time.Millisecond // within the session's timeout
	healed := time.AfterFunc(down, p.Heal)
	defer healed.Stop()
	start := time.Now()
	if err := a.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if took := time.Since(start); took < down {
		t.Fatalf("Close returned %v after the release, before the server came back (%v): it did not wait for the retried delete", took, down)
	}
	testenv.CheckNoGoroutineOf(t, "github.com/fencekit/fencekit/lease", "github.com/fencekit/fencekit/internal/join")
}

// TestCloseBoundedWhileServerGone: with the server gone, Close waits for
// the retried delete only until its ctx ends, then says what is left.
func TestCloseBoundedWhileServerGone(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a, p := releaseLostReply(t, ctx)
	cctx, stop := context.WithTimeout(ctx, 300*time.Millisecond)
	defer stop()
	err := a.Close(cctx)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "still wait for ZooKeeper") {
		t.Fatalf("Close with the server gone: %v, want the requests left and the context's deadline", err)
	}
	p.Heal()
}

// releaseLostReply acquires a lease through a proxy and releases it; the
// server deletes the node, and the proxy closes the connection instead of
// forwarding the reply and refuses new ones: the delete is retried in the
// background until the proxy heals.
func releaseLostReply(t *testing.T, ctx context.Context) (*lease.Client, *proxy) {
	t.Helper()
	env := testenv.ZooKeeper(t)
	p := startProxy(t, env.Servers[0])
	c, _ := newClient(t, env, []string{p.Addr()}, zkTTL, "a")
	l, err := c.Acquire(ctx, "lost-reply", zkTTL)
	if err != nil {
		t.Fatal(err)
	}
	p.CutOnReply(opDelete)
	if err := l.Release(ctx); err == nil {
		t.Fatal("Release whose reply was lost returned nil")
	}
	return c, p
}
