package bench

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"
)

// ErrHeld is returned by [Locker.TryAcquire] when someone else holds the
// lock.
var ErrHeld = errors.New("bench: held by someone else")

// Locker puts one lock library behind the few calls the benchmarks make.
type Locker interface {
	// Name is the library's short name, used in benchmark names.
	Name() string
	// TryAcquire makes one attempt, returning ErrHeld when the lock is
	// someone else's.
	TryAcquire(ctx context.Context, key string, ttl time.Duration) (Held, error)
	// AcquireWait blocks, with the library's default retry settings, until
	// the lock is held or ctx ends.
	AcquireWait(ctx context.Context, key string, ttl time.Duration) (Held, error)
	// AutoRenews says whether a held lock renews itself (fencekit's
	// heartbeat); otherwise the holder calls Renew.
	AutoRenews() bool
}

// Held is a lock a Locker granted.
type Held interface {
	// Renew extends the lock to ttl from now: one explicit renewal.
	Renew(ctx context.Context, ttl time.Duration) error
	// Release gives the lock up.
	Release(ctx context.Context) error
}

// ---------------------------------------------------------------------------
// baseline: what a careful user writes with go-redis alone.

var (
	baselineRelease = redis.NewScript(`-- KEYS[1] lock key; ARGV[1] owner value
if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) end
return 0`)
	baselineRenew = redis.NewScript(`-- KEYS[1] lock key; ARGV[1] owner value; ARGV[2] ttl in ms
if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("pexpire", KEYS[1], ARGV[2]) end
return 0`)
)

// BaselinePoll is the hand-written baseline's retry interval when it waits.
const BaselinePoll = 50 * time.Millisecond

// Baseline is the hand-written go-redis lock: SET NX PX with a random
// 16-byte owner value to acquire; Lua compare-and-delete to release; Lua
// compare-and-PEXPIRE to renew. Its blocking acquire polls every
// [BaselinePoll].
type Baseline struct{ C redis.UniversalClient }

func (Baseline) Name() string     { return "baseline" }
func (Baseline) AutoRenews() bool { return false }

// ownerValue returns a random 16-byte owner value, as the baseline writes
// to its lock key.
func ownerValue() (string, error) {
	var raw [16]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", fmt.Errorf("bench: owner value: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(raw[:]), nil
}

func (b Baseline) TryAcquire(ctx context.Context, key string, ttl time.Duration) (Held, error) {
	value, err := ownerValue()
	if err != nil {
		return nil, err
	}
	ok, err := b.C.SetNX(ctx, key, value, ttl).Result()
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, ErrHeld
	}
	return &baselineLock{c: b.C, key: key, value: value}, nil
}

func (b Baseline) AcquireWait(ctx context.Context, key string, ttl time.Duration) (Held, error) {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-t.C:
		}
		h, err := b.TryAcquire(ctx, key, ttl)
		if !errors.Is(err, ErrHeld) {
			return h, err
		}
		t.Reset(BaselinePoll)
	}
}

type baselineLock struct {
	c          redis.UniversalClient
	key, value string
}

func (l *baselineLock) Renew(ctx context.Context, ttl time.Duration) error {
	n, err := baselineRenew.Run(ctx, l.c, []string{l.key}, l.value, ttl.Milliseconds()).Int()
	if err == nil && n != 1 {
		err = ErrHeld
	}
	return err
}

func (l *baselineLock) Release(ctx context.Context) error {
	n, err := baselineRelease.Run(ctx, l.c, []string{l.key}, l.value).Int()
	if err == nil && n != 1 {
		err = ErrHeld
	}
	return err
}

// ---------------------------------------------------------------------------
// redsync: one node through its go-redis v9 pool.

// Redsync is github.com/go-redsync/redsync/v4 on one node. TryAcquire makes
// one try (WithTries(1)); AcquireWait uses its defaults (32 tries, a random
// 50-250 ms between them).
type Redsync struct{ RS *redsync.Redsync }

// NewRedsync returns the redsync adapter for c.
func NewRedsync(c redis.UniversalClient) Redsync {
	return Redsync{RS: redsync.New(goredis.NewPool(c))}
}

func (Redsync) Name() string     { return "redsync" }
func (Redsync) AutoRenews() bool { return false }

func (r Redsync) TryAcquire(ctx context.Context, key string, ttl time.Duration) (Held, error) {
	m := r.RS.NewMutex(key, redsync.WithExpiry(ttl), redsync.WithTries(1))
	return redsyncLock(ctx, m)
}

func (r Redsync) AcquireWait(ctx context.Context, key string, ttl time.Duration) (Held, error) {
	return redsyncLock(ctx, r.RS.NewMutex(key, redsync.WithExpiry(ttl)))
}

func redsyncLock(ctx context.Context, m *redsync.Mutex) (Held, error) {
	err := m.LockContext(ctx)
	var taken *redsync.ErrTaken
	if errors.Is(err, redsync.ErrFailed) || errors.As(err, &taken) {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, ErrHeld
	}
	if err != nil {
		return nil, err
	}
	return redsyncHeld{m}, nil
}

type redsyncHeld struct{ m *redsync.Mutex }

// Renew extends by the mutex's expiry (redsync fixes it at NewMutex).
func (h redsyncHeld) Renew(ctx context.Context, _ time.Duration) error {
	ok, err := h.m.ExtendContext(ctx)
	if err == nil && !ok {
		err = ErrHeld
	}
	return err
}

func (h redsyncHeld) Release(ctx context.Context) error {
	ok, err := h.m.UnlockContext(ctx)
	if err == nil && !ok {
		err = ErrHeld
	}
	return err
}

// ---------------------------------------------------------------------------
// redislock

// RedislockRetry is redislock's retry strategy in AcquireWait. Its default
// is not to retry at all, so there is no default blocking acquire; this is
// the interval of its first documented example ("Retry every 100ms").
const RedislockRetry = 100 * time.Millisecond

// Redislock is github.com/bsm/redislock. Its v0.9.4 has no fencing option:
// the token is a random string, so it cannot order writers.
type Redislock struct{ C *redislock.Client }

// NewRedislock returns the redislock adapter for c.
func NewRedislock(c redis.UniversalClient) Redislock { return Redislock{C: redislock.New(c)} }

func (Redislock) Name() string     { return "redislock" }
func (Redislock) AutoRenews() bool { return false }

func (r Redislock) TryAcquire(ctx context.Context, key string, ttl time.Duration) (Held, error) {
	return redislockObtain(ctx, r.C, key, ttl, nil)
}

// AcquireWait retries every [RedislockRetry] until ctx ends. ctx must have a
// deadline: without one redislock stops retrying after ttl.
func (r Redislock) AcquireWait(ctx context.Context, key string, ttl time.Duration) (Held, error) {
	return redislockObtain(ctx, r.C, key, ttl, &redislock.Options{RetryStrategy: redislock.LinearBackoff(RedislockRetry)})
}

func redislockObtain(ctx context.Context, c *redislock.Client, key string, ttl time.Duration, opt *redislock.Options) (Held, error) {
	l, err := c.Obtain(ctx, key, ttl, opt)
	if errors.Is(err, redislock.ErrNotObtained) {
		return nil, ErrHeld
	}
	if err != nil {
		return nil, err
	}
	return redislockHeld{l}, nil
}

type redislockHeld struct{ l *redislock.Lock }

func (h redislockHeld) Renew(ctx context.Context, ttl time.Duration) error {
	err := h.l.Refresh(ctx, ttl, nil)
	if errors.Is(err, redislock.ErrNotObtained) {
		return ErrHeld
	}
	return err
}

func (h redislockHeld) Release(ctx context.Context) error { return h.l.Release(ctx) }

// ---------------------------------------------------------------------------
// registry

// lockerOrder is the order of the libraries in every benchmark and table:
// the baseline first, as the reference of the ratios.
var lockerOrder = []string{"baseline", "fencekit", "redislock", "redsync"}

// newLockers builds each library's adapter from a client. fencekit's entry
// is added by its adapter's file.
var newLockers = map[string]func(redis.UniversalClient) Locker{
	"baseline":  func(c redis.UniversalClient) Locker { return Baseline{C: c} },
	"redislock": func(c redis.UniversalClient) Locker { return NewRedislock(c) },
	"redsync":   func(c redis.UniversalClient) Locker { return NewRedsync(c) },
}

// LockerNames returns the names of the libraries compared, baseline first.
func LockerNames() []string {
	var names []string
	for _, n := range lockerOrder {
		if newLockers[n] != nil {
			names = append(names, n)
		}
	}
	return names
}

// NewLocker returns the adapter of the library called name.
func NewLocker(name string, c redis.UniversalClient) (Locker, error) {
	f := newLockers[name]
	if f == nil {
		return nil, fmt.Errorf("bench: no lock library called %q (have %v)", name, LockerNames())
	}
	return f(c), nil
}
