package etcdlease

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencekit/fencekit/internal/leasetest"
	"github.com/fencekit/fencekit/internal/testenv"
	"github.com/fencekit/fencekit/lease"
)

func TestMain(m *testing.M) { testenv.MainWithServers(m, testenv.EnvEtcdEndpoints) }

// newEtcdClient returns a client of endpoints, closed at cleanup.
func newEtcdClient(t testing.TB, endpoints []string) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// newBackend returns a backend on the test's own key prefix.
func newBackend(t *testing.T) (*backend, *testenv.EtcdEnv) {
	t.Helper()
	env := testenv.Etcd(t)
	return &backend{cli: newEtcdClient(t, env.Endpoints), prefix: strings.TrimSuffix(env.Prefix, "/")}, env
}

func TestBackendAcquireRenewRelease(t *testing.T) {
	b, _ := newBackend(t)
	ctx := context.Background()
	if _, err := b.Acquire(ctx, "a", 1500*time.Millisecond, "me"); !errors.Is(err, lease.ErrInvalid) {
		t.Fatalf("TTL 1.5s: %v, want ErrInvalid", err)
	}
	g1, err := b.Acquire(ctx, "a", 10*time.Second, "me")
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.Acquire(ctx, "a", time.Second, "me")
	var na *lease.NotAcquiredError
	if !errors.As(err, &na) || na.Holder != g1.Token || na.Remaining < 8*time.Second || na.Remaining > 10*time.Second {
		t.Fatalf("held: %v, want held by %v for about 10s", err, g1.Token)
	}
	if info, err := b.Inspect(ctx, "a"); err != nil || !info.Held || info.Holder != g1.Token || info.Last != g1.Token {
		t.Fatalf("Inspect: %+v, %v", info, err)
	}
	if errs := b.Renew(ctx, []*lease.Grant{g1}); errs != nil && errs[0] != nil {
		t.Fatalf("Renew: %v", errs[0])
	}
	if err := b.Release(ctx, g1); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if info, err := b.Inspect(ctx, "a"); err != nil || info != (lease.Info{Last: g1.Token}) {
		t.Fatalf("Inspect after release: %+v, %v", info, err)
	}
	var lost *lease.LostError
	if err := b.Release(ctx, g1); !errors.As(err, &lost) || lost.Cause != lease.CauseMissing {
		t.Fatalf("second Release: %v, want CauseMissing", err)
	}
	g2, err := b.Acquire(ctx, "a", 10*time.Second, "me")
	if err != nil || g2.Token <= g1.Token {
		t.Fatalf("grant after release: %+v, %v; want a token above %v", g2, err, g1.Token)
	}

	// A batch: one renewed, one released (its lease is gone: missing), one
	// whose key was deleted by hand and created again by another lease
	// (stolen), one whose key was deleted by hand (missing).
	g3, err := b.Acquire(ctx, "c", 10*time.Second, "me")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.cli.Delete(ctx, b.holderKey("c")); err != nil {
		t.Fatal(err)
	}
	g4, err := b.Acquire(ctx, "d", 10*time.Second, "me")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.cli.Delete(ctx, b.holderKey("d")); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Acquire(ctx, "d", 10*time.Second, "me"); err != nil {
		t.Fatal(err)
	}
	batch := []*lease.Grant{g2, g1, g4, g3}
	errs := b.Renew(ctx, batch)
	want := []string{"", lease.CauseMissing, lease.CauseStolen, lease.CauseMissing}
	leasetest.CheckRenew(t, batch, errs, want)
}

// TestBackendWatch checks that a release wakes a watcher of that name.
func TestBackendWatch(t *testing.T) {
	b, _ := newBackend(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	w, err := b.Watch(ctx, "w")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	g, err := b.Acquire(ctx, "w", 10*time.Second, "me")
	if err != nil {
		t.Fatal(err)
	}
	short, c2 := context.WithTimeout(ctx, 100*time.Millisecond)
	defer c2()
	if err := w.Wait(short); err == nil {
		t.Fatal("a grant woke the watcher")
	}
	if err := b.Release(ctx, g); err != nil {
		t.Fatal(err)
	}
	if err := w.Wait(ctx); err != nil {
		t.Fatalf("Wait after release: %v", err)
	}
}

func TestNewInvalid(t *testing.T) {
	if _, err := New(nil, nil); !errors.Is(err, lease.ErrInvalid) {
		t.Fatalf("New(nil): %v, want ErrInvalid", err)
	}
}
