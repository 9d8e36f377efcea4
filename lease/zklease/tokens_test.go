package zklease

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/leasearg"
	"github.com/fencekit/fencekit/internal/testenv"
)

// TestTokensFollowTheClock bumps a name to the current time, as a switch
// from Redis or PostgreSQL does, then kills the ensemble's leader and later
// deletes the name's node: every grant's token is above the one before and
// never more than leasearg.MaxAhead above the clock, so that an issuer that
// loses its counter (Redis, PostgreSQL, a wiped ZooKeeper) recovers past
// it with its clock.
func TestTokensFollowTheClock(t *testing.T) {
	e := testenv.StartZooKeeperEnsemble(t, 3)
	env := &testenv.ZooKeeperEnv{Servers: e.Servers, Root: "/clock"}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, _ := newClient(t, env, e.Servers, zkTTL, "")
	const name = "jobs"
	var last fence.Token
	grant := func(after string) {
		t.Helper()
		actx, acancel := context.WithTimeout(ctx, time.Minute) // ZooKeeper alone can take most of it after a leader's kill under load (TestLeaderKilledDuringGrants)
		defer acancel()
		for {
			l, err := c.Acquire(actx, name, zkTTL)
			if err == nil {
				now := fence.Token(time.Now().Add(leasearg.MaxAhead).UnixMicro())
				if l.Token() <= last || l.Token() > now {
					t.Errorf("%s: token %v after %v; want above it and at most %v (the clock + %v)", after, l.Token(), last, now, leasearg.MaxAhead)
				}
				last = l.Token()
				if err := l.Release(ctx); err != nil {
					t.Fatal(err)
				}
				return
			}
			if actx.Err() != nil {
				t.Fatalf("%s: no grant: %v", after, err)
			}
			time.Sleep(100 * time.Millisecond) // no quorum for a moment
		}
	}
	grant("first grant")
	if _, _, err := c.Bump(ctx, name, fence.Token(time.Now().UnixMicro())); err != nil {
		t.Fatal(err)
	}
	grant("after a bump to the current time")

	leader, err := e.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Members[leader].Kill(); err != nil {
		t.Fatal(err)
	}
	grant("after the leader was killed")
	if next, err := e.Leader(ctx); err != nil || next == leader {
		t.Fatalf("no new leader: %d, %v", next, err)
	}

	if err := testenv.ZooKeeperDeleteTree(e.Servers, env.Root+"/lease"); err != nil {
		t.Fatal(err)
	}
	grant("after the name's node was deleted")
}

// TestEarlierNodeData reads a name node in the form zklease wrote when
// tokens were a base plus the zxid: Inspect's Last is base + Mzxid, and
// the next grant's token is above it.
func TestEarlierNodeData(t *testing.T) {
	env := testenv.ZooKeeper(t)
	ctx := context.Background()
	c, conn := newClient(t, env, env.Servers, 10*time.Second, "")
	l, err := c.Acquire(ctx, "old", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	base := fence.Token(time.Now().UnixMicro())
	st, err := conn.Set(env.Root+"/lease/old", []byte(base.String()+"\nworker-a"), -1)
	if err != nil {
		t.Fatal(err)
	}
	want := base + fence.Token(st.Mzxid)
	if info, err := c.Inspect(ctx, "old"); err != nil || info.Last != want {
		t.Fatalf("Inspect of the earlier form: %+v, %v; want Last %v", info, err, want)
	}
	l, err = c.Acquire(ctx, "old", 10*time.Second)
	if err != nil || l.Token() <= want {
		t.Fatalf("grant after the earlier form: %v, %v; want a token above %v", l, err, want)
	}
	l.Release(ctx)
}

// TestLostNodeSameMillisecond releases each grant and loses the name's node
// (deleted and created again, empty) in one pipeline with the next grant's
// read: the leader stamps times in whole milliseconds, so the next grant
// sometimes falls in the lost grant's millisecond. Its token must still be
// above the lost grant's. The test runs until 5 rounds granted in the lost
// grant's millisecond (1 in 90 to 200 rounds on the shared machine), at
// most 30 s.
func TestLostNodeSameMillisecond(t *testing.T) {
	env := testenv.ZooKeeper(t)
	ctx := context.Background()
	c, conn := newClient(t, env, env.Servers, 10*time.Second, "")
	const name = "lost"
	dir := env.Root + "/lease/" + name
	var last fence.Token
	rounds, sameMs := 0, 0
	for start := time.Now(); sameMs < 5 && time.Since(start) < 30*time.Second; rounds++ {
		l, err := c.Acquire(ctx, name, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if l.Token() <= last {
			t.Errorf("round %d: token %v after the lost grant's %v", rounds, l.Token(), last)
		}
		last = l.Token()
		// Queued in this order on conn's one connection, answered in order.
		released := make(chan error, 1)
		lost := make(chan bool, 1)
		held := l // l is the next grant's by the time the goroutine runs
		go func() { released <- held.Release(ctx) }()
		time.Sleep(50 * time.Microsecond)
		go func() {
			for range 20 { // until the release lands; not if the next grant came first
				_, err := conn.Multi(
					&zk.DeleteRequest{Path: dir, Version: -1},
					&zk.CreateRequest{Path: dir, Acl: zk.WorldACL(zk.PermAll)})
				if !errors.Is(err, zk.ErrNotEmpty) {
					lost <- err == nil
					return
				}
			}
			lost <- false
		}()
		time.Sleep(50 * time.Microsecond)
		l, err = c.Acquire(ctx, name, 10*time.Second)
		if err := <-released; err != nil {
			t.Fatal(err)
		}
		wasLost := <-lost
		if err != nil {
			continue // held when read, or found the name's node gone: the next round grants
		}
		if wasLost {
			if _, st, err := conn.Exists(dir); err == nil && fence.Token(st.Mtime)*1000 <= last {
				sameMs++ // granted in the lost grant's millisecond
			}
		}
		if l.Token() <= last {
			t.Errorf("round %d: token %v after the lost grant's %v", rounds, l.Token(), last)
		}
		last = l.Token()
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d rounds, %d granted in the lost grant's millisecond", rounds, sameMs)
	if sameMs == 0 {
		t.Skip("no round granted in the lost grant's millisecond: nothing was tested")
	}
}
