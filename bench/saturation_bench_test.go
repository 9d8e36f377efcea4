package bench

import (
	"context"
	"strconv"
	"testing"
)

// saturationClients is the number of goroutines of BenchmarkSaturation,
// each with a connection of its own and a lock name of its own.
const saturationClients = 64

// BenchmarkSaturation measures how many acquire+release operations per
// second one Redis server sustains for many clients on distinct names:
// saturationClients goroutines each acquire and release their own name in
// a loop until b.N operations are done. acq-rel/s is the throughput;
// redis-cpu-ns/op is the server's CPU per operation, whose inverse is what
// one Redis core could sustain with the clients on other machines (on the
// benchmark machine the clients share its cores with the server).
func BenchmarkSaturation(b *testing.B) {
	for _, name := range rotated(append(LockerNames(), fencedDiag, NoBatchDiag)) {
		b.Run("lib="+name, func(b *testing.B) {
			env := newRedisPool(b, uniqueKey(name), saturationClients)
			var l Locker
			var err error
			if name == fencedDiag {
				l = BaselineFenced{C: env.Client}
			} else if l, err = NewLocker(name, env.Client); err != nil {
				b.Fatal(err)
			}
			warmUp(b, l, env.prefix+"-warm")
			benchSaturation(b, env, l)
		})
	}
}

func benchSaturation(b *testing.B, env *redisEnv, l Locker) {
	ctx := context.Background()
	keys := make([]string, saturationClients)
	for g := range keys {
		keys[g] = env.prefix + "-" + strconv.Itoa(g)
	}
	done := env.counting(b)
	elapsed := runConcurrently(b, saturationClients, func(g int) error {
		h, err := l.TryAcquire(ctx, keys[g], leaseTTL)
		if err == nil {
			err = h.Release(ctx)
		}
		return err
	})
	done(b.N)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "acq-rel/s")
}
