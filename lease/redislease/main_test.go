package redislease

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fencekit/fencekit/internal/leasearg"
	"github.com/fencekit/fencekit/internal/testenv"
	"github.com/fencekit/fencekit/lease"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// newTestClient returns a lease client on the test's Redis and a unique
// name maker.
func newTestClient(t *testing.T, opts *lease.Options) (*lease.Client, *testenv.RedisEnv) {
	t.Helper()
	env := testenv.Redis(t)
	return mustRecorded(t, env.Client, opts), env
}

func mustAcquire(t testing.TB, c *lease.Client, name string, ttl time.Duration) *lease.Lease {
	t.Helper()
	l, err := c.Acquire(context.Background(), name, ttl)
	if err != nil {
		t.Fatalf("Acquire(%q, %v): %v", name, ttl, err)
	}
	return l
}

func release(t testing.TB, l *lease.Lease) {
	t.Helper()
	if err := l.Release(context.Background()); err != nil {
		t.Fatalf("Release(%q): %v", l.Name(), err)
	}
}

// waitDone waits for the lease to end, failing after limit.
func waitDone(t testing.TB, l *lease.Lease, limit time.Duration) error {
	t.Helper()
	select {
	case <-l.Done():
		return l.Err()
	case <-time.After(limit):
		t.Fatalf("lease %q still held after %v", l.Name(), limit)
		return nil
	}
}

func isLost(err error, cause string) bool {
	var le *lease.LostError
	return errors.As(err, &le) && errors.Is(err, lease.ErrLost) && le.Cause == cause
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
func warmBase(t *testing.T, c *lease.Client, name string) int {
	t.Helper()
	release(t, mustAcquire(t, c, name, time.Second))
	return runtime.NumGoroutine()
}

func isNotAcquired(err error) bool {
	var na *lease.NotAcquiredError
	return errors.As(err, &na) && errors.Is(err, lease.ErrNotAcquired)
}

// mustNew is New for tests whose client and options are valid.
func mustNew(t testing.TB, rdb redis.UniversalClient, opts *lease.Options) *lease.Client {
	t.Helper()
	c, err := New(rdb, opts)
	if err != nil {
		t.Fatalf("redislease.New: %v", err)
	}
	return c
}

// mustRecorded is mustNew whose grants are recorded for lockValueOf.
func mustRecorded(t testing.TB, rdb redis.UniversalClient, opts *lease.Options) *lease.Client {
	t.Helper()
	mustNew(t, rdb, opts).Close(context.Background()) // the checks of New
	c, err := lease.NewClient(recorder{newBackend(rdb, opts)}, opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// hooked returns a client of env's Redis (addr "" for one that must never
// dial) through hook: a fault injector, or canned replies.
func hooked(t testing.TB, addr string, hook redis.Hook) *redis.Client {
	t.Helper()
	if addr == "" {
		addr = "127.0.0.1:1" // refuses: the hook answers instead
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	rdb.AddHook(hook)
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// recorder is a backend that remembers every grant, for lockValueOf.
type recorder struct{ *backend }

// granted holds every recorded grant: "<name> <token>" -> *redisGrant.
var granted sync.Map

func (r recorder) Acquire(ctx context.Context, name string, ttl time.Duration, identity string) (*lease.Grant, error) {
	g, err := r.backend.Acquire(ctx, name, ttl, identity)
	if err == nil {
		granted.Store(name+" "+g.Token.String(), g.Value.(*redisGrant))
	}
	return g, err
}

// keysOf returns the Redis keys of name under the default prefix.
func keysOf(name string) *keys {
	k := new(keys)
	makeKeys(k, leasearg.DefaultKeyPrefix, name)
	return k
}

// lockValueOf returns the lock key's value that l's grant wrote (l comes
// from a client of mustRecorded or newTestClient).
func lockValueOf(l *lease.Lease) string {
	rg, ok := granted.Load(l.Name() + " " + l.Token().String())
	if !ok {
		panic("lockValueOf: lease " + l.Name() + " was not granted by a recorded client")
	}
	return rg.(*redisGrant).value
}

// waitMarked waits until a waiter has been refused on name and marked the
// holder's value ('+' after it), and returns the marked value.
func waitMarked(t *testing.T, rdb redis.Cmdable, name string) string {
	t.Helper()
	var v string
	testenv.Poll(t, 10*time.Second, "a waiter's mark on "+name, func() bool {
		var err error
		v, err = rdb.Get(context.Background(), keysOf(name).lock).Result()
		if err != nil && err != redis.Nil {
			t.Fatal(err)
		}
		return strings.HasSuffix(v, "+")
	})
	return v
}
