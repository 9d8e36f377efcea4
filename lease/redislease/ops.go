package redislease

import (
	"context"
	_ "embed"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/valid"
	"github.com/fencekit/fencekit/lease"
)

// What operators' tools (cmd/fencectl) need beyond a *lease.Client: the
// key layout, a listing, a forced release and a counter bump.

var (
	//go:embed forcerelease.lua
	forceReleaseSrc    string
	forceReleaseScript = redis.NewScript(forceReleaseSrc)
	//go:embed bump.lua
	bumpSrc    string
	bumpScript = redis.NewScript(bumpSrc)
)

// Keys returns the keys of the lease name under prefix (lease.Options.KeyPrefix,
// "" for the default): the lock key, the token counter and the release
// channel. It checks neither; the functions below do.
func Keys(prefix, name string) (lock, counter, channel string) {
	if prefix == "" {
		prefix = lease.DefaultKeyPrefix
	}
	var k keys
	makeKeys(&k, prefix, name)
	return k.lock, k.token, k.channel
}

// Holder parses a lock key's value, or a release message: the holder's
// token (0 for a value fencekit did not write) and identity.
func Holder(value string) (fence.Token, string) {
	h := parseHolder(value)
	return h.token, h.identity
}

// Names returns, sorted, the names under prefix that match the glob
// pattern and have a lock key or a token counter, with SCAN: on every
// master of a *redis.ClusterClient. Each SCAN page is bounded by timeout.
// A nil client, a bad prefix (lease.KeyPrefix; "" is the default), a
// pattern that can match no name (lease.CheckPattern) or a timeout not
// above 0 is an error matching lease.ErrInvalid, and nothing is sent.
func Names(ctx context.Context, rdb redis.UniversalClient, prefix, pattern string, timeout time.Duration) ([]string, error) {
	prefix, err := checkArgs("Names", rdb, prefix)
	if err != nil {
		return nil, err
	}
	if err := lease.CheckPattern(pattern); err != nil {
		return nil, fmt.Errorf("redislease: Names: %w", err)
	}
	if timeout <= 0 {
		return nil, valid.Invalid("redislease: Names: timeout %v is not above 0", timeout)
	}
	match := globEscape(prefix) + ":{" + pattern + "}:*"
	var (
		mu  sync.Mutex
		set = map[string]bool{}
	)
	scan := func(ctx context.Context, c redis.Cmdable) error {
		var cursor uint64
		for {
			pctx, cancel := context.WithTimeout(ctx, timeout)
			keys, next, err := c.Scan(pctx, cursor, match, 1000).Result()
			cancel()
			if err != nil {
				return err
			}
			for _, key := range keys {
				if name, ok := nameOf(prefix, key); ok {
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
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error { return scan(ctx, node) })
	} else {
		err = scan(ctx, rdb)
	}
	if err != nil {
		return nil, fmt.Errorf("redislease: Names: SCAN %s: %w", match, err)
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
	if suffix != "lock" && suffix != "token" || lease.ValidateName(name) != nil {
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

// checkArgs checks the client, prefix and names an operator function fn
// was passed, and returns the prefix to use.
func checkArgs(fn string, rdb redis.Scripter, prefix string, names ...string) (string, error) {
	if isNil(rdb) {
		return "", valid.Invalid("redislease: %s: nil Redis client", fn)
	}
	prefix, err := lease.OperatorArgs(prefix, names...)
	if err != nil {
		return "", fmt.Errorf("redislease: %s: %w", fn, err)
	}
	return prefix, nil
}

// ForceReleased is what [ForceRelease] found and did.
type ForceReleased struct {
	Released  bool          // the lock key was deleted
	Held      bool          // the lock key existed
	Value     string        // its value ("" when absent or not a string)
	Remaining time.Duration // its TTL before the delete (negative: no expiry)
}

// ForceRelease ends the lease name whoever holds it, or only if its holder
// has token only (when not 0): it deletes the lock key and publishes the
// release to the waiters, one script, one round trip. The holder sees the
// lease gone at its next renewal. A nil client, a bad prefix
// (lease.KeyPrefix; "" is the default) or a bad name (lease.ValidateName)
// is an error matching lease.ErrInvalid, and nothing is sent.
func ForceRelease(ctx context.Context, rdb redis.Scripter, prefix, name string, only fence.Token) (ForceReleased, error) {
	prefix, err := checkArgs("ForceRelease", rdb, prefix, name)
	if err != nil {
		return ForceReleased{}, err
	}
	lock, _, channel := Keys(prefix, name)
	want := ""
	if only != 0 {
		want = only.String()
	}
	res, err := forceReleaseScript.Run(ctx, rdb, []string{lock}, channel, want).Slice()
	if err != nil {
		return ForceReleased{}, err
	}
	if len(res) == 3 {
		code, ok1 := res[0].(int64)
		value, ok2 := res[1].(string)
		pttl, ok3 := res[2].(int64)
		if ok1 && ok2 && ok3 {
			return ForceReleased{Released: code == 1, Held: code != 0, Value: value, Remaining: time.Duration(pttl) * time.Millisecond}, nil
		}
	}
	return ForceReleased{}, fmt.Errorf("unexpected reply %v", res)
}

// MaxBump is the largest counter [Bump] sets: acquire.lua issues counter+1
// and refuses a counter at or above 2^53-1 (Lua's doubles are exact up to
// 2^53).
const MaxBump = 1<<53 - 2

// Bump raises the token counter of name to target (1 to [MaxBump]), never
// lowering it, one round trip: after Redis lost data, or to move past
// another issuer's tokens. It returns the counter before (0 when absent)
// and whether it changed. A nil client, a bad prefix (lease.KeyPrefix; ""
// is the default), name or target is an error matching lease.ErrInvalid,
// and nothing is sent. A target more than [lease.MaxAhead] above the
// server's clock is refused (lease.CheckAhead), changing nothing: the
// counter would not be recovered if Redis lost it.
func Bump(ctx context.Context, rdb redis.Scripter, prefix, name string, target fence.Token) (before fence.Token, changed bool, err error) {
	if prefix, err = checkArgs("Bump", rdb, prefix, name); err != nil {
		return 0, false, err
	}
	if target == 0 || target > MaxBump {
		return 0, false, valid.Invalid("redislease: Bump: target %d is out of range: 1 to %d", target, uint64(MaxBump))
	}
	_, counter, _ := Keys(prefix, name)
	res, err := bumpScript.Run(ctx, rdb, []string{counter}, target.String(), lease.MaxAhead.Microseconds()).Slice()
	if err != nil {
		return 0, false, err
	}
	if len(res) == 3 {
		code, ok1 := res[0].(int64)
		b, ok2 := res[1].(string)
		now, ok3 := res[2].(int64)
		if ok1 && ok2 && ok3 {
			if b != "" {
				v, err := strconv.ParseUint(b, 10, 64)
				if err != nil {
					return 0, false, fmt.Errorf("token counter %s holds %q, not a token", counter, b)
				}
				before = fence.Token(v)
			}
			if code == -1 {
				return before, false, fmt.Errorf("redislease: Bump %q: %w", name, lease.CheckAhead(target, time.UnixMicro(now)))
			}
			return before, code == 1, nil
		}
	}
	return 0, false, fmt.Errorf("unexpected reply %v", res)
}
