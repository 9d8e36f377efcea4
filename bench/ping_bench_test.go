package bench

import (
	"context"
	"testing"
	"time"
)

// BenchmarkPing calibrates the latency figures: the round trip of one Redis
// PING (p50-ns, p99-ns), back to back (after=busy) and after the process
// slept (after=idle-5ms, idle-50ms, idle-150ms). On a virtual machine whose CPUs go idle, waking
// a process (here Redis, to read the PING) costs far more than the round
// trip itself, and the longer the idle time, the more; a hand-off crosses
// several such wake-ups (holder to Redis, Redis to the waiter, the waiter's
// attempt to Redis and back), which is what bounds hand-off latency on an
// otherwise idle machine. after=idle-D sleeps D before each PING.
func BenchmarkPing(b *testing.B) {
	for _, idle := range []time.Duration{0, 5 * time.Millisecond, 50 * time.Millisecond, 150 * time.Millisecond} {
		after := "busy"
		if idle > 0 {
			after = "idle-" + idle.String()
		}
		b.Run("after="+after, func(b *testing.B) {
			env := newRedis(b, uniqueKey("ping"))
			ctx := context.Background()
			if err := env.Client.Ping(ctx).Err(); err != nil {
				b.Fatal(err)
			}
			lat := make([]time.Duration, b.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				time.Sleep(idle)
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
