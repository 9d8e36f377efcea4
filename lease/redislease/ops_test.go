package redislease

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/leasearg"
	"github.com/fencekit/fencekit/internal/testenv"
	"github.com/fencekit/fencekit/lease"
)

// TestKeysAreWhatTheClientWrites holds the key layout of the package doc
// (what fencectl's watch subscribes to), parseHolder and nameOf to what
// the client writes and publishes.
func TestKeysAreWhatTheClientWrites(t *testing.T) {
	env := testenv.Redis(t)
	ctx := context.Background()
	for _, prefix := range []string{leasearg.DefaultKeyPrefix, env.Prefix + "*x?"} {
		name := env.Name("layout")
		lock, counter, channel := prefix+":{"+name+"}:lock", prefix+":{"+name+"}:token", prefix+":{"+name+"}:released"
		var k keys
		if makeKeys(&k, prefix, name); k.lock != lock || k.token != counter || k.channel != channel {
			t.Errorf("makeKeys(%q, %q) = %+v, want the package doc's layout", prefix, name, k)
		}
		ps := env.Client.Subscribe(ctx, channel)
		if _, err := ps.Receive(ctx); err != nil {
			t.Fatal(err)
		}
		l := mustAcquire(t, mustNew(t, env.Client, &lease.Options{KeyPrefix: prefix, Identity: "ops/1"}), name, 10*time.Second)
		v, err := env.Client.Get(ctx, lock).Result()
		if h := parseHolder(v); err != nil || h.token != l.Token() || h.identity != "ops/1" {
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
			if h := parseHolder(m.Payload); h.token != l.Token() {
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
		valid := leasearg.Name(name) == nil && !strings.ContainsAny(prefix, "{}")
		if ok && leasearg.Name(got) != nil {
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
