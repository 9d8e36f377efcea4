package redislease

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/leasearg"
	"github.com/fencekit/fencekit/internal/valid"
	"github.com/fencekit/fencekit/lease"
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

// New returns a lease client that stores leases in Redis through client: a
// *redis.Client (also a failover/Sentinel client), a *redis.ClusterClient
// or a *redis.Ring. opts may be nil for the defaults; its KeyPrefix starts
// every key (see the package doc). New sends nothing to Redis.
//
// Errors: an error wrapping [lease.ErrInvalid] for a nil client (a nil
// *redis.Client, *redis.ClusterClient or *redis.Ring included) or an
// invalid option.
func New(client redis.UniversalClient, opts *lease.Options) (*lease.Client, error) {
	if isNil(client) {
		return nil, valid.Invalid("redislease: New: nil Redis client")
	}
	return lease.NewClient(newBackend(client, opts), opts)
}

func newBackend(client redis.UniversalClient, opts *lease.Options) *backend {
	b := &backend{rdb: client, prefix: prefixOf(opts)}
	b.calls.rdb, b.calls.off = client, opts != nil && opts.NoBatch
	return b
}

// prefixOf is opts' KeyPrefix or the default (lease.NewClient validates it).
func prefixOf(opts *lease.Options) string {
	if opts != nil && opts.KeyPrefix != "" {
		return opts.KeyPrefix
	}
	return leasearg.DefaultKeyPrefix
}

// isNil reports whether c is nil or one of go-redis's clients as a nil
// pointer, which would panic on first use.
func isNil(c redis.Scripter) bool {
	switch c := c.(type) {
	case nil:
		return true
	case *redis.Client:
		return c == nil
	case *redis.ClusterClient:
		return c == nil
	case *redis.Ring:
		return c == nil
	case *redis.Conn:
		return c == nil
	}
	return false
}

// The clients New accepts.
var (
	_ redis.UniversalClient = (*redis.Client)(nil)
	_ redis.UniversalClient = (*redis.ClusterClient)(nil)
	_ redis.UniversalClient = (*redis.Ring)(nil)
	_ lease.Backend         = (*backend)(nil)
)

// backend is the Backend of [New]: four Lua scripts, one round trip
// each, and a pub/sub channel per name for AcquireWait. Acquires, renewals
// and releases go through calls, which sends those that overlap together.
type backend struct {
	rdb    redis.UniversalClient
	prefix string
	calls  batcher

	// The names this backend's AcquireWait calls are watching: their
	// refused attempts ask the holder's release to publish (acquire.lua).
	nwatch   atomic.Int64 // len(watching) > 0, read without the lock
	mu       sync.Mutex
	watching map[string]int // name -> Watches open
}

// redisGrant is a Redis grant: its Grant, whose Value points back to it,
// and its keys, in one allocation.
type redisGrant struct {
	lease.Grant
	keys
	value string // "<token>:<identity>:<owner>", the lock key's value
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

// Name is "redis".
func (b *backend) Name() string { return "redis" }

// Close has nothing to end: every goroutine the backend starts ends before
// the call that started it returns, or with the Watch that started it.
func (b *backend) Close(context.Context) error { return nil }

// Acquire runs acquire.lua. When go-redis resends the request after losing
// a reply (it retries timeouts and EOFs), the resent copy recognises the
// first copy's grant as its own (same owner id) and returns it: that grant
// happened after the request was sent, so the Client's deadline holds.
func (b *backend) Acquire(ctx context.Context, name string, ttl time.Duration, identity string) (*lease.Grant, error) {
	owner, err := newOwner(identity)
	if err != nil {
		return nil, err
	}
	id := owner[len(identity)+1:]
	rg := &redisGrant{}
	makeKeys(&rg.keys, b.prefix, name)
	r := &request{script: acquireScript, keys: rg.both[:]}
	r.args = append(r.argv[:0], ttl.Milliseconds(), owner)
	if b.nwatch.Load() > 0 && b.watched(name) {
		r.args = append(r.args, "w")
	}
	if err := b.calls.do(ctx, r); err != nil {
		return nil, err
	}
	res, err := r.cmd.Result()
	if err != nil {
		return nil, err
	}
	tok, held, remaining, holder, err := parseAcquire(res)
	if err != nil {
		return nil, err
	}
	if held {
		h := parseHolder(holder)
		if h.owner != id || h.token == 0 {
			return nil, &lease.NotAcquiredError{Name: name, Remaining: remaining, Holder: h.token, Identity: h.identity}
		}
		tok = h.token // the holder is this call, resent
	}
	rg.value = lockValue(tok, owner)
	rg.Grant = lease.Grant{Name: name, Token: tok, TTL: ttl, Value: rg}
	return &rg.Grant, nil
}

// holder is a lock key's value, parsed.
type holder struct {
	token    fence.Token // 0 for a value fencekit did not write
	identity string      // the holder's Options.Identity
	owner    string      // the grant's random id
}

// parseHolder splits a lock key's value "<token>:<identity>:<owner>", or
// "<token>:<identity>:<owner>+" once a waiter was refused (acquire.lua);
// the owner is hex, so the last ':' ends the identity. A value of fencekit
// before identities, "<token>:<owner>", has identity "".
func parseHolder(v string) holder {
	htok, rest, ok := strings.Cut(v, ":")
	tok, err := valid.ParseToken(htok)
	if !ok || err != nil {
		return holder{}
	}
	h := holder{token: tok, owner: strings.TrimSuffix(rest, "+")}
	if i := strings.LastIndexByte(h.owner, ':'); i >= 0 {
		h.identity, h.owner = h.owner[:i], h.owner[i+1:]
	}
	return h
}

// parseAcquire decodes acquire.lua's reply: the token (a decimal string)
// when granted, {pttl, holder} when held (holder is the key's value, which
// may be anything, "" included, when someone else wrote it).
func parseAcquire(res any) (tok fence.Token, held bool, remaining time.Duration, holder string, err error) {
	switch v := res.(type) {
	case string:
		tok, err = valid.ParseToken(v)
		if err != nil {
			return 0, false, 0, "", fmt.Errorf("token from Redis: %v", err) // not the caller's ErrInvalid
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

// Renew runs renew.lua for each grant, all in one round trip (see
// batcher.send).
func (b *backend) Renew(ctx context.Context, batch []*lease.Grant) []error {
	errs := make([]error, len(batch))
	reqs := make([]*request, len(batch))
	for i, g := range batch {
		rg := g.Value.(*redisGrant)
		r := &request{script: renewScript, keys: rg.both[:1]}
		r.args = append(r.argv[:0], rg.value, g.TTL.Milliseconds())
		reqs[i] = r
	}
	if err := b.calls.do(ctx, reqs...); err != nil {
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	for i, r := range reqs {
		res, err := r.cmd.Int64()
		errs[i] = renewResult(res, err)
	}
	return errs
}

func isNoScript(err error) bool {
	return err != nil && (errors.Is(err, redis.ErrNoScript) || redis.HasErrorPrefix(err, "NOSCRIPT"))
}

// renewResult turns renew.lua's or release.lua's reply into the Backend's
// error: nil (1), a *LostError (0: missing, -1: someone else's) or err.
func renewResult(res int64, err error) error {
	switch {
	case err != nil:
		return err
	case res == 1:
		return nil
	case res == 0:
		return &lease.LostError{Cause: lease.CauseMissing}
	default:
		return &lease.LostError{Cause: lease.CauseStolen}
	}
}

// Release runs release.lua: compare, delete and publish, one round trip.
func (b *backend) Release(ctx context.Context, g *lease.Grant) error {
	rg := g.Value.(*redisGrant)
	r := &request{script: releaseScript, keys: rg.both[:1]}
	r.args = append(r.argv[:0], rg.value)
	if err := b.calls.do(ctx, r); err != nil {
		return err
	}
	return renewResult(r.cmd.Int64())
}

// Inspect runs inspect.lua: PTTL and GET of the lock key, GET of the
// counter, atomically, one round trip.
func (b *backend) Inspect(ctx context.Context, name string) (lease.Info, error) {
	var k keys
	makeKeys(&k, b.prefix, name)
	res, err := inspectScript.Run(ctx, b.rdb, k.both[:]).Slice()
	if err != nil {
		return lease.Info{}, err
	}
	if len(res) != 3 {
		return lease.Info{}, fmt.Errorf("unexpected inspect reply %v", res)
	}
	pttl, ok1 := res[0].(int64)
	holder, ok2 := res[1].(string)
	last, ok3 := res[2].(string)
	if !ok1 || !ok2 || !ok3 {
		return lease.Info{}, fmt.Errorf("unexpected inspect reply %v", res)
	}
	var info lease.Info
	if pttl != -2 {
		h := parseHolder(holder)
		info.Held, info.Holder, info.Identity = true, h.token, h.identity
		info.Remaining = time.Duration(pttl) * time.Millisecond
	}
	if last != "" {
		if info.Last, err = valid.ParseToken(last); err != nil {
			return lease.Info{}, fmt.Errorf("token counter %s holds %q, not a token", k.token, last)
		}
	}
	return info, nil
}

// Watch subscribes to the name's release channel and waits for Redis to
// confirm, so that a release published after AcquireWait's next attempt
// cannot be missed. Until it is closed, this backend's refused attempts on
// name ask the holder's release to publish (a release publishes nothing when
// nobody waits).
func (b *backend) Watch(ctx context.Context, name string) (lease.Watch, error) {
	var k keys
	makeKeys(&k, b.prefix, name)
	ps := b.rdb.Subscribe(ctx, k.channel)
	if _, err := ps.Receive(ctx); err != nil {
		ps.Close()
		return nil, err
	}
	b.watch(name, 1)
	return &redisWatch{ps: ps, ch: ps.Channel(), b: b, name: name}, nil
}

// watch counts the open Watches of name (delta +1 or -1).
func (b *backend) watch(name string, delta int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.watching == nil {
		b.watching = map[string]int{}
	}
	if n := b.watching[name] + delta; n > 0 {
		b.watching[name] = n
	} else {
		delete(b.watching, name)
	}
	b.nwatch.Store(int64(len(b.watching)))
}

func (b *backend) watched(name string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.watching[name] > 0
}

type redisWatch struct {
	ps   *redis.PubSub
	ch   <-chan *redis.Message
	b    *backend
	name string
	once sync.Once
}

func (w *redisWatch) Wait(ctx context.Context) error {
	select {
	case <-w.ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (w *redisWatch) Close() error {
	w.once.Do(func() { w.b.watch(w.name, -1) })
	return w.ps.Close()
}

// newOwner returns "<identity>:<id>", id a random hex id that tells apart
// two grants even if Redis ever issued one token twice, and that a resent
// acquire recognises as its own. It is drawn per grant from crypto/rand, not
// made of a per-process random prefix and a counter: those would repeat in a
// process cloned from a VM or CRIU snapshot, while the kernel's random
// generator is reseeded when a VM is cloned.
func newOwner(identity string) (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("redislease: random owner id: %w", err)
	}
	var h [2 * len(b)]byte
	hex.Encode(h[:], b[:])
	var sb strings.Builder // one allocation
	sb.Grow(len(identity) + 1 + len(h))
	sb.WriteString(identity)
	sb.WriteByte(':')
	sb.Write(h[:])
	return sb.String(), nil
}

// lockValue returns the lock key's value "<token>:<identity>:<owner>", as
// acquire.lua writes it (owner is "<identity>:<owner>").
func lockValue(tok fence.Token, owner string) string {
	var b [64]byte
	v := strconv.AppendUint(b[:0], uint64(tok), 10)
	v = append(v, ':')
	return string(append(v, owner...))
}
