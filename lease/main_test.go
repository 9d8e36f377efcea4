package lease

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fencekit/fencekit/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

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

func isLost(err error, cause string) bool {
	var le *LostError
	return errors.As(err, &le) && errors.Is(err, ErrLost) && le.Cause == cause
}

func isNotAcquired(err error) bool {
	var na *NotAcquiredError
	return errors.As(err, &na) && errors.Is(err, ErrNotAcquired)
}

// renewErr returns the last renewal's error.
func (l *Lease) renewErr() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.hbErr
}

// renewing reports whether a renewal of lease name is in flight in f: sent
// and not returned.
func (f *fakeRedis) renewing(name string) bool {
	key := name
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.calls {
		if c.script == "renew" && c.key == key && c.returned.IsZero() {
			return true
		}
	}
	return false
}
