package bench

import (
	"context"
	"testing"
	"time"
)

// pingIdle is how long BenchmarkPing's idle variant sleeps before each
// PING: long enough for the machine's CPUs to go idle.
const pingIdle = 20 * time.Millisecond

// BenchmarkPing calibrates the latency figures: the round trip of one Redis
// PING (p50-ns, p99-ns), back to back (after=busy) and after the process
// slept 20 ms (after=idle). On a virtual machine whose CPUs go idle, waking
// a process (here Redis, to read the PING) costs far more than the round
// trip itself; a hand-off crosses several such wake-ups (holder to Redis,
// Redis to the waiter, the waiter's attempt to Redis and back), which is
// what bounds hand-off latency on an otherwise idle machine.
func BenchmarkPing(b *testing.B) {
	for _, after := range []string{"busy", "idle"} {
		b.Run("after="+after, func(b *testing.B) {
			env := newRedis(b, uniqueKey("ping"))
			ctx := context.Background()
			if err := env.Client.Ping(ctx).Err(); err != nil {
				b.Fatal(err)
			}
			lat := make([]time.Duration, b.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if after == "idle" {
					time.Sleep(pingIdle)
				}
				start := time.Now()
				if err := env.Client.Ping(ctx).Err(); err != nil {
					b.Fatal(err)
				}
				lat[i] = time.Since(start)
			}
			b.StopTimer()
			reportPercentiles(b, lat)
		})
	}
}
