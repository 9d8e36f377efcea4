package zklease

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/leasearg"
	"github.com/fencekit/fencekit/internal/testenv"
	"github.com/fencekit/fencekit/lease"
)

// TestBump raises a name's tokens past a token half a second ahead of the
// clock, on a name never granted and on one granted before; a lower target
// changes nothing, a held name is refused, and so is a target more than
// leasearg.MaxAhead ahead of the leader's clock.
func TestBump(t *testing.T) {
	env := testenv.ZooKeeper(t)
	ctx := context.Background()
	c, _ := newClient(t, env, env.Servers, 10*time.Second, "w")
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
		far := fence.Token(time.Now().Add(leasearg.MaxAhead / 2).UnixMicro())
		before, after, err := c.Bump(ctx, name, far)
		if err != nil || after <= far {
			t.Fatalf("Bump %s: %v -> %v, %v; want above %v", name, before, after, err, far)
		}
		if b2, a2, err := c.Bump(ctx, name, far-1); err != nil || b2 != after || a2 != after {
			t.Fatalf("Bump %s lower: %v -> %v, %v; want unchanged at %v", name, b2, a2, err, after)
		}
		l, err := c.Acquire(ctx, name, 10*time.Second)
		if err != nil || l.Token() <= after {
			t.Fatalf("grant of %s after the bump: %v, %v; want a token above %v", name, l, err, after)
		}
		if info, err := c.Inspect(ctx, name); err != nil || info.Holder != l.Token() || info.Last != l.Token() {
			t.Fatalf("Inspect %s: %+v, %v; want holder and last %v", name, info, err, l.Token())
		}
		if _, _, err := c.Bump(ctx, name, far+1); err == nil {
			t.Fatalf("Bump of held %s: no error", name)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
		ahead := fence.Token(time.Now().Add(time.Hour).UnixMicro())
		if _, _, err := c.Bump(ctx, name, ahead); !errors.Is(err, lease.ErrInvalid) || !strings.Contains(err.Error(), "ahead of the server's clock") {
			t.Fatalf("Bump %s an hour ahead: %v, want ErrInvalid naming the clock", name, err)
		}
		if info, err := c.Inspect(ctx, name); err != nil || info.Last != l.Token() {
			t.Fatalf("Inspect %s after the refused bump: %+v, %v; want Last %v", name, info, err, l.Token())
		}
	}
}

// TestNamesAndForceRelease lists the names granted and ends a held lease
// from outside: its holder sees it lost, and another client is granted it.
func TestNamesAndForceRelease(t *testing.T) {
	env := testenv.ZooKeeper(t)
	ctx := context.Background()
	a, _ := newClient(t, env, env.Servers, time.Second, "a")
	b, _ := newClient(t, env, env.Servers, time.Second, "b")
	if names, err := b.Names(ctx, "*"); err != nil || len(names) != 0 {
		t.Fatalf("Names before any grant: %q, %v", names, err)
	}
	l, err := a.Acquire(ctx, "stuck/job", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"other", "st.ck"} {
		if _, err := a.Acquire(ctx, n, time.Second); err != nil {
			t.Fatal(err)
		}
	}
	for pattern, want := range map[string]string{"*": "other st.ck stuck/job", "st*": "st.ck stuck/job", "st?ck*": "st.ck stuck/job", "st.*": "st.ck", "x*": ""} {
		names, err := b.Names(ctx, pattern)
		if err != nil || strings.Join(names, " ") != want {
			t.Errorf("Names %q: %q, %v; want %q", pattern, names, err, want)
		}
	}
	if r, err := b.ForceRelease(ctx, "stuck/job", l.Token()+1); err != nil || !r.Held || r.Holder != l.Token() {
		t.Fatalf("ForceRelease of another token: %+v, %v; want held by %v, not released", r, err, l.Token())
	}
	r, err := b.ForceRelease(ctx, "stuck/job", 0)
	if err != nil || !r.Held || r.Holder != l.Token() || r.Identity != "a" {
		t.Fatalf("ForceRelease: %+v, %v; want released, the holder's token %v and identity a", r, err, l.Token())
	}
	select {
	case <-l.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the holder's lease still live after the forced release")
	}
	l2, err := b.Acquire(ctx, "stuck/job", time.Second)
	if err != nil || l2.Token() <= l.Token() {
		t.Fatalf("grant after the forced release: %v, %v", l2, err)
	}
	if r, err := b.ForceRelease(ctx, "never", 0); err != nil || r != (lease.Info{}) {
		t.Fatalf("ForceRelease of a name never granted: %+v, %v", r, err)
	}
}
