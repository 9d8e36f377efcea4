package bench

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// leaseTTL is the TTL of the lease micro-benchmarks: long enough that no
// lease expires (and no heartbeat fires) during one operation.
const leaseTTL = 10 * time.Second

// contenders is the number of goroutines racing for one key.
const contenders = 16

// BenchmarkLease measures one library's acquire, renew and release against
// the same Redis server; the libraries alternate within each operation so
// that machine drift falls on all of them alike.
//
//	op=acquire-release-distinct  Acquire then Release, a new key each time
//	op=acquire-release-same      Acquire then Release, always the same key
//	op=renew                     one explicit renewal of a held lock
//	op=contended                 16 goroutines try-acquire one key (and
//	                             release at once when they get it); ns/op
//	                             is per attempt, acq/s counts successes
func BenchmarkLease(b *testing.B) {
	ops := []struct {
		name string
		fn   func(*testing.B, *redisEnv, Locker)
	}{
		{"acquire-release-distinct", benchAcquireReleaseDistinct},
		{"acquire-release-same", benchAcquireReleaseSame},
		{"renew", benchRenew},
		{"contended", benchContended},
	}
	for _, op := range ops {
		b.Run("op="+op.name, func(b *testing.B) {
			for _, name := range LockerNames() {
				b.Run("lib="+name, func(b *testing.B) {
					prefix := uniqueKey(name)
					env := newRedis(b, prefix)
					l, err := NewLocker(name, env.Client)
					if err != nil {
						b.Skip(err)
					}
					op.fn(b, env, l)
				})
			}
		})
	}
}

func benchAcquireReleaseDistinct(b *testing.B, env *redisEnv, l Locker) {
	ctx := context.Background()
	keys := make([]string, b.N)
	for i := range keys {
		keys[i] = env.prefix + "-" + strconv.Itoa(i)
	}
	done := env.counting(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		h, err := l.TryAcquire(ctx, keys[i], leaseTTL)
		if err != nil {
			b.Fatal(err)
		}
		if err := h.Release(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	done(b.N)
}

func benchAcquireReleaseSame(b *testing.B, env *redisEnv, l Locker) {
	ctx := context.Background()
	key := env.prefix + "-same"
	done := env.counting(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		h, err := l.TryAcquire(ctx, key, leaseTTL)
		if err != nil {
			b.Fatal(err)
		}
		if err := h.Release(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	done(b.N)
}

func benchRenew(b *testing.B, env *redisEnv, l Locker) {
	ctx := context.Background()
	h, err := l.TryAcquire(ctx, env.prefix+"-renew", leaseTTL)
	if err != nil {
		b.Fatal(err)
	}
	done := env.counting(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := h.Renew(ctx, leaseTTL); err != nil {
			if errors.Is(err, errors.ErrUnsupported) {
				b.Skip(err)
			}
			b.Fatal(err)
		}
	}
	b.StopTimer()
	done(b.N)
	if err := h.Release(ctx); err != nil {
		b.Fatal(err)
	}
}

func benchContended(b *testing.B, env *redisEnv, l Locker) {
	ctx := context.Background()
	key := env.prefix + "-contended"
	var next, won atomic.Int64
	var firstErr error
	var errOnce sync.Once
	done := env.counting(b)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for range contenders {
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				h, err := l.TryAcquire(ctx, key, leaseTTL)
				if errors.Is(err, ErrHeld) {
					continue
				}
				if err == nil {
					won.Add(1)
					err = h.Release(ctx)
				}
				if err != nil {
					errOnce.Do(func() { firstErr = err })
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if firstErr != nil {
		b.Fatal(firstErr)
	}
	done(b.N)
	b.ReportMetric(float64(won.Load())/elapsed.Seconds(), "acq/s")
	b.ReportMetric(100*float64(won.Load())/float64(b.N), "won-%")
}
