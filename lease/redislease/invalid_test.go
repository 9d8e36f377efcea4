package redislease

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/leasetest"
	"github.com/fencekit/fencekit/internal/testenv"
	"github.com/fencekit/fencekit/lease"
)

// countHook counts the commands a client sends.
type countHook struct{ n atomic.Int64 }

func (h *countHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *countHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { h.n.Add(1); return next(ctx, cmd) }
}
func (h *countHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { h.n.Add(int64(len(cmds))); return next(ctx, cmds) }
}

// TestOperatorFunctionsRefuseBadInput: every exported function given a nil
// client (untyped or a typed nil pointer), a bad prefix, name, target or
// timeout returns one clear ErrInvalid, does not panic and sends nothing.
func TestOperatorFunctionsRefuseBadInput(t *testing.T) {
	env := testenv.Redis(t)
	ctx := context.Background()
	hook := &countHook{}
	rdb := redis.NewClient(&redis.Options{Addr: env.Client.Options().Addr})
	t.Cleanup(func() { rdb.Close() })
	rdb.AddHook(hook)
	name := env.Name("ok")
	bump := func(c redis.Scripter, prefix, name string, to fence.Token) error {
		_, _, err := Bump(ctx, c, prefix, name, to)
		return err
	}
	forceRelease := func(c redis.Scripter, prefix, name string) error {
		_, err := ForceRelease(ctx, c, prefix, name, 0)
		return err
	}
	names := func(c redis.UniversalClient, prefix string, timeout time.Duration) error {
		_, err := Names(ctx, c, prefix, "*", timeout)
		return err
	}
	nils := map[string]redis.UniversalClient{
		"nil":                      nil,
		"nil *redis.Client":        (*redis.Client)(nil),
		"nil *redis.ClusterClient": (*redis.ClusterClient)(nil),
		"nil *redis.Ring":          (*redis.Ring)(nil),
	}
	cases := map[string]error{}
	for what, c := range nils {
		cases["Bump "+what] = bump(c, "", name, 5)
		cases["ForceRelease "+what] = forceRelease(c, "", name)
		cases["Names "+what] = names(c, "", time.Second)
		cases["New "+what] = func() error { _, err := New(c, nil); return err }()
	}
	cases["ForceRelease nil *redis.Conn"] = forceRelease((*redis.Conn)(nil), "", name)
	for _, prefix := range []string{"a b", "x{", "}", "a\x00", strings.Repeat("p", 65)} {
		cases["Bump prefix "+prefix] = bump(rdb, prefix, name, 5)
		cases["ForceRelease prefix "+prefix] = forceRelease(rdb, prefix, name)
		cases["Names prefix "+prefix] = names(rdb, prefix, time.Second)
	}
	for _, bad := range []string{"", "a b", "{x}", strings.Repeat("n", 513)} {
		cases["Bump name "+bad] = bump(rdb, "", bad, 5)
		cases["ForceRelease name "+bad] = forceRelease(rdb, "", bad)
	}
	cases["Bump target 0"] = bump(rdb, "", name, 0)
	cases["Bump target above MaxBump"] = bump(rdb, "", name, MaxBump+1)
	cases["Names timeout 0"] = names(rdb, "", 0)
	for _, p := range leasetest.BadPatterns {
		cases["Names pattern "+p] = func() error { _, err := Names(ctx, rdb, "", p, time.Second); return err }()
	}
	leasetest.CheckInvalid(t, "redislease", cases)
	if n := hook.n.Load(); n != 0 {
		t.Errorf("%d commands sent for bad input, want none", n)
	}
}

// TestEmptyPrefixIsTheDefault: "" names the default prefix in Keys and in
// Bump, as in Options.KeyPrefix, never keys starting with ":".
func TestEmptyPrefixIsTheDefault(t *testing.T) {
	env := testenv.Redis(t)
	ctx := context.Background()
	name := env.Name("empty-prefix")
	lock, counter, channel := Keys(lease.DefaultKeyPrefix, name)
	if l, c, ch := Keys("", name); l != lock || c != counter || ch != channel {
		t.Errorf("Keys(\"\", %q) = %s, %s, %s; want the default prefix's", name, l, c, ch)
	}
	if _, _, err := Bump(ctx, env.Client, "", name, 7); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.Client.Del(ctx, counter) })
	if v, err := env.Client.Get(ctx, counter).Result(); err != nil || v != "7" {
		t.Errorf("counter %s after Bump with prefix \"\" = %q, %v; want 7", counter, v, err)
	}
}
