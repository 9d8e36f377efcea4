package zklease

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fencekit/fencekit/internal/testenv"
	"github.com/fencekit/fencekit/lease"
)

// TestWaitersWatchOnlyPredecessor queues 10 waiters behind a holder. The
// server's watch table (4lw wchp) must show one watcher on the holder node
// and one on each ticket but the last; a release must wake one waiter: it
// is granted the lease, the next in line moves up (three requests) and the
// other eight send nothing.
func TestWaitersWatchOnlyPredecessor(t *testing.T) {
	env := testenv.ZooKeeper(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// A TTL longer than the test: no waiter retries at the holder's TTL.
	const ttl = 30 * time.Second
	holder, _ := newClient(t, env, env.Servers, ttl, "holder")
	l, err := holder.Acquire(ctx, "herd", ttl)
	if err != nil {
		t.Fatal(err)
	}
	const n = 10
	sent := make([]*atomic.Int64, n)
	got := make(chan int, n)
	for i := range n {
		conn, s := dialCounting(t, env.Servers, ttl)
		c, err := New(conn, &lease.Options{KeyPrefix: prefixOf(env), Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close(context.Background()) })
		sent[i] = s
		go func() {
			if _, err := c.AcquireWait(ctx, "herd", ttl); err == nil {
				got <- i
			} // else the test ended
		}()
		// In line one at a time: its ticket made, and its watch set.
		waitFor(t, ctx, func() bool {
			kids, _, err := conn.Children(env.Root + "/wait/herd")
			return err == nil && len(kids) == i+1 && watches(watched(t, env, "/herd/")) == i+1
		})
	}
	holderWatchers := watched(t, env, "/lease/herd/")
	tickets := watched(t, env, "/wait/herd/")
	for p, sessions := range holderWatchers {
		if sessions != 1 {
			t.Errorf("holder node %s watched by %d sessions, want 1", p, sessions)
		}
	}
	if len(tickets) != n-1 {
		t.Errorf("%d tickets watched, want %d (all but the last)", len(tickets), n-1)
	}
	for p, sessions := range tickets {
		if sessions != 1 {
			t.Errorf("ticket %s watched by %d sessions, want 1", p, sessions)
		}
	}

	before := make([]int64, n)
	for i, s := range sent {
		before[i] = s.Load()
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	first := <-got
	waitFor(t, ctx, func() bool { return watches(watched(t, env, "/lease/herd/")) > 0 }) // the next in line watches the new holder
	time.Sleep(200 * time.Millisecond)
	woken := 0
	for i, s := range sent {
		d := s.Load() - before[i]
		switch {
		case i == first:
			t.Logf("waiter %d granted after %d requests", i, d)
		case d > 0:
			woken++
			if d > 3 {
				t.Errorf("waiter %d sent %d requests after the release, want at most 3 (move up in line)", i, d)
			}
		}
	}
	if first != 0 || woken != 1 {
		t.Fatalf("waiter %d granted first, %d other waiters sent requests; want waiter 0, and 1 moved up", first, woken)
	}
	select {
	case i := <-got:
		t.Fatalf("waiter %d granted too", i)
	default:
	}
}

// watched reads the server's watch table and returns, for each watched
// path under the test's root containing part, the number of sessions
// watching it.
func watched(t *testing.T, env *testenv.ZooKeeperEnv, part string) map[string]int {
	t.Helper()
	out, err := testenv.FourLetterWord(context.Background(), env.Servers[0], "wchp")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "not in the whitelist") {
		t.Fatalf("ZooKeeper at %s refuses the wchp command: add it to 4lw.commands.whitelist (the servers testenv starts allow it)", env.Servers[0])
	}
	m := map[string]int{}
	var path string
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(line, "/"):
			path = line
		case strings.HasPrefix(strings.TrimSpace(line), "0x") && strings.HasPrefix(path, env.Root+"/") && strings.Contains(path, part):
			m[path]++
		}
	}
	return m
}

// watches sums the sessions watching each path of m.
func watches(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func waitFor(t *testing.T, ctx context.Context, cond func() bool) {
	t.Helper()
	for !cond() {
		if ctx.Err() != nil {
			t.Fatal("condition not met before the test's deadline")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
