package lease

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fencekit/fencekit/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// newTestClient returns a lease client on the test's Redis and a unique
// name maker.
func newTestClient(t *testing.T, opts *Options) (*Client, *testenv.RedisEnv) {
	t.Helper()
	env := testenv.Redis(t)
	return mustNew(t, env.Client, opts), env
}

func mustAcquire(t testing.TB, c *Client, name string, ttl time.Duration) *Lease {
	t.Helper()
	l, err := c.Acquire(context.Background(), name, ttl)
	if err != nil {
		t.Fatalf("Acquire(%q, %v): %v", name, ttl, err)
	}
	return l
}

func release(t testing.TB, l *Lease) {
	t.Helper()
	if err := l.Release(context.Background()); err != nil {
		t.Fatalf("Release(%q): %v", l.Name(), err)
	}
}

// waitDone waits for the lease to end, failing after limit.
func waitDone(t testing.TB, l *Lease, limit time.Duration) error {
	t.Helper()
	select {
	case <-l.Done():
		return l.Err()
	case <-time.After(limit):
		t.Fatalf("lease %q still held after %v", l.Name(), limit)
		return nil
	}
}

// checkGoroutines fails when, within a few seconds, the number of goroutines
// does not come back to at most base: a lease left a goroutine behind.
func checkGoroutines(t testing.TB, base int) {
	t.Helper()
	var n int
	for range 300 {
		if n = runtime.NumGoroutine(); n <= base {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	buf := make([]byte, 1<<16)
	t.Fatalf("goroutine leak: %d goroutines, %d before\n%s", n, base, buf[:runtime.Stack(buf, true)])
}

func isLost(err error, cause string) bool {
	var le *LostError
	return errors.As(err, &le) && errors.Is(err, ErrLost) && le.Cause == cause
}

// countingEnv is a Redis environment whose client counts the commands it
// sends (one per round trip).
type countingEnv struct {
	*testenv.RedisEnv
	client *redis.Client
	sent   *atomicInt
}

type atomicInt = atomic.Int64

func testenvRedisCounting(t *testing.T) *countingEnv {
	t.Helper()
	env := testenv.Redis(t)
	c := redis.NewClient(&redis.Options{Addr: env.Addr})
	t.Cleanup(func() { c.Close() })
	e := &countingEnv{RedisEnv: env, client: c, sent: new(atomicInt)}
	c.AddHook(countingHook{e.sent})
	return e
}

// warmBase acquires and releases one lease, so that the clients' pools and
// scripts are set up, and returns the goroutine count to come back to.
func warmBase(t *testing.T, c *Client, name string) int {
	t.Helper()
	release(t, mustAcquire(t, c, name, time.Second))
	return runtime.NumGoroutine()
}

func isNotAcquired(err error) bool {
	var na *NotAcquiredError
	return errors.As(err, &na) && errors.Is(err, ErrNotAcquired)
}

// crash stops l's heartbeat without telling anyone, as if its process died.
func (l *Lease) crash() {
	l.mu.Lock()
	l.frozen = true
	l.c.wheel.remove(l)
	l.mu.Unlock()
}

// mustNew is New for tests whose client and options are valid.
func mustNew(t testing.TB, rdb RedisClient, opts *Options) *Client {
	t.Helper()
	c, err := New(rdb, opts)
	if err != nil {
		t.Fatalf("lease.New: %v", err)
	}
	return c
}

// newScripted returns a Redis client whose scripts run through scripts (a
// fake without network for synctest, or a fault-injecting wrapper) and
// whose pipelines and pub/sub use rdb (nil: renewals one by one, no pub/sub).
func newScripted(rdb RedisClient, scripts redis.Scripter, opts *Options) *Client {
	cfg, err := newConfig(opts)
	if err != nil {
		panic(err)
	}
	return newClient(&redisBackend{rdb: rdb, scripts: scripts, prefix: cfg.prefix}, cfg)
}

// keys returns the Redis keys of name under c's prefix.
func (c *Client) keys(name string) *keys {
	k := new(keys)
	makeKeys(k, c.cfg.prefix, name)
	return k
}

// lockValueOf returns the lock key's value that l's grant wrote.
func lockValueOf(l *Lease) string { return l.g.Value.(*redisGrant).value }
