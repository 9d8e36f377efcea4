package testenv_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/fencekit/fencekit/internal/testenv"
)

func TestRedisCluster(t *testing.T) {
	rc := testenv.StartRedisCluster(t, 3)
	c := rc.Client(t)
	ctx := context.Background()
	// Keys spread over the three masters; each node owns some.
	owners := map[string]int{}
	for i := range 30 {
		key := fmt.Sprintf("key-%d", i)
		if err := c.Set(ctx, key, i, 0).Err(); err != nil {
			t.Fatal(err)
		}
		slot, err := c.ClusterKeySlot(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		node, err := c.MasterForKey(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		owners[node.Options().Addr]++
		if got, err := c.Get(ctx, key).Int(); err != nil || got != i {
			t.Fatalf("GET %s (slot %d) = %d, %v", key, slot, got, err)
		}
	}
	if len(owners) != 3 {
		t.Fatalf("keys on %d nodes, want 3: %v", len(owners), owners)
	}
}

func TestRedisSentinel(t *testing.T) {
	master := testenv.StartRedisServer(t)
	s := testenv.StartRedisSentinel(t, "mymaster", master)
	c := s.Client(t)
	addr, err := c.Do(context.Background(), "SENTINEL", "get-master-addr-by-name", "mymaster").StringSlice()
	if err != nil || len(addr) != 2 || addr[1] != fmt.Sprint(master.Port) {
		t.Fatalf("sentinel reports master %v, %v; want port %d", addr, err, master.Port)
	}
}
