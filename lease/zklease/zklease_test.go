package zklease

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/testenv"
	"github.com/fencekit/fencekit/lease"
)

// quiet discards the losses the tests cause.
var quiet = slog.New(slog.DiscardHandler)

// newClient returns a lease client on env's tree with session timeout and
// TTL st, and its connection.
func newClient(t *testing.T, env *testenv.ZooKeeperEnv, servers []string, st time.Duration, identity string) (*lease.Client, *zk.Conn) {
	t.Helper()
	conn, _ := dialCounting(t, servers, st)
	c, err := New(conn, &lease.Options{KeyPrefix: prefixOf(env), Identity: identity, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c, conn
}

// TestGrantAndRefusal checks what each step leaves in ZooKeeper and what
// Inspect and a refusal read back: the holder's token and identity, the
// last token after the release, and a node deleted by hand ending the
// lease at its next renewal.
func TestGrantAndRefusal(t *testing.T) {
	env := testenv.ZooKeeper(t)
	ctx := context.Background()
	a, conn := newClient(t, env, env.Servers, 10*time.Second, "worker-a")
	b, _ := newClient(t, env, env.Servers, 10*time.Second, "worker-b")
	if info, err := a.Inspect(ctx, "x"); err != nil || info != (lease.Info{}) {
		t.Fatalf("Inspect before any grant: %+v, %v", info, err)
	}
	l, err := a.Acquire(ctx, "x", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.Acquire(ctx, "x", 10*time.Second)
	var na *lease.NotAcquiredError
	if !errors.As(err, &na) || na.Holder != l.Token() || na.Identity != "worker-a" {
		t.Fatalf("second Acquire: %v; want held by %v of worker-a", err, l.Token())
	}
	info, err := b.Inspect(ctx, "x")
	if err != nil || !info.Held || info.Holder != l.Token() || info.Identity != "worker-a" || info.Last != l.Token() {
		t.Fatalf("Inspect while held: %+v, %v", info, err)
	}
	dir := env.Root + "/lease/x"
	_, st, err := conn.Get(dir)
	// The empty node's floor is the end of its creation's millisecond.
	if err != nil || st.NumChildren != 1 || l.Token() != fence.Token(max(st.Ctime+1, st.Mtime))*1000 {
		t.Fatalf("name node: %+v, %v; want one child and max(ctime + 1, mtime) × 1000 = the first token %v", st, err, l.Token())
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if info, err := b.Inspect(ctx, "x"); err != nil || info != (lease.Info{Last: l.Token()}) {
		t.Fatalf("Inspect after release: %+v, %v", info, err)
	}

	// A holder node deleted by hand: the next renewal finds it missing.
	l2, err := b.Acquire(ctx, "x", 900*time.Millisecond)
	if err != nil || l2.Token() <= l.Token() {
		t.Fatalf("grant after release: %v, %v; want a token above %v", l2, err, l.Token())
	}
	kids, _, err := conn.Children(dir)
	if err != nil || len(kids) != 1 {
		t.Fatalf("children %v, %v", kids, err)
	}
	if err := conn.Delete(dir+"/"+kids[0], -1); err != nil {
		t.Fatal(err)
	}
	select {
	case <-l2.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("lease still live 5s after its node was deleted")
	}
	var lost *lease.LostError
	if !errors.As(l2.Err(), &lost) || lost.Cause != lease.CauseMissing || lost.Backend != "zookeeper" {
		t.Fatalf("lease ended with %v; want CauseMissing from zookeeper", l2.Err())
	}
}

// TestNames checks that names ZooKeeper paths cannot hold as they are get
// nodes of their own: "a/b" is not a child of "a", "." and ".." are nodes.
func TestNames(t *testing.T) {
	env := testenv.ZooKeeper(t)
	ctx := context.Background()
	c, conn := newClient(t, env, env.Servers, 10*time.Second, "")
	names := []string{"a", "a/b", ".", "..", "über:1"}
	for _, n := range names {
		l, err := c.Acquire(ctx, n, 10*time.Second)
		if err != nil {
			t.Fatalf("Acquire %q: %v", n, err)
		}
		defer l.Release(ctx)
	}
	kids, _, err := conn.Children(env.Root + "/lease")
	if err != nil || len(kids) != len(names) {
		t.Fatalf("name nodes %q, %v; want %d", kids, err, len(names))
	}
}

func TestNewInvalid(t *testing.T) {
	if _, err := New(nil, nil); !errors.Is(err, lease.ErrInvalid) {
		t.Fatalf("New(nil): %v, want ErrInvalid", err)
	}
	conn, _, err := zk.Connect([]string{"127.0.0.1:1"}, time.Second, zk.WithLogger(testenv.ZKLogger))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, p := range []string{"/abs", "a//b", "a/", "a/../b", "zookeeper", "zookeeper/x"} {
		if _, err := New(conn, &lease.Options{KeyPrefix: p}); !errors.Is(err, lease.ErrInvalid) {
			t.Errorf("KeyPrefix %q: %v, want ErrInvalid", p, err)
		}
	}
}
