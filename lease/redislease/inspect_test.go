package redislease

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fencekit/fencekit/lease"
)

func TestInspect(t *testing.T) {
	env := testenvRedisCounting(t)
	c := mustNew(t, env.client, nil)
	ctx := context.Background()
	name := env.Name("inspect")

	if _, err := c.Inspect(ctx, name); err != nil { // loads the script, dials
		t.Fatal(err)
	}
	read := func() lease.Info {
		t.Helper()
		before := env.sent.Load()
		info, err := c.Inspect(ctx, name)
		if err != nil {
			t.Fatalf("Inspect: %v", err)
		}
		if n := env.sent.Load() - before; n != 1 {
			t.Fatalf("Inspect took %d round trips, want 1", n)
		}
		return info
	}
	if info := read(); info != (lease.Info{}) {
		t.Fatalf("never granted: %+v, want zero", info)
	}
	l := mustAcquire(t, c, name, 10*time.Second)
	info := read()
	if !info.Held || info.Holder != l.Token() || info.Last != l.Token() || info.Remaining <= 9*time.Second || info.Remaining > 10*time.Second {
		t.Fatalf("held: %+v, want held by %v for about 10s", info, l.Token())
	}
	lock := keysOf(name).lock
	v1, _ := env.client.Get(ctx, lock).Result()
	pttl1, _ := env.client.PTTL(ctx, lock).Result()
	read()
	if v2, _ := env.client.Get(ctx, lock).Result(); v2 != v1 {
		t.Fatalf("Inspect changed the lock from %q to %q", v1, v2)
	}
	if pttl2, _ := env.client.PTTL(ctx, lock).Result(); pttl2 > pttl1 {
		t.Fatalf("Inspect extended the TTL from %v to %v", pttl1, pttl2)
	}
	release(t, l)
	if info := read(); info.Held || info.Holder != 0 || info.Remaining != 0 || info.Last != l.Token() {
		t.Fatalf("released: %+v, want not held, last %v", info, l.Token())
	}

	// A key fencekit did not write: held, holder unknown, no expiry.
	env.client.Set(ctx, lock, "someone", 0)
	if info := read(); !info.Held || info.Holder != 0 || info.Remaining >= 0 {
		t.Fatalf("foreign key: %+v, want held by 0 with no expiry", info)
	}
	env.client.Set(ctx, keysOf(name).token, "junk", 0)
	if _, err := c.Inspect(ctx, name); err == nil {
		t.Fatal("Inspect of a counter holding junk: no error")
	}
	before := env.sent.Load()
	if _, err := c.Inspect(ctx, "a{b}"); !errors.Is(err, lease.ErrInvalid) {
		t.Fatalf("Inspect(bad name) = %v, want ErrInvalid", err)
	}
	if n := env.sent.Load() - before; n != 0 {
		t.Fatalf("Inspect of a bad name sent %d commands", n)
	}
}
