package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// StartRedisSentinel starts a private Redis Sentinel (redis-server in
// sentinel mode) on a free loopback port that monitors master under
// masterName with quorum 1, declares it down after 500 ms and fails over
// to one of its replicas. It is killed at cleanup. Clients find the current
// master with redis.NewFailoverClient(&redis.FailoverOptions{MasterName:
// masterName, SentinelAddrs: []string{s.Addr}}).
func StartRedisSentinel(tb testing.TB, masterName string, master *RedisServer) *RedisServer {
	tb.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		tb.Fatalf("testenv: redis-server is not installed (%v); install Debian's redis-server package", err)
	}
	port, dir := FreePort(tb), tb.TempDir()
	conf := filepath.Join(dir, "sentinel.conf")
	text := fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\n"+
		"sentinel monitor %s 127.0.0.1 %d 1\n"+
		"sentinel down-after-milliseconds %s 500\n"+
		"sentinel failover-timeout %s 5000\n"+
		"sentinel parallel-syncs %s 1\n",
		port, dir, masterName, master.Port, masterName, masterName, masterName)
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		tb.Fatalf("testenv: sentinel config: %v", err)
	}
	// The config file must come first; sentinel rewrites it as it learns.
	s := newServer("redis-sentinel", bin, port, dir, []string{conf, "--sentinel"})
	s.ready = func(ctx context.Context) error { return PingRedis(ctx, s.Addr) }
	s.startForTest(tb)
	return &RedisServer{s}
}
