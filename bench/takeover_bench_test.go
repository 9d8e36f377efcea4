package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Crash take-over parameters. The holder is a child process that renews
// every TTL/3 (fencekit's own heartbeat, or an explicit Renew loop for the
// others) and is killed with SIGKILL at a random time in [0, TTL) after it
// holds the lock; takeoverWorkers keys are taken over concurrently.
const (
	takeoverTTL     = time.Second
	takeoverWorkers = 4
	takeoverWaitMax = 30 * time.Second
	// takeoverSettle is the pause between the kill and reading the key's
	// remaining TTL; far shorter than the TTL left after a renewal.
	takeoverSettle = 50 * time.Millisecond
	// takeoverMaxPTTL bounds the PTTL round trip of a kept sample: the
	// expiry is known to that precision.
	takeoverMaxPTTL = 5 * time.Millisecond
)

// Child processes: the test binary run again with envChild set.
const (
	envChild    = "FENCEKIT_BENCH_CHILD"
	envChildLib = "FENCEKIT_BENCH_LIB"
	envChildKey = "FENCEKIT_BENCH_KEY"
	envChildTTL = "FENCEKIT_BENCH_TTL"
	childHolder = "holder"
	childMaxAge = 2 * time.Minute
)

// BenchmarkTakeover measures how long a lock stays unusable after its holder
// dies: a child process holds it and keeps it renewed; the parent waits for
// it in the library's waiting acquire, SIGKILLs the child, and reads the
// key's remaining TTL (PTTL) 50 ms after the kill (once any renewal the
// child sent has landed). Samples whose PTTL took over 5 ms, or where the
// lock had lapsed before the kill, are dropped and counted as "skipped". excess-p50-ns and
// excess-p99-ns are percentiles of the time
// from that expiry to the waiter holding the lock (what the library adds to
// the TTL that cannot be avoided); kill-p50-ns is from the kill to the waiter
// holding (at most one TTL plus the excess). Each iteration is one crash.
func BenchmarkTakeover(b *testing.B) {
	eachLocker(b, func(b *testing.B, name, prefix string, env *redisEnv, l Locker) {
		var excess, kill Samples
		var next, anomalies atomic.Int64
		var wg sync.WaitGroup
		errs := make(chan error, takeoverWorkers)
		b.ResetTimer()
		for w := range takeoverWorkers {
			wg.Go(func() {
				t := &takeover{env: env, l: l, lib: name, key: fmt.Sprintf("%s-w%d", prefix, w),
					rng: rand.New(rand.NewPCG(11, uint64(w)))}
				for next.Add(1) <= int64(b.N) {
					ex, k, ok, err := t.once()
					if err != nil {
						errs <- err
						return
					}
					if !ok {
						anomalies.Add(1)
						continue
					}
					excess.Add(ex)
					kill.Add(k)
				}
			})
		}
		wg.Wait()
		b.StopTimer()
		close(errs)
		for err := range errs {
			b.Fatal(err)
		}
		b.ReportMetric(float64(excess.Quantile(0.5)), "excess-p50-ns")
		b.ReportMetric(float64(excess.Quantile(0.99)), "excess-p99-ns")
		b.ReportMetric(float64(kill.Quantile(0.5)), "kill-p50-ns")
		b.ReportMetric(float64(anomalies.Load()), "skipped")
		if b.N > 1 {
			if err := excess.Save(b.Name()); err != nil {
				b.Error(err)
			}
		}
	})
}

// takeover is one worker's key.
type takeover struct {
	env     *redisEnv
	l       Locker
	lib     string
	key     string
	lockKey string // the Redis key holding the lock, found after the first grant
	rng     *rand.Rand
}

// once runs one crash: it returns the excess over the expiry, the time from
// kill to the next holder, and ok=false when the sample had to be dropped
// because the waiter got the lock before the expiry could be read.
func (t *takeover) once() (excess, kill time.Duration, ok bool, err error) {
	ctx := context.Background()
	child, err := startHolder(t.env.Addr, t.lib, t.key)
	if err != nil {
		return 0, 0, false, err
	}
	defer child.kill()
	if t.lockKey == "" {
		if t.lockKey, err = findLockKey(ctx, t.env.Client, t.key); err != nil {
			return 0, 0, false, err
		}
	}
	type result struct {
		h   Held
		at  time.Time
		err error
	}
	got := make(chan result, 1)
	wctx, cancel := context.WithTimeout(ctx, takeoverWaitMax)
	defer cancel()
	go func() {
		h, err := t.l.AcquireWait(wctx, t.key, takeoverTTL)
		got <- result{h, time.Now(), err}
	}()
	time.Sleep(time.Duration(t.rng.Int64N(int64(takeoverTTL))))
	killed := time.Now()
	child.kill()
	// A renewal the child wrote just before it died may still be on its way
	// to Redis (on another connection than ours): let it land first, or
	// PTTL would show the TTL it is about to replace.
	time.Sleep(takeoverSettle)
	asked := time.Now()
	pttl, err := t.env.Client.PTTL(ctx, t.lockKey).Result()
	answered := time.Now()
	if err != nil {
		return 0, 0, false, fmt.Errorf("bench: PTTL %s: %w", t.lockKey, err)
	}
	r := <-got
	if r.err != nil {
		return 0, 0, false, fmt.Errorf("bench: %s waiter: %w", t.lib, r.err)
	}
	lapsed := pttl <= 0 || r.at.Before(answered)
	if err := r.h.Release(ctx); err != nil && !lapsed {
		// (When the lock had lapsed, the waiter got it long before this
		// release, and its own TTL may have run out meanwhile.)
		return 0, 0, false, fmt.Errorf("bench: %s waiter release: %w", t.lib, err)
	}
	if lapsed || answered.Sub(asked) > takeoverMaxPTTL {
		// The lock had lapsed before the kill, or the machine stalled
		// during PTTL: no precise expiry to measure from.
		if testing.Verbose() {
			fmt.Fprintf(os.Stderr, "bench: %s take-over sample dropped: pttl %v, waiter held %v after the PTTL reply, PTTL took %v\n",
				t.lib, pttl, r.at.Sub(answered), answered.Sub(asked))
		}
		return 0, 0, false, nil
	}
	// The server computed pttl between asked and answered, so the expiry is
	// no earlier than asked+pttl: measuring from there overstates the excess
	// by at most the PTTL round trip plus PTTL's 1 ms truncation.
	return r.at.Sub(asked.Add(pttl)), r.at.Sub(killed), true, nil
}

// findLockKey returns the one key whose name contains name and that has a
// TTL: the lock itself, whatever the library calls it.
func findLockKey(ctx context.Context, c redis.UniversalClient, name string) (string, error) {
	keys, err := c.Keys(ctx, "*"+name+"*").Result()
	if err != nil {
		return "", err
	}
	var withTTL []string
	for _, k := range keys {
		if d, err := c.PTTL(ctx, k).Result(); err == nil && d > 0 {
			withTTL = append(withTTL, k)
		}
	}
	if len(withTTL) != 1 {
		return "", fmt.Errorf("bench: want one key with a TTL for %s, found %v (all: %v)", name, withTTL, keys)
	}
	return withTTL[0], nil
}

// holder is a child process holding a lock.
type holder struct {
	cmd  *exec.Cmd
	once sync.Once
}

// startHolder starts a child that acquires key with lib on the Redis at
// addr, keeps it renewed, and returns once the child says it holds it.
func startHolder(addr, lib, key string) (*holder, error) {
	cmd := exec.Command(os.Args[0], "-test.run=^$", "-test.bench=^$")
	cmd.Env = append(os.Environ(), envChild+"="+childHolder, envChildLib+"="+lib, envChildKey+"="+key,
		envChildTTL+"="+takeoverTTL.String(), EnvRedisAddr+"="+addr)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("bench: start holder: %w", err)
	}
	h := &holder{cmd: cmd}
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		sc.Scan()
		line <- sc.Text()
	}()
	select {
	case l := <-line:
		if l != "held" {
			h.kill()
			return nil, fmt.Errorf("bench: holder %s said %q, want held", lib, l)
		}
		return h, nil
	case <-time.After(30 * time.Second):
		h.kill()
		return nil, fmt.Errorf("bench: holder %s did not hold %s within 30s", lib, key)
	}
}

// kill sends SIGKILL (once) and reaps the process.
func (h *holder) kill() {
	h.once.Do(func() {
		h.cmd.Process.Kill()
		h.cmd.Wait()
	})
}

// runChild runs the child called name and returns its exit code.
func runChild(name string) int {
	if name != childHolder {
		fmt.Fprintf(os.Stderr, "bench: unknown child %q\n", name)
		return 2
	}
	if err := holdForever(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// holdForever acquires the lock named by the environment, prints "held",
// and keeps it renewed every TTL/3 until it is killed (or childMaxAge).
func holdForever() error {
	ttl, err := time.ParseDuration(os.Getenv(envChildTTL))
	if err != nil {
		return fmt.Errorf("bench child: %s: %w", envChildTTL, err)
	}
	c := redis.NewClient(&redis.Options{Addr: os.Getenv(EnvRedisAddr)})
	defer c.Close()
	l, err := NewLocker(os.Getenv(envChildLib), c)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), childMaxAge)
	defer cancel()
	actx, acancel := context.WithTimeout(ctx, 20*time.Second)
	h, err := l.AcquireWait(actx, os.Getenv(envChildKey), ttl)
	acancel()
	if err != nil {
		return fmt.Errorf("bench child: acquire: %w", err)
	}
	fmt.Println("held")
	if l.AutoRenews() {
		<-ctx.Done()
		return nil
	}
	tick := time.NewTicker(ttl / 3)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		if err := h.Renew(ctx, ttl); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("bench child: renew: %w", err)
		}
	}
}
