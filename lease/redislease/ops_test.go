package redislease

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/leasetest"
	"github.com/fencekit/fencekit/internal/testenv"
	"github.com/fencekit/fencekit/lease"
)

// TestKeysAreWhatTheClientWrites holds Keys, Holder and nameOf (what
// fencectl reads leases with) to what the client writes and publishes.
func TestKeysAreWhatTheClientWrites(t *testing.T) {
	env := testenv.Redis(t)
	ctx := context.Background()
	for _, prefix := range []string{lease.DefaultKeyPrefix, env.Prefix + "*x?"} {
		name := env.Name("layout")
		lock, counter, channel := Keys(prefix, name)
		ps := env.Client.Subscribe(ctx, channel)
		if _, err := ps.Receive(ctx); err != nil {
			t.Fatal(err)
		}
		l := mustAcquire(t, mustNew(t, env.Client, &lease.Options{KeyPrefix: prefix, Identity: "ops/1"}), name, 10*time.Second)
		v, err := env.Client.Get(ctx, lock).Result()
		if tok, id := Holder(v); err != nil || tok != l.Token() || id != "ops/1" {
			t.Errorf("prefix %q: lock key %s = %q, %v; want the holder's token %v and identity", prefix, lock, v, err, l.Token())
		}
		if n, err := env.Client.Get(ctx, counter).Uint64(); err != nil || fence.Token(n) != l.Token() {
			t.Errorf("prefix %q: counter %s = %d, %v; want %v", prefix, counter, n, err, l.Token())
		}
		for _, key := range []string{lock, counter} {
			if got, ok := nameOf(prefix, key); !ok || got != name {
				t.Errorf("nameOf(%s) = %q, %v", key, got, ok)
			}
		}
		// A waiter, refused, asks the holder's release to be published.
		wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		waited := make(chan error, 1)
		go func() {
			w, err := mustNew(t, env.Client, &lease.Options{KeyPrefix: prefix}).AcquireWait(wctx, name, time.Second)
			if err == nil {
				err = w.Release(ctx)
			}
			waited <- err
		}()
		time.Sleep(200 * time.Millisecond)
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-waited; err != nil {
			t.Fatal(err)
		}
		cancel()
		select {
		case m := <-ps.Channel():
			if tok, _ := Holder(m.Payload); tok != l.Token() {
				t.Errorf("release published %q, want the holder's token %v", m.Payload, l.Token())
			}
		case <-time.After(10 * time.Second):
			t.Errorf("prefix %q: no release published on %s", prefix, channel)
		}
		ps.Close()
	}
}

// FuzzNameOf checks that list recovers every valid lease name from its
// keys under any valid prefix, and never returns an invalid name.
func FuzzNameOf(f *testing.F) {
	f.Add("fencekit", "orders", "lock")
	f.Add("a*[p]", "x}:lock", "token")
	f.Add("p", "a:{b", "released")
	f.Fuzz(func(t *testing.T, prefix, name, suffix string) {
		key := prefix + ":{" + name + "}:" + suffix
		got, ok := nameOf(prefix, key)
		valid := lease.ValidateName(name) == nil && !strings.ContainsAny(prefix, "{}")
		if ok && lease.ValidateName(got) != nil {
			t.Fatalf("nameOf returned the invalid name %q", got)
		}
		if valid && (suffix == "lock" || suffix == "token") && (!ok || got != name) {
			t.Fatalf("nameOf(%q) = %q, %v; want %q", key, got, ok, name)
		}
		if ok && suffix != "lock" && suffix != "token" && !strings.Contains(suffix, "}:") {
			t.Fatalf("nameOf(%q) accepted suffix %q", key, suffix)
		}
	})
}

// The operator calls refuse a bad name or target with an error matching
// lease.ErrInvalid that names one package once, and send nothing.
func TestOpsRefuseBadInput(t *testing.T) {
	env := testenvRedisCounting(t)
	ctx := context.Background()
	errs := map[string]error{
		"Bump empty name":        func() error { _, _, err := Bump(ctx, env.client, "p", "", 5); return err }(),
		"Bump NUL name":          func() error { _, _, err := Bump(ctx, env.client, "p", "a\x00", 5); return err }(),
		"Bump 16 KB name":        func() error { _, _, err := Bump(ctx, env.client, "p", strings.Repeat("n", 16<<10), 5); return err }(),
		"Bump target 0":          func() error { _, _, err := Bump(ctx, env.client, "p", "a", 0); return err }(),
		"Bump target too big":    func() error { _, _, err := Bump(ctx, env.client, "p", "a", MaxBump+1); return err }(),
		"ForceRelease brace":     func() error { _, err := ForceRelease(ctx, env.client, "p", "a{b}", 0); return err }(),
		"ForceRelease not UTF-8": func() error { _, err := ForceRelease(ctx, env.client, "p", "\xff", 0); return err }(),
	}
	leasetest.CheckInvalid(t, "redislease", errs)
	for what, err := range errs {
		if len(err.Error()) > 200 {
			t.Errorf("%s: %.300v; want a short error", what, err)
		}
	}
	if n := env.sent.Load(); n != 0 {
		t.Fatalf("%d commands sent for bad input", n)
	}
}
