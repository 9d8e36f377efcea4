package lease

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fencekit/fencekit/fence"
)

var (
	//go:embed acquire.lua
	acquireSrc string
	//go:embed renew.lua
	renewSrc string
	//go:embed release.lua
	releaseSrc string
	//go:embed inspect.lua
	inspectSrc string

	acquireScript = redis.NewScript(acquireSrc)
	renewScript   = redis.NewScript(renewSrc)
	releaseScript = redis.NewScript(releaseSrc)
	inspectScript = redis.NewScript(inspectSrc)
)

// RedisClient is what [New] needs from a go-redis client: the scripts,
// pipelines (renewals that fall due together) and pub/sub (AcquireWait).
// *redis.Client (also from redis.NewFailoverClient), *redis.ClusterClient,
// *redis.Ring and every redis.UniversalClient satisfy it.
type RedisClient interface {
	redis.Scripter
	Pipeline() redis.Pipeliner
	Subscribe(ctx context.Context, channels ...string) *redis.PubSub
}

// The clients New accepts.
var (
	_ RedisClient = (*redis.Client)(nil)
	_ RedisClient = (*redis.ClusterClient)(nil)
	_ RedisClient = (*redis.Ring)(nil)
	_ RedisClient = (redis.UniversalClient)(nil)
	_ Backend     = (*redisBackend)(nil)
)

// redisBackend is the Backend of [New]: four Lua scripts, one round trip
// each, and a pub/sub channel per name for AcquireWait.
type redisBackend struct {
	rdb     RedisClient    // pipelines and pub/sub; nil in tests that fake the scripts
	scripts redis.Scripter // rdb, or a test's wrapper
	prefix  string
}

// redisGrant is a Redis grant's Grant.Value.
type redisGrant struct {
	keys
	value string // "<token>:<owner>", the lock key's value
}

// keys of one lease; all share the hash tag {name}. The three names are
// slices of one string, and the scripts' KEYS lists are views of one array,
// so that building them costs two allocations.
type keys struct {
	lock, token, channel string
	both                 [2]string // {lock, token}: acquire.lua's KEYS; both[:1] the others'
}

func makeKeys(k *keys, prefix, name string) {
	const lock, token, channel = "lock", "token", "released"
	p := len(prefix) + len(name) + 4 // <prefix>:{<name>}:
	var sb strings.Builder
	sb.Grow(3*p + len(lock) + len(token) + len(channel))
	for _, suffix := range [...]string{lock, token, channel} {
		sb.WriteString(prefix)
		sb.WriteString(":{")
		sb.WriteString(name)
		sb.WriteString("}:")
		sb.WriteString(suffix)
	}
	s := sb.String()
	t := p + len(lock)
	ch := t + p + len(token)
	k.lock, k.token, k.channel = s[:t], s[t:ch], s[ch:]
	k.both = [2]string{k.lock, k.token}
}

// Acquire runs acquire.lua. When go-redis resends the request after losing
// a reply (it retries timeouts and EOFs), the resent copy recognises the
// first copy's grant as its own (same owner id) and returns it: that grant
// happened after the request was sent, so the Client's deadline holds.
func (b *redisBackend) Acquire(ctx context.Context, name string, ttl time.Duration) (*Grant, error) {
	owner, err := newOwner()
	if err != nil {
		return nil, err
	}
	rg := &redisGrant{}
	makeKeys(&rg.keys, b.prefix, name)
	res, err := acquireScript.Run(ctx, b.scripts, rg.both[:], ttl.Milliseconds(), owner).Result()
	if err != nil {
		return nil, err
	}
	tok, held, remaining, holder, err := parseAcquire(res)
	if err != nil {
		return nil, err
	}
	if held {
		htoken, hOwner := parseHolder(holder)
		if hOwner != owner || htoken == 0 {
			return nil, &NotAcquiredError{Name: name, Remaining: remaining, Holder: htoken}
		}
		tok = htoken // the holder is this call, resent
	}
	rg.value = lockValue(tok, owner)
	return &Grant{Name: name, Token: tok, TTL: ttl, Value: rg}, nil
}

// parseHolder splits a lock key's value "<token>:<owner>"; the token is 0
// for a value fencekit did not write.
func parseHolder(v string) (fence.Token, string) {
	htok, owner, ok := strings.Cut(v, ":")
	tok, err := fence.ParseToken(htok)
	if !ok || err != nil {
		return 0, owner
	}
	return tok, owner
}

// parseAcquire decodes acquire.lua's reply: the token (a decimal string)
// when granted, {pttl, holder} when held (holder is the key's value, which
// may be anything, "" included, when someone else wrote it).
func parseAcquire(res any) (tok fence.Token, held bool, remaining time.Duration, holder string, err error) {
	switch v := res.(type) {
	case string:
		tok, err = fence.ParseToken(v)
		if err == nil {
			err = tok.Validate()
		}
		if err != nil {
			return 0, false, 0, "", fmt.Errorf("token from Redis: %w", err)
		}
		return tok, false, 0, "", nil
	case []any:
		if len(v) == 2 {
			pttl, ok1 := v[0].(int64)
			holder, ok2 := v[1].(string)
			if ok1 && ok2 {
				return 0, true, time.Duration(pttl) * time.Millisecond, holder, nil
			}
		}
	}
	return 0, false, 0, "", fmt.Errorf("unexpected acquire reply %v", res)
}

// Renew runs renew.lua for each grant: a single grant as a plain call, a
// batch as one pipeline (go-redis sends a Cluster client's pipeline as one
// per node, concurrently). Grants whose script Redis no longer has cached
// (SCRIPT FLUSH, a restart, a failover) are sent again with EVAL, which
// caches it.
func (b *redisBackend) Renew(ctx context.Context, batch []*Grant, errs []error) {
	if len(batch) == 1 || b.rdb == nil {
		for i, g := range batch {
			rg := g.Value.(*redisGrant)
			res, err := renewScript.Run(ctx, b.scripts, rg.both[:1], rg.value, g.TTL.Milliseconds()).Int64()
			errs[i] = renewResult(g, res, err)
		}
		return
	}
	cmds := make([]*redis.Cmd, len(batch))
	b.pipeline(ctx, batch, cmds, (*redis.Script).EvalSha)
	var missed []*Grant // NOSCRIPT
	for i, cmd := range cmds {
		if isNoScript(cmd.Err()) {
			missed = append(missed, batch[i])
		}
	}
	if missed != nil {
		again := make([]*redis.Cmd, len(missed))
		b.pipeline(ctx, missed, again, (*redis.Script).Eval)
		j := 0
		for i, cmd := range cmds {
			if isNoScript(cmd.Err()) {
				cmds[i] = again[j]
				j++
			}
		}
	}
	for i, cmd := range cmds {
		res, err := cmd.Int64()
		errs[i] = renewResult(batch[i], res, err)
	}
}

// pipeline queues run(renew.lua) for each grant and sends them, filling
// cmds. Exec's own error is the first failed command's, read from cmds.
func (b *redisBackend) pipeline(ctx context.Context, batch []*Grant, cmds []*redis.Cmd,
	run func(*redis.Script, context.Context, redis.Scripter, []string, ...any) *redis.Cmd) {
	pipe := b.rdb.Pipeline()
	for i, g := range batch {
		rg := g.Value.(*redisGrant)
		cmds[i] = run(renewScript, ctx, pipe, rg.both[:1], rg.value, g.TTL.Milliseconds())
	}
	_, _ = pipe.Exec(ctx)
}

func isNoScript(err error) bool {
	return err != nil && (errors.Is(err, redis.ErrNoScript) || redis.HasErrorPrefix(err, "NOSCRIPT"))
}

// renewResult turns renew.lua's or release.lua's reply into the Backend's
// error: nil (1), a *LostError (0: missing, -1: someone else's) or err.
func renewResult(g *Grant, res int64, err error) error {
	switch {
	case err != nil:
		return err
	case res == 1:
		return nil
	case res == 0:
		return &LostError{Name: g.Name, Token: g.Token, Cause: CauseMissing}
	default:
		return &LostError{Name: g.Name, Token: g.Token, Cause: CauseStolen}
	}
}

// Release runs release.lua: compare, delete and publish, one round trip.
func (b *redisBackend) Release(ctx context.Context, g *Grant) error {
	rg := g.Value.(*redisGrant)
	res, err := releaseScript.Run(ctx, b.scripts, rg.both[:1], rg.value, rg.channel).Int64()
	return renewResult(g, res, err)
}

// Inspect runs inspect.lua: PTTL and GET of the lock key, GET of the
// counter, atomically, one round trip.
func (b *redisBackend) Inspect(ctx context.Context, name string) (Info, error) {
	var k keys
	makeKeys(&k, b.prefix, name)
	res, err := inspectScript.Run(ctx, b.scripts, k.both[:]).Slice()
	if err != nil {
		return Info{}, err
	}
	if len(res) != 3 {
		return Info{}, fmt.Errorf("unexpected inspect reply %v", res)
	}
	pttl, ok1 := res[0].(int64)
	holder, ok2 := res[1].(string)
	last, ok3 := res[2].(string)
	if !ok1 || !ok2 || !ok3 {
		return Info{}, fmt.Errorf("unexpected inspect reply %v", res)
	}
	var info Info
	if pttl != -2 {
		info.Held = true
		info.Holder, _ = parseHolder(holder)
		info.Remaining = time.Duration(pttl) * time.Millisecond
	}
	if last != "" {
		if info.Last, err = fence.ParseToken(last); err != nil {
			return Info{}, fmt.Errorf("token counter %s holds %q, not a token", k.token, last)
		}
	}
	return info, nil
}

// Watch subscribes to the name's release channel and waits for Redis to
// confirm, so that a release published after AcquireWait's next attempt
// cannot be missed.
func (b *redisBackend) Watch(ctx context.Context, name string) (Watch, error) {
	if b.rdb == nil {
		return noWatch{}, nil
	}
	var k keys
	makeKeys(&k, b.prefix, name)
	ps := b.rdb.Subscribe(ctx, k.channel)
	if _, err := ps.Receive(ctx); err != nil {
		ps.Close()
		return nil, err
	}
	return redisWatch{ps: ps, ch: ps.Channel()}, nil
}

type redisWatch struct {
	ps *redis.PubSub
	ch <-chan *redis.Message
}

func (w redisWatch) Wait(ctx context.Context) error {
	select {
	case <-w.ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (w redisWatch) Close() error { return w.ps.Close() }

// noWatch never sees a release: AcquireWait retries at the holder's TTL.
type noWatch struct{}

func (noWatch) Wait(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
func (noWatch) Close() error                   { return nil }

// newOwner returns a random id that tells apart two grants even if Redis
// ever issued one token twice.
func newOwner() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("lease: random owner id: %w", err)
	}
	var h [2 * len(b)]byte
	hex.Encode(h[:], b[:])
	return string(h[:]), nil
}

// lockValue returns the lock key's value "<token>:<owner>", as acquire.lua
// writes it.
func lockValue(tok fence.Token, owner string) string {
	var b [64]byte
	v := strconv.AppendUint(b[:0], uint64(tok), 10)
	v = append(v, ':')
	return string(append(v, owner...))
}
