package testenv

import (
	"context"
	"encoding/base64"
	"strconv"
	"strings"
	"testing"
	"time"
)

func etcdPut(t *testing.T, ctx context.Context, url, key string) {
	t.Helper()
	req := map[string]string{"key": base64.StdEncoding.EncodeToString([]byte(key)), "value": "dg=="}
	if err := etcdCall(ctx, url, "/v3/kv/put", req, nil); err != nil {
		t.Fatal(err)
	}
}

// etcdCount counts the keys under prefix.
func etcdCount(t *testing.T, ctx context.Context, url, prefix string) int {
	t.Helper()
	end := []byte(prefix)
	end[len(end)-1]++
	req := map[string]any{"key": base64.StdEncoding.EncodeToString([]byte(prefix)),
		"range_end": base64.StdEncoding.EncodeToString(end), "count_only": true}
	var resp struct {
		Count string `json:"count"`
	}
	if err := etcdCall(ctx, url, "/v3/kv/range", req, &resp); err != nil {
		t.Fatal(err)
	}
	if resp.Count == "" { // proto3 JSON leaves zero out
		return 0
	}
	n, err := strconv.Atoi(resp.Count)
	if err != nil {
		t.Fatalf("count %q: %v", resp.Count, err)
	}
	return n
}

func TestEtcd(t *testing.T) {
	ctx := context.Background()
	var env *EtcdEnv
	t.Run("sub", func(t *testing.T) {
		env = Etcd(t)
		if !strings.HasSuffix(env.Prefix, "/") || len(env.Endpoints) == 0 {
			t.Fatalf("env = %+v", env)
		}
		etcdPut(t, ctx, env.Endpoints[0], env.Prefix+"k")
		if n := etcdCount(t, ctx, env.Endpoints[0], env.Prefix); n != 1 {
			t.Fatalf("%d keys under %s after one put", n, env.Prefix)
		}
	})
	if n := etcdCount(t, ctx, env.Endpoints[0], env.Prefix); n != 0 {
		t.Fatalf("%d keys left under %s after cleanup", n, env.Prefix)
	}
	if other := Etcd(t); other.Prefix == env.Prefix || other.Endpoints[0] != env.Endpoints[0] {
		t.Fatalf("second env %+v: want a new prefix on the same member as %+v", other, env)
	}
}

func TestEtcdClusterFailover(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := StartEtcdCluster(t, 3)
	if len(c.Endpoints) != 3 {
		t.Fatalf("endpoints %v", c.Endpoints)
	}
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	etcdPut(t, ctx, c.Endpoints[leader], "before/k")
	if err := c.Members[leader].Kill(); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitHealthy(ctx); err != nil {
		t.Fatal(err)
	}
	next, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if next == leader {
		t.Fatalf("leader %d still reported after it was killed", leader)
	}
	if n := etcdCount(t, ctx, c.Endpoints[next], "before/"); n != 1 {
		t.Fatalf("the new leader has %d keys written before the failover, want 1", n)
	}
	// The killed member rejoins on its ports with its data.
	if err := c.Members[leader].Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitHealthy(ctx); err != nil {
		t.Fatal(err)
	}
	etcdPut(t, ctx, c.Endpoints[next], "before/k2")
	deadline := time.Now().Add(10 * time.Second)
	for etcdCount(t, ctx, c.Endpoints[leader], "before/") != 2 {
		if time.Now().After(deadline) {
			t.Fatal("the restarted member did not catch up within 10s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
