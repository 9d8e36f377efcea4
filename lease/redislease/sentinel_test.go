package redislease

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fencekit/fencekit/internal/testenv"
	"github.com/fencekit/fencekit/lease"
)

// TestSentinelFailover runs leases through a Sentinel failover client: the
// master dies, Sentinel promotes a replica that missed the last grants, and
// the same client's next grant, on the new master, still has a larger token.
func TestSentinelFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("a Sentinel failover takes a few seconds")
	}
	master := testenv.StartRedisServer(t, "--repl-diskless-sync-delay", "0")
	replica := testenv.StartRedisServer(t, "--replicaof", "127.0.0.1", strconv.Itoa(master.Port))
	sentinel := testenv.StartRedisSentinel(t, "fk", master)
	fc := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: "fk", SentinelAddrs: []string{sentinel.Addr},
		DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second, MaxRetries: -1})
	t.Cleanup(func() { fc.Close() })
	c := mustNew(t, fc, nil)
	ctx := context.Background()
	const name = "sentinel"
	synced := grants(t, c, name, 10)
	rc := replica.Client(t)
	waitValue(t, rc, keysOf(name).token, synced.String())

	// Cut the replica off, grant more on the master, kill the master.
	if err := replica.Pause(); err != nil {
		t.Fatal(err)
	}
	if err := master.Client(t).Do(ctx, "CLIENT", "KILL", "TYPE", "replica").Err(); err != nil {
		t.Fatal(err)
	}
	last := grants(t, c, name, 10)
	if err := master.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := replica.Resume(); err != nil {
		t.Fatal(err)
	}
	// The replica really missed the last grants.
	waitValue(t, rc, keysOf(name).token, synced.String())

	// The same client reaches the promoted replica once Sentinel is done.
	var l *lease.Lease
	var err error
	for range 300 { // bounded: 300 × 50ms
		if l, err = c.Acquire(ctx, name, time.Minute); err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("no grant after the failover: %v", err)
	}
	defer release(t, l)
	if role, _ := rc.Do(ctx, "ROLE").Slice(); len(role) == 0 || role[0] != "master" {
		t.Fatalf("replica role after failover = %v", role)
	}
	if v, _ := rc.Get(ctx, keysOf(name).token).Result(); v == "" {
		t.Fatal("counter missing on the promoted replica")
	}
	if l.Token() <= last {
		t.Fatalf("token %v after failover not above %v (replica had %v)", l.Token(), last, synced)
	}
	t.Logf("last token on the old master %v, replica had %v, first on the new master %v", last, synced, l.Token())
}

// waitValue waits until key holds want on c.
func waitValue(t *testing.T, c *redis.Client, key, want string) {
	t.Helper()
	var v string
	for range 500 {
		if v, _ = c.Get(context.Background(), key).Result(); v == want {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s = %q, want %q", key, v, want)
}
