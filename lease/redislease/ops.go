package redislease

import (
	"context"
	_ "embed"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/leasearg"
	"github.com/fencekit/fencekit/internal/valid"
	"github.com/fencekit/fencekit/lease"
)

// The operator calls of lease.Client (lease.Operator): a listing, a
// forced release and a counter bump.

var (
	//go:embed forcerelease.lua
	forceReleaseSrc    string
	forceReleaseScript = redis.NewScript(forceReleaseSrc)
	//go:embed bump.lua
	bumpSrc    string
	bumpScript = redis.NewScript(bumpSrc)
)

var _ lease.Operator = (*backend)(nil)

// Names lists the names that have a lock key or a token counter, with
// SCAN: on every master of a *redis.ClusterClient.
func (b *backend) Names(ctx context.Context, pattern string) ([]string, error) {
	match := globEscape(b.prefix) + ":{" + pattern + "}:*"
	var (
		mu  sync.Mutex
		set = map[string]bool{}
	)
	scan := func(ctx context.Context, c redis.Cmdable) error {
		var cursor uint64
		for {
			keys, next, err := c.Scan(ctx, cursor, match, 1000).Result()
			if err != nil {
				return err
			}
			for _, key := range keys {
				if name, ok := nameOf(b.prefix, key); ok {
					mu.Lock()
					set[name] = true
					mu.Unlock()
				}
			}
			if cursor = next; cursor == 0 {
				return nil
			}
		}
	}
	var err error
	if cc, ok := b.rdb.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error { return scan(ctx, node) })
	} else {
		err = scan(ctx, b.rdb)
	}
	if err != nil {
		return nil, fmt.Errorf("SCAN %s: %w", match, err)
	}
	names := make([]string, 0, len(set))
	for n := range set {
		names = append(names, n)
	}
	slices.Sort(names)
	return names, nil
}

// nameOf returns the lease name of a lock or counter key under prefix.
func nameOf(prefix, key string) (string, bool) {
	rest, ok := strings.CutPrefix(key, prefix+":{")
	if !ok {
		return "", false
	}
	i := strings.LastIndex(rest, "}:")
	if i < 0 {
		return "", false
	}
	name, suffix := rest[:i], rest[i+2:]
	if suffix != "lock" && suffix != "token" || leasearg.Name(name) != nil {
		return "", false
	}
	return name, true
}

// globEscape quotes Redis glob's special characters.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '*', '?', '[', ']', '\\':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// ForceRelease runs forcerelease.lua: it deletes the lock key and
// publishes the release to the waiters, one round trip. A lock key of
// another type, or not written by fencekit, is deleted too (Holder 0).
func (b *backend) ForceRelease(ctx context.Context, name string, only fence.Token) (lease.Info, error) {
	var k keys
	makeKeys(&k, b.prefix, name)
	want := ""
	if only != 0 {
		want = only.String()
	}
	res, err := forceReleaseScript.Run(ctx, b.rdb, []string{k.lock}, k.channel, want).Slice()
	if err != nil {
		return lease.Info{}, err
	}
	if len(res) == 3 {
		code, ok1 := res[0].(int64)
		value, ok2 := res[1].(string)
		pttl, ok3 := res[2].(int64)
		if ok1 && ok2 && ok3 {
			if code == 0 {
				return lease.Info{}, nil
			}
			h := parseHolder(value)
			return lease.Info{Held: true, Holder: h.token, Identity: h.identity, Remaining: time.Duration(pttl) * time.Millisecond}, nil
		}
	}
	return lease.Info{}, fmt.Errorf("unexpected reply %v", res)
}

// Bump runs bump.lua: it raises the token counter to to, never lowering
// it (to is at most leasearg.MaxBump), unless the lease is held (so that
// the holder's token stays what Inspect shows) or to is more than
// leasearg.MaxAhead above the server's clock; one round trip.
func (b *backend) Bump(ctx context.Context, name string, to fence.Token) (before, after fence.Token, err error) {
	var k keys
	makeKeys(&k, b.prefix, name)
	res, err := bumpScript.Run(ctx, b.rdb, []string{k.token, k.lock}, to.String(), leasearg.MaxAhead.Microseconds()).Slice()
	if err != nil {
		return 0, 0, err
	}
	if len(res) == 4 { // held
		if v, ok := res[3].(string); ok {
			h := parseHolder(v)
			return 0, 0, fmt.Errorf("held by token %v of %q; bump it when it is free", h.token, h.identity)
		}
	}
	if len(res) == 3 {
		code, ok1 := res[0].(int64)
		bs, ok2 := res[1].(string)
		now, ok3 := res[2].(int64)
		if ok1 && ok2 && ok3 {
			if bs != "" {
				if before, err = valid.ParseToken(bs); err != nil {
					return 0, 0, fmt.Errorf("token counter %s holds %q, not a token", k.token, bs)
				}
			}
			if code == -1 {
				return 0, 0, leasearg.CheckAhead(to, time.UnixMicro(now))
			}
			return before, max(before, to), nil
		}
	}
	return 0, 0, fmt.Errorf("unexpected reply %v", res)
}
