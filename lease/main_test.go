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

func isLost(err error, cause string) bool {
	var le *LostError
	return errors.As(err, &le) && errors.Is(err, ErrLost) && le.Cause == cause
}

// renewing reports whether a renewal of lease name is in flight in f: sent
// and not returned.
func (f *fakeBackend) renewing(name string) bool {
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
