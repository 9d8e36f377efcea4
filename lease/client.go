package lease

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
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

	acquireScript = redis.NewScript(acquireSrc)
	renewScript   = redis.NewScript(renewSrc)
	releaseScript = redis.NewScript(releaseSrc)
)

// The clients a Client accepts.
var (
	_ redis.UniversalClient = (*redis.Client)(nil)
	_ redis.UniversalClient = (*redis.ClusterClient)(nil)
	_ redis.UniversalClient = (*redis.Ring)(nil)
	_ redis.Scripter        = (redis.UniversalClient)(nil)
)

// Client grants leases stored in Redis. It is safe for concurrent use.
type Client struct {
	rdb     redis.UniversalClient // pub/sub for AcquireWait
	scripts redis.Scripter        // the three scripts; tests wrap it
	cfg     config
	err     error // from New: returned by every call
	m       *metrics
	wheel   wheel // the heartbeat of every lease (heartbeat.go)
}

// New returns a client that stores leases through client, which may be a
// *redis.Client, a *redis.ClusterClient or a failover (Sentinel) client.
// opts may be nil for the defaults. New sends nothing to Redis. A nil client
// or invalid options are reported, wrapping [ErrInvalid], by every call of
// the returned client.
func New(client redis.UniversalClient, opts *Options) *Client {
	if client == nil {
		return newClient(nil, nil, opts)
	}
	return newClient(client, client, opts)
}

// newClient lets tests run the scripts through another Scripter (a fake
// without network for synctest, or a fault-injecting wrapper).
func newClient(rdb redis.UniversalClient, scripts redis.Scripter, opts *Options) *Client {
	cfg, err := newConfig(opts)
	c := &Client{rdb: rdb, scripts: scripts, cfg: cfg, err: err}
	if scripts == nil && err == nil {
		c.err = fmt.Errorf("%w: nil Redis client passed to lease.New", ErrInvalid)
	}
	c.m = newMetrics(cfg.meters, cfg.logger)
	return c
}

// keys of one lease; all share the hash tag {name}. The three names are
// slices of one string, and the scripts' KEYS lists are views of one array,
// so that building them costs two allocations.
type keys struct {
	lock, token, channel string
	both                 [2]string // {lock, token}: acquire.lua's KEYS; both[:1] the others'
}

func (c *Client) keys(name string) *keys {
	const lock, token, channel = "lock", "token", "released"
	p := len(c.cfg.prefix) + len(name) + 4 // <prefix>:{<name>}:
	var b strings.Builder
	b.Grow(3*p + len(lock) + len(token) + len(channel))
	for _, suffix := range [...]string{lock, token, channel} {
		b.WriteString(c.cfg.prefix)
		b.WriteString(":{")
		b.WriteString(name)
		b.WriteString("}:")
		b.WriteString(suffix)
	}
	s := b.String()
	t := p + len(lock)
	ch := t + p + len(token)
	k := &keys{lock: s[:t], token: s[t:ch], channel: s[ch:]}
	k.both = [2]string{k.lock, k.token}
	return k
}

// Acquire tries once to take the lease name for ttl, in one round trip. On
// success the lease renews itself every RenewInterval (default ttl/3) until
// [Lease.Release] or until it is lost; its token is greater than the token
// of every earlier grant of name. When the reply arrives after the lease's
// local deadline (sent + ttl - drift margin) the returned lease has already
// ended: its Err is a [*LostError] with CauseExpired. When go-redis resends
// the request after losing a reply (it retries timeouts and EOFs), the
// resent copy recognises the first copy's grant as its own and returns it.
//
// Errors: a [*NotAcquiredError] (errors.Is ErrNotAcquired) carrying the
// holder's remaining TTL when someone else holds it; an error wrapping
// [ErrInvalid] for a bad name or ttl (nothing is sent); the context's or
// Redis's error otherwise. After a network or context error the grant may
// still have happened in Redis without its reply arriving: the key then
// expires ttl after the request, unrenewed.
func (c *Client) Acquire(ctx context.Context, name string, ttl time.Duration) (*Lease, error) {
	t, err := c.check(name, ttl)
	if err != nil {
		return nil, err
	}
	return c.acquire(ctx, name, t)
}

// check validates everything that needs no Redis.
func (c *Client) check(name string, ttl time.Duration) (timing, error) {
	if c == nil {
		return timing{}, fmt.Errorf("%w: nil *lease.Client", ErrInvalid)
	}
	if c.err != nil {
		return timing{}, c.err
	}
	if err := ValidateName(name); err != nil {
		return timing{}, err
	}
	return c.cfg.timingFor(ttl)
}

func (c *Client) acquire(ctx context.Context, name string, t timing) (*Lease, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("lease: acquire %q: nothing sent: %w", name, err)
	}
	owner, err := newOwner()
	if err != nil {
		return nil, err
	}
	k := c.keys(name)
	sent := time.Now()
	res, err := acquireScript.Run(ctx, c.scripts, k.both[:], t.ttl.Milliseconds(), owner).Result()
	c.m.acquireLatency(ctx, time.Since(sent), err)
	if err != nil {
		return nil, errScript("acquire", name, err)
	}
	tok, held, remaining, holder, err := parseAcquire(res)
	if err != nil {
		return nil, errScript("acquire", name, err)
	}
	if held {
		htok, hOwner, fk := strings.Cut(holder, ":") // "<token>:<owner>" when fencekit wrote it
		htoken, perr := fence.ParseToken(htok)
		if !fk || perr != nil {
			htoken = 0
		}
		if hOwner != owner || htoken == 0 {
			return nil, &NotAcquiredError{Name: name, Remaining: remaining, Holder: htoken}
		}
		// The holder is this call: go-redis resent the script after losing
		// the reply of a copy that was granted (it retries timeouts and
		// EOFs). That grant happened after sent, so the deadline holds.
		tok = htoken
	}
	c.m.acquired(ctx)
	return c.start(ctx, name, k, tok, lockValue(tok, owner), t, sent), nil
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
