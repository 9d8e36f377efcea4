package lease

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"
)

// Client grants leases from a [Backend] (Redis with [New]) and keeps them:
// it renews them, ends them at their local deadline, and signals their
// loss. It is safe for concurrent use.
type Client struct {
	b     Backend
	cfg   config
	m     *metrics
	wheel wheel // the heartbeat of every lease (heartbeat.go)
}

// New returns a client that stores leases in Redis through client: a
// *redis.Client (also a failover/Sentinel client), a *redis.ClusterClient,
// a *redis.Ring, or any [RedisClient]. opts may be nil for the defaults.
// New sends nothing to Redis.
//
// Errors: an error wrapping [ErrInvalid] for a nil client (typed nil
// included) or an invalid option.
func New(client RedisClient, opts *Options) (*Client, error) {
	if isNil(client) {
		return nil, fmt.Errorf("%w: nil Redis client passed to lease.New", ErrInvalid)
	}
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	return newClient(&redisBackend{rdb: client, scripts: client, prefix: cfg.prefix}, cfg), nil
}

// NewClient returns a client that stores leases in b; lease/etcdlease and
// lease/pglease make theirs with it. opts may be nil for the defaults (the
// backend reads KeyPrefix itself, if it uses one). NewClient sends nothing.
//
// Errors: an error wrapping [ErrInvalid] for a nil backend or an invalid
// option.
func NewClient(b Backend, opts *Options) (*Client, error) {
	if isNil(b) {
		return nil, fmt.Errorf("%w: nil Backend passed to lease.NewClient", ErrInvalid)
	}
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	return newClient(b, cfg), nil
}

func newClient(b Backend, cfg config) *Client {
	return &Client{b: b, cfg: cfg, m: newMetrics(cfg.meters, cfg.logger)}
}

// isNil reports whether v is nil or a nil pointer (or map, func...) in an
// interface, which would panic on first use.
func isNil(v any) bool {
	if v == nil {
		return true
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Func, reflect.Chan, reflect.Slice, reflect.Interface:
		return rv.IsNil()
	}
	return false
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
	if err := ValidateName(name); err != nil {
		return timing{}, err
	}
	return c.cfg.timingFor(ttl)
}

func (c *Client) acquire(ctx context.Context, name string, t timing) (*Lease, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("lease: acquire %q: nothing sent: %w", name, err)
	}
	sent := time.Now()
	g, err := c.b.Acquire(ctx, name, t.ttl)
	var na *NotAcquiredError
	refused := errors.As(err, &na)
	if refused {
		c.m.acquireLatency(ctx, time.Since(sent), nil)
		return nil, err
	}
	c.m.acquireLatency(ctx, time.Since(sent), err)
	if err == nil {
		err = checkGrant(g, name, t.ttl)
	}
	if err != nil {
		return nil, errScript("acquire", name, err)
	}
	c.m.acquired(ctx)
	return c.start(ctx, g, t, sent), nil
}

// checkGrant holds a backend to its contract on what it returns.
func checkGrant(g *Grant, name string, ttl time.Duration) error {
	switch {
	case g == nil:
		return errors.New("backend returned no grant and no error")
	case g.Name != name || g.TTL != ttl:
		return fmt.Errorf("backend granted %q for %v, asked %q for %v", g.Name, g.TTL, name, ttl)
	case g.Token == 0:
		return errors.New("backend granted token 0")
	}
	return g.Token.Validate()
}

// Inspect reads, in one round trip and changing nothing, who holds name and
// the last token issued for it. The answer may be out of date when it
// arrives; it is for operators and tests, not for deciding who may write.
//
// Errors: an error wrapping [ErrInvalid] for a bad name (nothing is sent);
// the context's or the store's error otherwise.
func (c *Client) Inspect(ctx context.Context, name string) (Info, error) {
	if c == nil {
		return Info{}, fmt.Errorf("%w: nil *lease.Client", ErrInvalid)
	}
	if err := ValidateName(name); err != nil {
		return Info{}, err
	}
	info, err := c.b.Inspect(ctx, name)
	if err != nil {
		return Info{}, errScript("inspect", name, err)
	}
	return info, nil
}
