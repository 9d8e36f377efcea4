package redislease

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fencekit/fencekit/lease"
	"github.com/redis/go-redis/v9"
)

var soak = flag.Bool("lease.soak", false, "run the long seeded fault runs")

// flakyHook injects faults into the scripts a client sends, those the
// test picks: an error instead of the call, or a delay before and after it
// (a slow network), drawn from one seeded source. Pipelines (renewals of
// several leases at once) pass untouched: the tests hold one lease.
type flakyHook struct {
	mu     sync.Mutex
	rnd    *rand.Rand
	fail   map[string]float64 // script name -> probability of an error
	delay  time.Duration      // up to this long before and after each call
	faults int
	ok     map[string]int // script name -> calls that succeeded
}

var errInjected = errors.New("flaky: injected connection reset")

// newFlaky returns a client of env's Redis whose scripts fl disturbs.
func newFlaky(t testing.TB, env *countingEnv, seed uint64) (*redis.Client, *flakyHook) {
	fl := &flakyHook{rnd: rand.New(rand.NewPCG(seed, 42)), fail: map[string]float64{}, ok: map[string]int{}}
	return hooked(t, env.Addr, fl), fl
}

func (f *flakyHook) setFail(script string, p float64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail[script] = p
}

// scriptName names the script an EVALSHA or EVAL runs, "" for other
// commands.
func scriptName(cmd redis.Cmder) string {
	args := cmd.Args()
	if len(args) < 2 || (cmd.Name() != "evalsha" && cmd.Name() != "eval") {
		return ""
	}
	for _, s := range []struct {
		name   string
		script *redis.Script
	}{{"acquire", acquireScript}, {"renew", renewScript}, {"release", releaseScript}} {
		if args[1] == s.script.Hash() {
			return s.name
		}
	}
	switch args[1] {
	case acquireSrc:
		return "acquire"
	case renewSrc:
		return "renew"
	case releaseSrc:
		return "release"
	}
	return "?"
}

// count reads one of f's counters under its lock.
func (f *flakyHook) count(read func() int) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return read()
}

// waitFor polls cond until it holds, failing the test after 30s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(30 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("no %s in 30s", what)
		}
	}
}

// draw decides the fault for one call.
func (f *flakyHook) draw(script string) (fail bool, before, after time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fail = f.rnd.Float64() < f.fail[script]
	if fail {
		f.faults++
	}
	if f.delay > 0 {
		before, after = time.Duration(f.rnd.Int64N(int64(f.delay))), time.Duration(f.rnd.Int64N(int64(f.delay)))
	}
	return
}

func (f *flakyHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (f *flakyHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		script := scriptName(cmd)
		if script == "" {
			return next(ctx, cmd)
		}
		fail, before, after := f.draw(script)
		if fail {
			cmd.SetErr(errInjected)
			return errInjected
		}
		time.Sleep(before)
		err := next(ctx, cmd)
		time.Sleep(after)
		if err == nil {
			f.mu.Lock()
			f.ok[script]++
			f.mu.Unlock()
		}
		return err
	}
}

func (f *flakyHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func TestFlakyRenewalsRetriedThenLost(t *testing.T) {
	env := testenvRedisCounting(t)
	rdb, fl := newFlaky(t, env, 1)
	// A wide drift margin: the key outlives the local loss by about a
	// second. The TTL leaves a loaded machine room: the test counts calls,
	// it does not time them.
	c := mustRecorded(t, rdb, &lease.Options{RenewInterval: 100 * time.Millisecond, RetryDelay: 10 * time.Millisecond,
		DriftMargin: time.Second})
	ctx := context.Background()
	name := env.Name("flaky")
	l := mustAcquire(t, c, name, 3*time.Second)

	// Failing for less than the TTL (three failed renewals): retried,
	// and the next renewal that gets through keeps the lease.
	fl.setFail("renew", 1)
	waitFor(t, "three failed renewals", func() bool { return fl.count(func() int { return fl.faults }) >= 3 })
	fl.setFail("renew", 0)
	okBefore := fl.count(func() int { return fl.ok["renew"] })
	waitFor(t, "a renewal after the failures", func() bool { return fl.count(func() int { return fl.ok["renew"] }) > okBefore })
	if l.Err() != nil {
		t.Fatalf("lost after three failed renewals and a good one, with a 3s TTL: %v", l.Err())
	}
	// Failing for good: lost at the local deadline, before Redis expires
	// the key, with the last error in the cause.
	fl.setFail("renew", 1)
	err := waitDone(t, l, 30*time.Second)
	if !isLost(err, lease.CauseExpired) || !errors.Is(err, errInjected) {
		t.Fatalf("Err = %v, want expired carrying the injected error", err)
	}
	pttl, _ := env.client.PTTL(ctx, keysOf(name).lock).Result()
	if pttl <= 0 {
		t.Fatalf("lost locally with the key's PTTL at %v: the deadline came too late", pttl)
	}
	// Release after such a loss still frees the key, which is still ours,
	// so it does not block others until its TTL.
	fl.setFail("renew", 0)
	if err := l.Release(ctx); err != nil {
		t.Fatalf("Release of a key still ours after a local loss = %v (PTTL was %v)", err, pttl)
	}
	if n, _ := env.client.Exists(ctx, keysOf(name).lock).Result(); n != 0 {
		t.Fatal("Release left the key")
	}
	if !isLost(l.Err(), lease.CauseExpired) {
		t.Fatalf("Err after Release = %v, want the loss to stay the cause", l.Err())
	}
}

func TestFlakyReleaseRetried(t *testing.T) {
	env := testenvRedisCounting(t)
	rdb, fl := newFlaky(t, env, 2)
	c := mustRecorded(t, rdb, nil)
	ctx := context.Background()
	name := env.Name("flaky-release")
	l := mustAcquire(t, c, name, 5*time.Second)
	fl.setFail("release", 1)
	if err := l.Release(ctx); !errors.Is(err, errInjected) {
		t.Fatalf("Release = %v, want the injected error", err)
	}
	// Ended locally: the work must stop even though the key is still there.
	if !errors.Is(l.Err(), lease.ErrReleased) {
		t.Fatalf("Err after a failed Release = %v", l.Err())
	}
	if n, _ := env.client.Exists(ctx, keysOf(name).lock).Result(); n != 1 {
		t.Fatal("key gone after a failed Release")
	}
	fl.setFail("release", 0)
	if err := l.Release(ctx); err != nil {
		t.Fatalf("second Release = %v", err)
	}
	if n, _ := env.client.Exists(ctx, keysOf(name).lock).Result(); n != 0 {
		t.Fatal("key left after the retried Release")
	}
	fl.setFail("acquire", 1)
	if _, err := c.Acquire(ctx, name, time.Second); !errors.Is(err, errInjected) {
		t.Fatalf("Acquire = %v, want the injected error", err)
	}
}

// TestFlakySeededDeadlineBeforeExpiry runs seeded random schedules of failing
// and slow renewals against real Redis and checks the safety property: each
// time Redis shows the key is no longer this lease's, the lease's local
// deadline has already passed (so its Context is, or is being, cancelled).
func TestFlakySeededDeadlineBeforeExpiry(t *testing.T) {
	seeds, run := 6, 400*time.Millisecond
	if *soak {
		seeds, run = 200, 2*time.Second
	}
	env := testenvRedisCounting(t)
	ctx := context.Background()
	var lost, faults, gone int
	for seed := range uint64(seeds) {
		rdb, fl := newFlaky(t, env, seed)
		fl.delay = time.Duration(seed%4) * 10 * time.Millisecond
		p := float64(seed%6) / 5 // seed 5: every renewal fails
		fl.setFail("renew", p)
		c := mustRecorded(t, rdb, &lease.Options{RenewInterval: 25 * time.Millisecond, DriftMargin: 10 * time.Millisecond,
			RetryDelay: 5 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
		name := env.Name("seeded")
		l, err := c.Acquire(ctx, name, 100*time.Millisecond)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		end := time.Now().Add(run)
		for time.Now().Before(end) {
			v, err := env.client.Get(ctx, keysOf(name).lock).Result()
			if err != nil && !errors.Is(err, redis.Nil) {
				t.Fatalf("seed %d: %v", seed, err)
			}
			if v != lockValueOf(l) {
				if dl := l.Deadline(); !time.Now().After(dl) {
					t.Fatalf("failed for seed=%d: key is %q but the local deadline %v is still ahead", seed, v, time.Until(dl))
				}
				gone++
				break
			}
			time.Sleep(time.Millisecond)
		}
		if l.Err() != nil {
			lost++
		}
		fl.mu.Lock()
		faults += fl.faults
		fl.mu.Unlock()
		fl.setFail("renew", 0)
		fl.setFail("release", 0)
		l.Release(ctx)
		<-l.Done()
	}
	t.Logf("%d seeds, %d leases lost, %d keys seen gone from Redis, %d injected faults", seeds, lost, gone, faults)
	if faults == 0 || gone == 0 {
		t.Fatal("the schedules never made Redis drop a key: the property was not exercised")
	}
}

// replayHook runs every acquire twice and returns the second reply, as
// go-redis does when the first reply is lost (it resends a command after a
// read timeout or EOF, MaxRetries times by default).
type replayHook struct{}

func (replayHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (replayHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if scriptName(cmd) == "acquire" {
			next(ctx, cmd) // the reply that got lost
		}
		return next(ctx, cmd)
	}
}
func (replayHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func TestAcquireResentFindsItsOwnGrant(t *testing.T) {
	env := testenvRedisCounting(t)
	c := mustRecorded(t, hooked(t, env.Addr, replayHook{}), nil)
	ctx := context.Background()
	name := env.Name("resent")
	l, err := c.Acquire(ctx, name, 5*time.Second)
	if err != nil {
		t.Fatalf("resent acquire = %v, want the grant its first copy made", err)
	}
	v, err := env.client.Get(ctx, keysOf(name).lock).Result()
	if err != nil || v != lockValueOf(l) || !strings.HasPrefix(v, l.Token().String()+":") {
		t.Fatalf("lock key %q (%v), lease value %q token %v", v, err, lockValueOf(l), l.Token())
	}
	release(t, l)
	if n, _ := env.client.Exists(ctx, keysOf(name).lock).Result(); n != 0 {
		t.Fatal("lock key left after Release")
	}
	// Someone else's grant is still refused.
	other := mustAcquire(t, mustNew(t, env.client, nil), name, 5*time.Second)
	defer release(t, other)
	if _, err := c.Acquire(ctx, name, 5*time.Second); !isNotAcquired(err) {
		t.Fatalf("resent acquire of a lease held by another = %v, want NotAcquiredError", err)
	}
}

// resendHook sends every acquire and release, and every pipeline, twice
// and returns the second replies: go-redis resending after a lost reply.
type resendHook struct{ pipelines *atomic.Int64 }

func (resendHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (resendHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if n := scriptName(cmd); n == "acquire" || n == "release" {
			next(ctx, cmd)
		}
		return next(ctx, cmd)
	}
}
func (h resendHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.pipelines.Add(1)
		next(ctx, cmds)
		return next(ctx, cmds)
	}
}

// TestResentCallsKeepOneHolder: acquires and releases, alone and batched
// in pipelines, each resent after a lost reply. Every acquire gets the
// grant its first copy made (no grant left behind, its token in the key);
// every release deletes the key, and one whose first copy did so reports
// the lease lost (cause missing: Redis no longer has it), as documented;
// the next grant's token is greater.
func TestResentCallsKeepOneHolder(t *testing.T) {
	env := testenvRedisCounting(t)
	var pipelines atomic.Int64
	c := mustRecorded(t, hooked(t, env.Addr, resendHook{&pipelines}), nil)
	other := mustNew(t, env.client, nil)
	ctx := context.Background()
	const n = 20
	ls := make([]*lease.Lease, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { ls[i], errs[i] = c.Acquire(ctx, env.Name(fmt.Sprint("resent", i)), 5*time.Second) })
	}
	wg.Wait()
	for i, l := range ls {
		if errs[i] != nil {
			t.Fatalf("resent acquire %d: %v, want the grant its first copy made", i, errs[i])
		}
		if v, err := env.client.Get(ctx, keysOf(l.Name()).lock).Result(); err != nil || v != lockValueOf(l) {
			t.Fatalf("lock key of %d: %q (%v), want %q", i, v, err, lockValueOf(l))
		}
	}
	for i, l := range ls {
		wg.Go(func() { errs[i] = l.Release(ctx) })
	}
	wg.Wait()
	for i, l := range ls {
		var lost *lease.LostError
		if errs[i] != nil && !(errors.As(errs[i], &lost) && lost.Cause == lease.CauseMissing) {
			t.Errorf("resent release %d: %v, want nil or lost (missing)", i, errs[i])
		}
		if n, _ := env.client.Exists(ctx, keysOf(l.Name()).lock).Result(); n != 0 {
			t.Errorf("lock key of %d left after Release", i)
		}
		next := mustAcquire(t, other, l.Name(), 5*time.Second)
		if next.Token() <= l.Token() {
			t.Errorf("grant after %d: token %v, want above %v", i, next.Token(), l.Token())
		}
		release(t, next)
	}
	if pipelines.Load() == 0 {
		t.Fatal("no call was batched: the pipelines' resends were not exercised")
	}
}
