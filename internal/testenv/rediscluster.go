package testenv

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisCluster is a private Redis Cluster of masters without replicas, for
// tests that need keys in different slots on different nodes.
type RedisCluster struct {
	Servers []*RedisServer
	Addrs   []string
}

// StartRedisCluster starts masters private redis-servers (at least 3) with
// cluster mode on, joins them with `redis-cli --cluster create`, and waits
// until every node reports cluster_state:ok. The servers are killed at
// cleanup.
func StartRedisCluster(tb testing.TB, masters int) *RedisCluster {
	tb.Helper()
	if masters < 3 {
		tb.Fatalf("testenv: a Redis Cluster needs at least 3 masters, not %d", masters)
	}
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		tb.Fatalf("testenv: redis-cli is not installed (%v); install Debian's redis-tools package", err)
	}
	rc := &RedisCluster{}
	for range masters {
		s := StartRedisServer(tb, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", "5000")
		rc.Servers = append(rc.Servers, s)
		rc.Addrs = append(rc.Addrs, s.Addr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	args := append(append([]string{"--cluster", "create"}, rc.Addrs...), "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.CommandContext(ctx, cli, args...).CombinedOutput(); err != nil {
		tb.Fatalf("testenv: redis-cli --cluster create %s: %v\n%s", strings.Join(rc.Addrs, " "), err, out)
	}
	for _, addr := range rc.Addrs {
		if err := waitClusterOK(ctx, addr, masters); err != nil {
			tb.Fatal(err)
		}
	}
	return rc
}

// Client returns a cluster client of the cluster, closed at cleanup.
func (rc *RedisCluster) Client(tb testing.TB) *redis.ClusterClient {
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: rc.Addrs, DialTimeout: time.Second,
		ReadTimeout: time.Second, WriteTimeout: time.Second})
	tb.Cleanup(func() { c.Close() })
	return c
}

// waitClusterOK waits until the node at addr sees all masters and every
// slot assigned.
func waitClusterOK(ctx context.Context, addr string, masters int) error {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	var last string
	for {
		info, err := c.ClusterInfo(ctx).Result()
		if err == nil && strings.Contains(info, "cluster_state:ok") &&
			strings.Contains(info, "cluster_known_nodes:"+strconv.Itoa(masters)+"\r") {
			return nil
		}
		last = fmt.Sprint(info, err)
		select {
		case <-ctx.Done():
			return fmt.Errorf("testenv: Redis Cluster node %s not ready: %w; last CLUSTER INFO: %s", addr, ctx.Err(), last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
