package bench

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"
)

// Hand-off parameters: the holder keeps the lock for a random time in
// [handoffHoldMin, handoffHoldMin+handoffHoldSpread) (the same seeded
// sequence for every library) while the waiter waits from the start. The
// spread is a whole number of the fixed polling periods (50 ms baseline,
// 100 ms redislock) and longer than redsync's largest delay (250 ms is not,
// but its delays are random), so the release falls at every phase of a
// poller's period alike.
const (
	handoffTTL        = 10 * time.Second
	handoffHoldMin    = 5 * time.Millisecond
	handoffHoldSpread = 200 * time.Millisecond
	handoffWaitMax    = 20 * time.Second
)

// BenchmarkHandoff measures a graceful hand-off: the time from the moment a
// holder calls Release to the moment a waiter, blocked in the library's own
// waiting acquire with its default retry settings, holds the lock. Each
// iteration is one hand-off; p50-ns and p99-ns are over this run's
// iterations (run.sh also pools the rounds' raw samples). ns/op includes
// the holder's random hold time and means nothing here.
func BenchmarkHandoff(b *testing.B) {
	eachLocker(b, func(b *testing.B, name, prefix string, env *redisEnv, l Locker) {
		key := prefix + "-handoff"
		rng := rand.New(rand.NewPCG(7, 7))
		var lat Samples
		ctx := context.Background()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			holder, err := l.TryAcquire(ctx, key, handoffTTL)
			if err != nil {
				b.Fatalf("holder: %v", err)
			}
			type result struct {
				h   Held
				at  time.Time
				err error
			}
			got := make(chan result, 1)
			wctx, cancel := context.WithTimeout(ctx, handoffWaitMax)
			go func() {
				h, err := l.AcquireWait(wctx, key, handoffTTL)
				got <- result{h, time.Now(), err}
			}()
			time.Sleep(handoffHoldMin + time.Duration(rng.Int64N(int64(handoffHoldSpread))))
			released := time.Now()
			if err := holder.Release(ctx); err != nil {
				b.Fatalf("holder release: %v", err)
			}
			r := <-got
			cancel()
			if r.err != nil {
				b.Fatalf("waiter: %v", r.err)
			}
			lat.Add(r.at.Sub(released))
			if err := r.h.Release(ctx); err != nil {
				b.Fatalf("waiter release: %v", err)
			}
		}
		b.StopTimer()
		b.ReportMetric(float64(lat.Quantile(0.5)), "p50-ns")
		b.ReportMetric(float64(lat.Quantile(0.99)), "p99-ns")
		if b.N > 1 { // not the 1-iteration probe the testing package runs first
			if err := lat.Save(b.Name()); err != nil {
				b.Error(err)
			}
		}
	})
}

// eachLocker runs fn as one sub-benchmark per library ("lib=NAME", in the
// rotated order run.sh asks for), with a fresh key prefix, the Redis
// environment and the library's Locker; a library that cannot be built is
// skipped.
func eachLocker(b *testing.B, fn func(b *testing.B, name, prefix string, env *redisEnv, l Locker)) {
	for _, name := range rotated(append(LockerNames(), NoBatchDiag)) {
		b.Run("lib="+name, func(b *testing.B) {
			prefix := uniqueKey(name)
			env := newRedis(b, prefix)
			l, err := NewLocker(name, env.Client)
			if err != nil {
				b.Skip(err)
			}
			fn(b, name, prefix, env, l)
		})
	}
}
