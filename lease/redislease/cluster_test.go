package redislease

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fencekit/fencekit/internal/testenv"
	"github.com/fencekit/fencekit/lease"
)

func TestCluster(t *testing.T) {
	rc := testenv.StartRedisCluster(t, 3)
	cc := rc.Client(t)
	c := mustNew(t, cc, &lease.Options{RenewInterval: 50 * time.Millisecond})
	ctx := context.Background()

	// Names whose keys live on each of the three masters.
	byNode := map[string]string{}
	for i := 0; len(byNode) < 3 && i < 1000; i++ {
		name := fmt.Sprintf("job-%d", i)
		k := keysOf(name)
		lockSlot, _ := cc.ClusterKeySlot(ctx, k.lock).Result()
		tokenSlot, _ := cc.ClusterKeySlot(ctx, k.token).Result()
		if lockSlot != tokenSlot {
			t.Fatalf("%s: lock slot %d, token slot %d: the hash tag does not hold", name, lockSlot, tokenSlot)
		}
		node, err := cc.MasterForKey(ctx, k.lock)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := byNode[node.Options().Addr]; !ok {
			byNode[node.Options().Addr] = name
		}
	}
	if len(byNode) != 3 {
		t.Fatalf("names found on %d masters, want 3", len(byNode))
	}
	for addr, name := range byNode {
		l := mustAcquire(t, c, name, 500*time.Millisecond)
		if _, err := c.Acquire(ctx, name, time.Second); !isNotAcquired(err) {
			t.Fatalf("%s on %s: second Acquire = %v", name, addr, err)
		}
		time.Sleep(time.Second) // two TTLs: alive only if renewed
		if l.Err() != nil {
			t.Fatalf("%s on %s: lost while renewing: %v", name, addr, l.Err())
		}
		// A waiter is woken by the release published from the key's node.
		got := make(chan *lease.Lease, 1)
		go func() {
			wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			w, err := c.AcquireWait(wctx, name, 10*time.Second)
			if err != nil {
				t.Error(err)
			}
			got <- w
		}()
		time.Sleep(100 * time.Millisecond)
		release(t, l)
		w := <-got
		if w == nil {
			t.FailNow()
		}
		if w.Token() <= l.Token() {
			t.Fatalf("%s on %s: token %v not above %v", name, addr, w.Token(), l.Token())
		}
		release(t, w)
		t.Logf("%s on %s: tokens %v, %v", name, addr, l.Token(), w.Token())
	}

	// Renewals due together go as one pipeline per node: go-redis splits a
	// Cluster client's pipeline by slot and sends each node its part.
	perNode := map[string]*roundTrips{}
	var mu sync.Mutex
	hooked := redis.NewClusterClient(&redis.ClusterOptions{Addrs: rc.Addrs, DialTimeout: time.Second,
		ReadTimeout: time.Second, WriteTimeout: time.Second})
	t.Cleanup(func() { hooked.Close() })
	hooked.OnNewNode(func(node *redis.Client) {
		mu.Lock()
		defer mu.Unlock()
		rt := &roundTrips{}
		perNode[node.Options().Addr] = rt
		node.AddHook(rt)
	})
	cp := mustNew(t, hooked, nil)
	const n, periods = 120, 3
	trips, cmds := holdMany(t, cp, &roundTrips{}, "pipelined", n, 900*time.Millisecond, periods)
	_, _ = trips, cmds
	mu.Lock()
	defer mu.Unlock()
	var total, totalCmds int64
	for addr, rt := range perNode {
		t.Logf("node %s: %d round trips, %d commands", addr, rt.trips.Load(), rt.cmds.Load())
		total += rt.trips.Load()
		totalCmds += rt.cmds.Load()
	}
	// n acquires and n releases are single round trips; the renewals
	// (n per interval) must take a few pipelines per node and interval.
	renewTrips := total - 2*n
	if len(perNode) < 3 || totalCmds < int64(n*periods) || renewTrips > int64(3*4*periods)+30 {
		t.Fatalf("%d nodes, %d round trips (%d beyond acquire and release) carrying %d commands for %d leases over %d intervals; want pipelines per node",
			len(perNode), total, renewTrips, totalCmds, n, periods)
	}
}
