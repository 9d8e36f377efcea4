package redislease

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fencekit/fencekit/internal/testenv"
	"github.com/fencekit/fencekit/lease"
)

// baselineRelease is the hand-written compare-and-delete of the baseline.
var baselineRelease = redis.NewScript(`if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`)

// benchEnv is a private redis-server (so INFO commandstats counts only the
// benchmark) and a client that counts round trips.
type benchEnv struct {
	srv  *testenv.RedisServer
	rdb  *redis.Client
	sent *atomic.Int64
}

func newBenchEnv(b *testing.B) *benchEnv {
	srv := testenv.StartRedisServer(b)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, PoolSize: 32})
	b.Cleanup(func() { rdb.Close() })
	e := &benchEnv{srv: srv, rdb: rdb, sent: new(atomic.Int64)}
	rdb.AddHook(countingHook{e.sent})
	return e
}

// commands returns the total calls in INFO commandstats (commands run by
// scripts included), minus the INFO calls themselves.
func (e *benchEnv) commands(b *testing.B) int64 {
	info, err := e.rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	var n int64
	for line := range strings.Lines(info) {
		if !strings.HasPrefix(line, "cmdstat_") || strings.HasPrefix(line, "cmdstat_info:") {
			continue
		}
		_, rest, _ := strings.Cut(line, "calls=")
		calls, _, _ := strings.Cut(rest, ",")
		c, _ := strconv.ParseInt(calls, 10, 64)
		n += c
	}
	return n
}

// measure runs fn as the benchmark body and reports Redis commands and
// client round trips per operation.
func (e *benchEnv) measure(b *testing.B, fn func(b *testing.B)) {
	b.ReportAllocs()
	cmds := e.commands(b)
	sent := e.sent.Load()
	cpu := cpuTime(b)
	b.ResetTimer()
	fn(b)
	b.StopTimer()
	cpu = cpuTime(b) - cpu
	after := e.sent.Load() // read before the INFO below
	b.ReportMetric(float64(e.commands(b)-cmds)/float64(b.N), "rediscmds/op")
	b.ReportMetric(float64(after-sent)/float64(b.N), "roundtrips/op")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "client-cpu-ns/op")
}

func BenchmarkLease(b *testing.B) {
	e := newBenchEnv(b)
	ctx := context.Background()
	c := mustNew(b, e.rdb, nil)
	for _, s := range []*redis.Script{acquireScript, renewScript, releaseScript, baselineRelease} {
		if err := s.Load(ctx, e.rdb).Err(); err != nil {
			b.Fatal(err)
		}
	}

	b.Run("AcquireRelease", func(b *testing.B) {
		e.measure(b, func(b *testing.B) { acquireReleaseLoop(b, c, "ar") })
	})
	b.Run("Baseline/SetNXRelease", func(b *testing.B) {
		e.measure(b, func(b *testing.B) {
			for b.Loop() {
				val, err := randomValue()
				if err != nil {
					b.Fatal(err)
				}
				ok, err := e.rdb.SetNX(ctx, "baseline", val, time.Minute).Result()
				if err != nil || !ok {
					b.Fatal(ok, err)
				}
				if n, err := baselineRelease.Run(ctx, e.rdb, []string{"baseline"}, val).Int64(); err != nil || n != 1 {
					b.Fatal(n, err)
				}
			}
		})
	})
	b.Run("Renew", func(b *testing.B) { // the backend's renewal alone, without the heartbeat
		be := newBackend(e.rdb, nil)
		g, err := be.Acquire(ctx, "renew", time.Minute, "bench")
		if err != nil {
			b.Fatal(err)
		}
		defer be.Release(ctx, g)
		batch := []*lease.Grant{g}
		e.measure(b, func(b *testing.B) {
			for b.Loop() {
				if errs := be.Renew(ctx, batch); errs[0] != nil {
					b.Fatal("renewal failed", errs[0])
				}
			}
		})
	})
	b.Run("Contended16/Acquire", func(b *testing.B) {
		var grants atomic.Int64
		e.measure(b, func(b *testing.B) {
			b.SetParallelism(16 / max(1, testingProcs()))
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					l, err := c.Acquire(ctx, "contended", time.Minute)
					if errors.Is(err, lease.ErrNotAcquired) {
						continue
					}
					if err != nil {
						b.Error(err)
						return
					}
					grants.Add(1)
					l.Release(ctx)
				}
			})
		})
		b.ReportMetric(float64(grants.Load())/float64(b.N), "grants/op")
	})
	b.Run("Contended16/Baseline", func(b *testing.B) {
		var grants atomic.Int64
		e.measure(b, func(b *testing.B) {
			b.SetParallelism(16 / max(1, testingProcs()))
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					val, _ := randomValue()
					ok, err := e.rdb.SetNX(ctx, "contended-baseline", val, time.Minute).Result()
					if err != nil {
						b.Error(err)
						return
					}
					if ok {
						grants.Add(1)
						baselineRelease.Run(ctx, e.rdb, []string{"contended-baseline"}, val)
					}
				}
			})
		})
		b.ReportMetric(float64(grants.Load())/float64(b.N), "grants/op")
	})
}

// BenchmarkRawScripts runs the acquire and release scripts alone, without
// the Lease machinery: the difference to BenchmarkLease/AcquireRelease is
// the cost of the Lease object (its context, its entry in the Client's
// heap, metrics), the difference to the baseline the cost of issuing a
// token in Lua.
func BenchmarkRawScripts(b *testing.B) {
	e := newBenchEnv(b)
	ctx := context.Background()
	c := mustNew(b, e.rdb, nil)
	k := keysOf("raw")
	release(b, mustAcquire(b, c, "raw", time.Second))
	b.Run("scripts", func(b *testing.B) {
		e.measure(b, func(b *testing.B) {
			for b.Loop() {
				res, err := acquireScript.Run(ctx, e.rdb, []string{k.lock, k.token}, 60000, "abc").Text()
				if err != nil {
					b.Fatal(err)
				}
				val := res + ":abc"
				if _, err := releaseScript.Run(ctx, e.rdb, []string{k.lock}, val).Int64(); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
}

func randomValue() (string, error) {
	var buf [16]byte
	if _, err := rand.Read(buf[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(buf[:]), nil
}

func testingProcs() int { return runtime.GOMAXPROCS(0) }

// cannedHook answers the scripts at once, without a network, so that
// BenchmarkClientSide measures only the client's own work (go-redis's
// command building, contexts, the Client's heap of leases, keys, metrics,
// parsing) per Acquire+Release, and per heartbeat renewal (renewals back to
// back, RenewInterval 1ns, each answered at once).
type cannedHook struct{ tok, renewals atomic.Int64 }

func (h *cannedHook) answer(cmd redis.Cmder) {
	c, ok := cmd.(*redis.Cmd)
	switch {
	case !ok || scriptName(cmd) == "":
		cmd.SetErr(errors.New("canned: no network"))
	case scriptName(cmd) == "acquire":
		c.SetVal(strconv.FormatInt(h.tok.Add(1), 10))
	case scriptName(cmd) == "renew":
		h.renewals.Add(1)
		c.SetVal(int64(1))
	default:
		c.SetVal(int64(1))
	}
}

func (h *cannedHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *cannedHook) ProcessHook(redis.ProcessHook) redis.ProcessHook {
	return func(_ context.Context, cmd redis.Cmder) error { h.answer(cmd); return cmd.Err() }
}
func (h *cannedHook) ProcessPipelineHook(redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(_ context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			h.answer(cmd)
		}
		return nil
	}
}

// newCanned is a lease client whose Redis is a cannedHook.
func newCanned(t testing.TB) *lease.Client { return mustNew(t, hooked(t, "", &cannedHook{}), nil) }

func BenchmarkClientSide(b *testing.B) {
	c := newCanned(b)
	b.Run("AcquireRelease", func(b *testing.B) {
		b.ReportAllocs()
		reportCPU(b, func() { acquireReleaseLoop(b, c, "client-side") })
	})
	// The two scripts called straight through the same canned go-redis:
	// AcquireRelease minus this is the lease packages' own cost.
	b.Run("RawScripts", func(b *testing.B) {
		ctx := context.Background()
		rdb := hooked(b, "", &cannedHook{})
		k := keysOf("client-side-raw")
		b.ReportAllocs()
		reportCPU(b, func() {
			for b.Loop() {
				res, err := acquireScript.Run(ctx, rdb, []string{k.lock, k.token}, 60000, "abc").Text()
				if err != nil {
					b.Fatal(err)
				}
				if _, err := releaseScript.Run(ctx, rdb, []string{k.lock}, res+":abc").Int64(); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
	b.Run("Heartbeat", func(b *testing.B) {
		h := &cannedHook{}
		c := mustNew(b, hooked(b, "", h), &lease.Options{RenewInterval: time.Nanosecond})
		b.ReportAllocs()
		start := h.renewals.Load()
		l := mustAcquire(b, c, "client-side-heartbeat", time.Minute)
		for h.renewals.Load() < start+int64(b.N) {
			time.Sleep(100 * time.Microsecond)
		}
		release(b, l)
	})
}

// reportCPU runs loop, a benchmark's body, and reports the process's CPU
// time per operation: on a shared machine it varies less than the wall time.
func reportCPU(b *testing.B, loop func()) {
	cpu := cpuTime(b)
	loop()
	b.ReportMetric(float64((cpuTime(b)-cpu).Nanoseconds())/float64(b.N), "cpu-ns/op")
}

// acquireReleaseLoop is the body of the Acquire+Release benchmarks.
func acquireReleaseLoop(b *testing.B, c *lease.Client, name string) {
	ctx := context.Background()
	for b.Loop() {
		l, err := c.Acquire(ctx, name, time.Minute)
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHeartbeat measures renewals driven by the heartbeat itself, back
// to back (RenewInterval 1ns: each renewal is due when the previous reply
// comes): the scheduling around Renew, not only the request.
func BenchmarkHeartbeat(b *testing.B) {
	e := newBenchEnv(b)
	c := mustNew(b, e.rdb, &lease.Options{RenewInterval: time.Nanosecond})
	release(b, mustAcquire(b, c, "heartbeat", time.Minute))
	e.measure(b, func(b *testing.B) {
		start := e.sent.Load()
		l := mustAcquire(b, c, "heartbeat", time.Minute)
		for e.sent.Load() < start+int64(b.N)+1 {
			time.Sleep(100 * time.Microsecond)
		}
		release(b, l)
	})
}
