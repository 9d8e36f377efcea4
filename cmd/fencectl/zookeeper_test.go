package main

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/fencekit/fencekit/internal/leasearg"
	"github.com/fencekit/fencekit/internal/testenv"
	"github.com/fencekit/fencekit/lease"
	"github.com/fencekit/fencekit/lease/zklease"
)

// TestZooKeeperBackend runs the built binary's lease commands on zklease:
// status and list with the holder's identity, watch, release --force, and
// bump past a token just ahead of the clock, which the next grant then
// exceeds.
func TestZooKeeperBackend(t *testing.T) {
	env := testenv.ZooKeeper(t)
	ctx := context.Background()
	prefix := strings.TrimPrefix(env.Root, "/")
	e := []string{envZooKeeper + "=" + strings.Join(env.Servers, ",")}
	zc, _, err := zk.Connect(env.Servers, 3*time.Second, zk.WithLogger(testenv.ZKLogger))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(zc.Close)
	c, err := zklease.New(zc, &lease.Options{KeyPrefix: prefix, Identity: "zk-worker/3", Logger: quietLogger})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(ctx) })
	held := acquire(t, c, "orders/eu", 3*time.Second) // TTL = the session timeout; renewed every second
	done := acquire(t, c, "orders/us", 3*time.Second)
	if err := done.Release(ctx); err != nil {
		t.Fatal(err)
	}
	zkArgs := func(args ...string) []string {
		return append([]string{args[0], "-backend", "zookeeper", "-prefix", prefix}, args[1:]...)
	}

	st := decode[[]leaseStatus](t, runWant(t, e, 0, zkArgs("status", "-json", "orders/eu", "never")...))
	if len(st) != 2 || !st[0].Held || st[0].Holder != uint64(held.Token()) || st[0].Identity != "zk-worker/3" || st[1].Held || st[1].Last != 0 {
		t.Errorf("status: %+v", st)
	}
	ls := decode[[]leaseStatus](t, runWant(t, e, 0, zkArgs("list", "-json", "orders/*")...))
	if len(ls) != 2 || ls[0].Name != "orders/eu" || !ls[0].Held || ls[1].Name != "orders/us" || ls[1].Held || ls[1].Last != uint64(done.Token()) {
		t.Errorf("list orders/*: %+v", ls)
	}

	checkForcedRelease(t, e, zkArgs, "orders/eu", "zk-worker/3", held)
	runWant(t, e, 0, zkArgs("release", "--force", "orders/eu")...) // not held: nothing to do

	// Bump past a token just ahead of the clock, and the next grant is above it.
	seen := uint64(time.Now().Add(leasearg.MaxAhead / 2).UnixMicro())
	b := decode[bumpResult](t, runWant(t, e, 0, zkArgs("bump", "-json", "orders/eu", "--to", strconv.FormatUint(seen, 10))...))
	if !b.Changed || b.After <= seen {
		t.Errorf("bump: %+v", b)
	}
	if l := acquire(t, c, "orders/eu", 3*time.Second); uint64(l.Token()) <= seen {
		t.Errorf("grant after bump: token %v, want above %d", l.Token(), seen)
	}
	r := runWant(t, e, exitFailed, zkArgs("bump", "orders/eu", "--to", strconv.FormatUint(seen+1, 10))...) // held now
	if !strings.Contains(r.stderr, "zk-worker/3") {
		t.Errorf("bump of a held lease: %s", r.stderr)
	}
	runWant(t, e, exitUsage, zkArgs("status", "-prefix", "/abs", "x")...)
}
