package zklease

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/testenv"
	"github.com/fencekit/fencekit/lease"
)

// TestBump raises a name's tokens past a token far above its zxids, on a
// name never granted and on one granted before; a lower target changes
// nothing, and a held name is refused.
func TestBump(t *testing.T) {
	env := testenv.ZooKeeper(t)
	ctx := context.Background()
	c, conn := newClient(t, env, env.Servers, 10*time.Second, "w")
	const far = fence.Token(1_800_000_000_000_000) // a Redis or PostgreSQL token: µs since 1970
	prefix := prefixOf(env)
	for _, name := range []string{"fresh", "used"} {
		if name == "used" {
			l, err := c.Acquire(ctx, name, 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if err := l.Release(ctx); err != nil {
				t.Fatal(err)
			}
		}
		before, after, err := Bump(ctx, conn, prefix, name, far)
		if err != nil || after <= far {
			t.Fatalf("Bump %s: %v -> %v, %v; want above %v", name, before, after, err, far)
		}
		if b2, a2, err := Bump(ctx, conn, prefix, name, far-1); err != nil || b2 != after || a2 != after {
			t.Fatalf("Bump %s lower: %v -> %v, %v; want unchanged at %v", name, b2, a2, err, after)
		}
		l, err := c.Acquire(ctx, name, 10*time.Second)
		if err != nil || l.Token() <= after {
			t.Fatalf("grant of %s after the bump: %v, %v; want a token above %v", name, l, err, after)
		}
		if info, err := c.Inspect(ctx, name); err != nil || info.Holder != l.Token() || info.Last != l.Token() {
			t.Fatalf("Inspect %s: %+v, %v; want holder and last %v", name, info, err, l.Token())
		}
		if _, _, err := Bump(ctx, conn, prefix, name, 2*far); err == nil {
			t.Fatalf("Bump of held %s: no error", name)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := Bump(ctx, conn, prefix, "a b", far); !errors.Is(err, lease.ErrInvalid) {
		t.Fatalf("Bump of a bad name: %v, want ErrInvalid", err)
	}
	if _, _, err := Bump(ctx, conn, prefix, "x", 0); !errors.Is(err, lease.ErrInvalid) {
		t.Fatalf("Bump to 0: %v, want ErrInvalid", err)
	}
}
