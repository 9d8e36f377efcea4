package main

import (
	"context"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/fencekit/fencekit/internal/testenv"
	"github.com/fencekit/fencekit/lease"
	"github.com/fencekit/fencekit/lease/etcdlease"
)

// TestEtcdBackend runs the lease commands on etcdlease's keys: status and
// list with the holder's identity, watch, release --force, and bump
// refused with the reason.
func TestEtcdBackend(t *testing.T) {
	env := testenv.Etcd(t)
	ctx := context.Background()
	prefix := strings.TrimSuffix(env.Prefix, "/")
	cli, err := clientv3.New(clientv3.Config{Endpoints: env.Endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	c, err := etcdlease.New(cli, &lease.Options{KeyPrefix: prefix, Identity: "etcd-worker/3", Logger: quietLogger})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(ctx) })
	e := []string{envEtcdEndpoints + "=" + strings.Join(env.Endpoints, ",")}
	args := func(a ...string) []string { return append(a, "-backend", "etcd", "-prefix", prefix) }

	held := acquire(t, c, "jobs/a", 3*time.Second) // renewed every second: sees a forced release soon
	done := acquire(t, c, "jobs/b", 10*time.Second)
	if err := done.Release(ctx); err != nil {
		t.Fatal(err)
	}
	st := decode[[]leaseStatus](t, runWant(t, e, 0, args("status", "-json", "jobs/a")...))
	if len(st) != 1 || !st[0].Held || st[0].Holder != uint64(held.Token()) || st[0].Identity != "etcd-worker/3" {
		t.Errorf("status: %+v", st)
	}
	ls := decode[[]leaseStatus](t, runWant(t, e, 0, args("list", "-json", "jobs/*")...))
	if len(ls) != 2 || ls[0].Name != "jobs/a" || !ls[0].Held || ls[1].Name != "jobs/b" || ls[1].Held {
		t.Errorf("list jobs/*: %+v", ls)
	}

	checkForcedRelease(t, e, args, "jobs/a", "etcd-worker/3", held)
	// A usage error: bump knows before connecting that etcd's tokens cannot be raised.
	r := runWant(t, e, exitUsage, args("bump", "jobs/a", "--to", "5")...)
	if !strings.Contains(r.stderr, "bump on -backend etcd") || !strings.Contains(r.stderr, "new resource names") {
		t.Errorf("bump on etcd: %s, want what to do instead", r.stderr)
	}
}
