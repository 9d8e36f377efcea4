package redislease

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

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

// TestNewRefusesBadInput: New given a nil client (untyped or a typed nil
// pointer) returns one clear ErrInvalid, does not panic and sends nothing.
// (The operator calls' bad input: leasetest's BadInputSendsNothing.)
func TestNewRefusesBadInput(t *testing.T) {
	env := testenv.Redis(t)
	hook := &countHook{}
	rdb := redis.NewClient(&redis.Options{Addr: env.Client.Options().Addr})
	t.Cleanup(func() { rdb.Close() })
	rdb.AddHook(hook)
	nils := map[string]redis.UniversalClient{
		"nil":                      nil,
		"nil *redis.Client":        (*redis.Client)(nil),
		"nil *redis.ClusterClient": (*redis.ClusterClient)(nil),
		"nil *redis.Ring":          (*redis.Ring)(nil),
	}
	cases := map[string]error{}
	for what, c := range nils {
		cases["New "+what] = func() error { _, err := New(c, nil); return err }()
	}
	leasetest.CheckInvalid(t, "redislease", cases)
	if n := hook.n.Load(); n != 0 {
		t.Errorf("%d commands sent for bad input, want none", n)
	}
}

// TestEmptyPrefixIsTheDefault: Options.KeyPrefix "" names the default
// prefix in Bump, never keys starting with ":".
func TestEmptyPrefixIsTheDefault(t *testing.T) {
	env := testenv.Redis(t)
	ctx := context.Background()
	name := env.Name("empty-prefix")
	counter := keysOf(name).token
	if _, _, err := mustNew(t, env.Client, &lease.Options{KeyPrefix: ""}).Bump(ctx, name, 7); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.Client.Del(ctx, counter) })
	if v, err := env.Client.Get(ctx, counter).Result(); err != nil || v != "7" {
		t.Errorf("counter %s after Bump with prefix \"\" = %q, %v; want 7", counter, v, err)
	}
}
