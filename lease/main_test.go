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
	return New(env.Client, opts), env
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
