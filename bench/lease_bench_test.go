package bench

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fencekit/fencekit/lease"
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
//	op=renew                     one explicit renewal of a held lock; for
//	                             fencekit, which has no renew call, one
//	                             heartbeat renewal with RenewInterval 1ns
//	                             (renewals back to back, each timed from
//	                             the previous one's reply, allocations of
//	                             the heartbeat goroutine included)
//	op=contended                 16 goroutines try-acquire one key (and
//	                             release at once when they get it); ns/op
//	                             is per attempt, acq/s counts successes
//
// lib=fencekit-lua is a diagnostic, not a library: fencekit's Lua scripts
// run straight through go-redis (see FencekitLua), to split fencekit's cost
// between its scripts and its Go code. lib=baseline-fenced is the
// hand-written baseline with a fencing token (SET NX PX and INCR in one
// script; see BaselineFenced): what a token costs without fencekit.
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
			for _, name := range rotated(append(LockerNames(), luaDiag, fencedDiag, NoBatchDiag)) {
				b.Run("lib="+name, func(b *testing.B) {
					prefix := uniqueKey(name)
					env := newRedis(b, prefix)
					var l Locker
					var err error
					switch name {
					case luaDiag:
						l, err = NewFencekitLua(env.Client)
					case fencedDiag:
						l = BaselineFenced{C: env.Client}
					default:
						l, err = NewLocker(name, env.Client)
					}
					if err != nil {
						b.Skip(err)
					}
					warmUp(b, l, env.prefix+"-warm")
					op.fn(b, env, l)
				})
			}
		})
	}
}

// warmUp acquires and releases key once, untimed, so that the scripts are
// loaded in Redis (the first EVALSHA of a script fails with NOSCRIPT and is
// sent again as EVAL) and a connection is open.
func warmUp(b *testing.B, l Locker, key string) {
	b.Helper()
	ctx := context.Background()
	h, err := l.TryAcquire(ctx, key, leaseTTL)
	if err != nil {
		b.Fatalf("warm-up acquire: %v", err)
	}
	if err := h.Release(ctx); err != nil {
		b.Fatalf("warm-up release: %v", err)
	}
}

func benchAcquireReleaseDistinct(b *testing.B, env *redisEnv, l Locker) {
	keys := make([]string, b.N)
	for i := range keys {
		keys[i] = env.prefix + "-" + strconv.Itoa(i)
	}
	benchAcquireRelease(b, env, l, keys)
}

func benchAcquireReleaseSame(b *testing.B, env *redisEnv, l Locker) {
	keys := make([]string, b.N)
	for i := range keys {
		keys[i] = env.prefix + "-same"
	}
	benchAcquireRelease(b, env, l, keys)
}

// benchAcquireRelease acquires and releases keys[i] in iteration i.
func benchAcquireRelease(b *testing.B, env *redisEnv, l Locker, keys []string) {
	ctx := context.Background()
	lat := make([]time.Duration, b.N)
	done := env.counting(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		h, err := l.TryAcquire(ctx, keys[i], leaseTTL)
		if err != nil {
			b.Fatal(err)
		}
		if err := h.Release(ctx); err != nil {
			b.Fatal(err)
		}
		lat[i] = time.Since(start)
	}
	b.StopTimer()
	done(b.N)
	reportPercentiles(b, lat)
}

// reportPercentiles reports the median and 99th percentile of the
// operations' own durations (ns/op is their mean).
func reportPercentiles(b *testing.B, lat []time.Duration) {
	b.ReportMetric(float64(Quantile(lat, 0.5)), "p50-ns")
	b.ReportMetric(float64(Quantile(lat, 0.99)), "p99-ns")
}

func benchRenew(b *testing.B, env *redisEnv, l Locker) {
	if _, ok := l.(Fencekit); ok {
		benchHeartbeat(b, env)
		return
	}
	ctx := context.Background()
	h, err := l.TryAcquire(ctx, env.prefix+"-renew", leaseTTL)
	if err != nil {
		b.Fatal(err)
	}
	if err := h.Renew(ctx, leaseTTL); err != nil { // warm up: load the script
		b.Fatal(err)
	}
	lat := make([]time.Duration, b.N)
	done := env.counting(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if err := h.Renew(ctx, leaseTTL); err != nil {
			if errors.Is(err, errors.ErrUnsupported) {
				b.Skip(err)
			}
			b.Fatal(err)
		}
		lat[i] = time.Since(start)
	}
	b.StopTimer()
	done(b.N)
	reportPercentiles(b, lat)
	if err := h.Release(ctx); err != nil {
		b.Fatal(err)
	}
}

func benchContended(b *testing.B, env *redisEnv, l Locker) {
	ctx := context.Background()
	key := env.prefix + "-contended"
	var won atomic.Int64
	done := env.counting(b)
	elapsed := runConcurrently(b, contenders, func(int) error {
		h, err := l.TryAcquire(ctx, key, leaseTTL)
		if errors.Is(err, ErrHeld) {
			return nil
		}
		if err == nil {
			won.Add(1)
			err = h.Release(ctx)
		}
		return err
	})
	done(b.N)
	b.ReportMetric(float64(won.Load())/elapsed.Seconds(), "acq/s")
	b.ReportMetric(100*float64(won.Load())/float64(b.N), "won-%")
}

// runConcurrently times b.N calls of op spread over n goroutines (op gets
// the goroutine's number) and stops the timer; the first error fails b.
func runConcurrently(b *testing.B, n int, op func(g int) error) time.Duration {
	var next atomic.Int64
	var firstErr error
	var errOnce sync.Once
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for g := range n {
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				if err := op(g); err != nil {
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
	return elapsed
}

// benchHeartbeat times b.N renewals by fencekit's heartbeat: with a renew
// interval of 1ns, the heartbeat goroutine sends each renewal as soon as
// the previous one is confirmed. A hook counts the scripts the client runs
// once armed and says when b.N have completed.
func benchHeartbeat(b *testing.B, env *redisEnv) {
	ctx := context.Background()
	counter := &scriptCountdown{done: make(chan struct{})}
	env.Client.AddHook(counter)
	fk, err := NewFencekit(env.Client, &lease.Options{RenewInterval: time.Nanosecond})
	if err != nil {
		b.Fatal(err)
	}
	h, err := fk.TryAcquire(ctx, env.prefix+"-renew", leaseTTL)
	if err != nil {
		b.Fatal(err)
	}
	done := env.counting(b)
	b.ReportAllocs()
	b.ResetTimer()
	counter.arm(int64(b.N))
	select {
	case <-counter.done:
	case <-time.After(time.Minute):
		b.Fatalf("heartbeat made %d of %d renewals in a minute", counter.n.Load(), b.N)
	}
	b.StopTimer()
	done(int(counter.n.Load()))
	if err := h.Release(ctx); err != nil {
		b.Fatal(err)
	}
	reportPercentiles(b, counter.gaps())
}

// scriptCountdown is a go-redis hook that, once armed with a target, counts
// completed script calls and closes done at the target. It records the
// time between consecutive completions: one whole renewal cycle each, the
// heartbeat's own Go code included, as a peer's Renew loop iteration.
type scriptCountdown struct {
	target atomic.Int64 // 0: not armed
	n      atomic.Int64
	done   chan struct{}
	once   sync.Once

	mu   sync.Mutex
	last time.Time
	gap  []time.Duration
}

func (s *scriptCountdown) gaps() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gap
}

func (s *scriptCountdown) arm(target int64) { s.target.Store(target) }

func (s *scriptCountdown) DialHook(next redis.DialHook) redis.DialHook { return next }

func (s *scriptCountdown) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if name := cmd.Name(); name != "evalsha" && name != "eval" {
			return err
		}
		t := s.target.Load()
		if t == 0 {
			return err
		}
		now := time.Now()
		s.mu.Lock()
		if !s.last.IsZero() && int64(len(s.gap)) < t {
			s.gap = append(s.gap, now.Sub(s.last))
		}
		s.last = now
		s.mu.Unlock()
		if s.n.Add(1) >= t {
			s.once.Do(func() { close(s.done) })
		}
		return err
	}
}

func (s *scriptCountdown) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
