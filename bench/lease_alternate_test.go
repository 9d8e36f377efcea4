package bench

import (
	"context"
	"strconv"
	"testing"
	"time"
)

// BenchmarkLeaseAlternating times Acquire+Release for several libraries in one
// loop, taking turns operation by operation (the order rotates every
// iteration), so that load from other processes falls on all of them
// alike: for comparing libraries on a busy machine, where the separate
// blocks of BenchmarkLease drift apart. Each iteration acquires and releases
// once per library; p50-ns-<lib> is that library's median and
// p50-ratio-<lib> its ratio to redislock's.
func BenchmarkLeaseAlternating(b *testing.B) {
	for _, op := range []string{"distinct", "same"} {
		b.Run("op=acquire-release-"+op, func(b *testing.B) {
			env := newRedis(b, uniqueKey("alt"))
			names := []string{"redislock", "fencekit", luaDiag, "baseline"}
			lockers := make([]Locker, len(names))
			for i, name := range names {
				var err error
				if name == luaDiag {
					lockers[i], err = NewFencekitLua(env.Client)
				} else {
					lockers[i], err = NewLocker(name, env.Client)
				}
				if err != nil {
					b.Fatal(err)
				}
				warmUp(b, lockers[i], env.prefix+"-warm-"+name)
			}
			ctx := context.Background()
			lat := make([][]time.Duration, len(names))
			for i := range lat {
				lat[i] = make([]time.Duration, 0, b.N)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				for k := range names {
					j := (i + k) % len(names)
					key := env.prefix + "-" + names[j] + "-same"
					if op == "distinct" {
						key = env.prefix + "-" + names[j] + "-" + strconv.Itoa(i)
					}
					start := time.Now()
					h, err := lockers[j].TryAcquire(ctx, key, leaseTTL)
					if err != nil {
						b.Fatal(err)
					}
					if err := h.Release(ctx); err != nil {
						b.Fatal(err)
					}
					lat[j] = append(lat[j], time.Since(start))
				}
			}
			b.StopTimer()
			ref := float64(Quantile(lat[0], 0.5))
			for j, name := range names {
				p := float64(Quantile(lat[j], 0.5))
				b.ReportMetric(p, "p50-ns-"+name)
				b.ReportMetric(p/ref, "p50-ratio-"+name)
			}
		})
	}
}
