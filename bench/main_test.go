package bench

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// servers are the servers of this test binary, stopped by TestMain.
var servers Servers

func TestMain(m *testing.M) {
	if name := os.Getenv(envChild); name != "" {
		os.Exit(runChild(name))
	}
	code := m.Run()
	servers.Close()
	os.Exit(code)
}

// EnvRound is set by run.sh to the round number (1, 2, ...): each round
// starts the compared libraries or modes at a different one, so that none
// always runs first or right after another.
const EnvRound = "BENCH_ROUND"

// rotated returns names rotated left by (round-1) mod len(names); round
// 1, or no BENCH_ROUND, keeps the order.
func rotated(names []string) []string {
	r, err := strconv.Atoi(os.Getenv(EnvRound))
	if err != nil || r < 1 || len(names) == 0 {
		return names
	}
	k := (r - 1) % len(names)
	return append(append([]string(nil), names[k:]...), names[:k]...)
}

// runID makes key names unique to this process.
var runID = strconv.FormatInt(time.Now().UnixNano()%1e9, 36) + "-" + strconv.Itoa(os.Getpid())

var keySeq atomic.Int64

// uniqueKey returns a Redis key (or lease name) no other benchmark uses.
func uniqueKey(parts ...string) string {
	k := "fkbench-" + runID + "-" + strconv.FormatInt(keySeq.Add(1), 10)
	for _, p := range parts {
		k += "-" + p
	}
	return k
}

// redisEnv is one benchmark's client of the Redis server.
type redisEnv struct {
	Addr   string
	Client *redis.Client
	Trips  *RoundTrips
	prefix string
}

// EnvKeepKeys=1 leaves the benchmarks' keys in Redis at cleanup. Set by
// redis-instructions.sh, whose private server is thrown away: deleting the
// token counters fencekit leaves (one per name) would count as the
// benchmark's own instructions.
const EnvKeepKeys = "BENCH_KEEP_KEYS"

// newRedis returns a client of the benchmarks' Redis server; at cleanup it
// deletes every key that contains prefix (unless EnvKeepKeys is 1) and
// closes the client.
func newRedis(tb testing.TB, prefix string) *redisEnv {
	tb.Helper()
	return newRedisPool(tb, prefix, 32)
}

// newRedisPool is newRedis with a pool of poolSize connections.
func newRedisPool(tb testing.TB, prefix string, poolSize int) *redisEnv {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	addr, err := servers.RedisAddr(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	c := redis.NewClient(&redis.Options{Addr: addr, PoolSize: poolSize})
	e := &redisEnv{Addr: addr, Client: c, Trips: &RoundTrips{}, prefix: prefix}
	c.AddHook(e.Trips)
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if os.Getenv(EnvKeepKeys) == "1" {
			c.Close()
			return
		}
		if err := deleteKeys(ctx, c, "*"+prefix+"*"); err != nil {
			tb.Errorf("bench: clean up keys %s: %v", prefix, err)
		}
		c.Close()
	})
	return e
}

func deleteKeys(ctx context.Context, c redis.UniversalClient, pattern string) error {
	iter := c.Scan(ctx, 0, pattern, 1000).Iterator()
	for i := 0; iter.Next(ctx); i++ {
		if i > 10_000_000 {
			return fmt.Errorf("bench: too many keys match %s", pattern)
		}
		if err := c.Unlink(ctx, iter.Val()).Err(); err != nil {
			return err
		}
	}
	return iter.Err()
}

// counting measures the Redis commands, round trips and CPU time of a
// benchmark's timed part: client-cpu-ns/op is this process's CPU time (all
// goroutines, GC included), redis-cpu-ns/op the Redis server's (meaningful
// on a private server only). Call it before b.ResetTimer and call the
// returned function after b.StopTimer with the number of operations.
func (e *redisEnv) counting(b *testing.B) func(ops int) {
	b.Helper()
	ctx := context.Background()
	// Warm the pool so connection set-up is not counted as the benchmark's.
	if err := e.Client.Ping(ctx).Err(); err != nil {
		b.Fatal(err)
	}
	before, err := ReadCommandStats(ctx, e.Client)
	if err != nil {
		b.Fatal(err)
	}
	srvCPU0, err := ServerCPU(ctx, e.Client)
	if err != nil {
		b.Fatal(err)
	}
	trips0, cpu0 := e.Trips.Load(), ProcessCPU()
	return func(ops int) {
		b.Helper()
		trips, cpu := e.Trips.Load()-trips0, ProcessCPU()-cpu0 // read before the INFOs below
		after, err := ReadCommandStats(ctx, e.Client)
		if err != nil {
			b.Fatal(err)
		}
		srvCPU, err := ServerCPU(ctx, e.Client)
		if err != nil {
			b.Fatal(err)
		}
		d := after.Sub(before)
		n := float64(max(ops, 1))
		b.ReportMetric(float64(d.Total())/n, "redis-cmds/op")
		b.ReportMetric(float64(d.Scripts())/n, "scripts/op")
		b.ReportMetric(float64(trips)/n, "round-trips/op")
		b.ReportMetric(float64(cpu)/n, "client-cpu-ns/op")
		b.ReportMetric(float64(srvCPU-srvCPU0)/n, "redis-cpu-ns/op")
		b.Logf("ops=%d commands per op: %s", ops, d.PerOp(ops))
	}
}
