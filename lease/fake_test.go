package lease

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fencekit/fencekit/fence"
)

// fakeRedis is a Backend in memory, with time.Now as its clock, so that
// testing/synctest can drive the timing logic without a network. It keeps
// the Redis keys' names and values (lock key "<token>:<owner>"), so tests
// read it as they would read Redis. Its faults are switched on and off by
// the test. A batch of renewals is one request, as a pipeline is.
type fakeRedis struct {
	mu      sync.Mutex
	value   map[string]string
	expires map[string]time.Time
	counter map[string]int64
	owners  int64
	dead    map[string]bool // lock values whose holder "crashed": its renewals never arrive

	latency  time.Duration // every reply takes this long (ctx may cut it)
	down     bool          // requests never get a reply until ctx ends
	stuck    time.Duration // >0: requests hang this long, ignoring ctx (go-redis without ContextTimeoutEnabled)
	failNext int           // the next n renewals fail with errFake
	failRel  int           // the next n releases fail with errFake
	calls    []fakeCall
}

type fakeCall struct {
	script   string // acquire, renew, release, inspect
	key      string // the lock key
	sent     time.Time
	deadline time.Time // the request context's deadline, zero if none
	returned time.Time // when the request returned, zero while in flight
}

var errFake = errors.New("fake: connection refused")

func newFakeRedis() *fakeRedis {
	return &fakeRedis{value: map[string]string{}, expires: map[string]time.Time{}, counter: map[string]int64{}, dead: map[string]bool{}}
}

var _ Backend = (*fakeRedis)(nil)

func fakeKeys(name string) *keys {
	k := new(keys)
	makeKeys(k, DefaultKeyPrefix, name)
	return k
}

func (f *fakeRedis) renewCalls() []fakeCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []fakeCall
	for _, c := range f.calls {
		if c.script == "renew" {
			out = append(out, c)
		}
	}
	return out
}

func (f *fakeRedis) set(fn func(f *fakeRedis)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

// request records one request for the lock keys, then plays the faults: it
// returns an error when the request gets no (good) reply. done records when
// the request returned.
func (f *fakeRedis) request(ctx context.Context, script string, lockKeys ...string) (done func(), err error) {
	dl, _ := ctx.Deadline()
	f.mu.Lock()
	first := len(f.calls)
	for _, k := range lockKeys {
		f.calls = append(f.calls, fakeCall{script: script, key: k, sent: time.Now(), deadline: dl})
	}
	latency, down, stuck := f.latency, f.down, f.stuck
	f.mu.Unlock()
	done = func() {
		f.mu.Lock()
		for i := first; i < first+len(lockKeys); i++ {
			f.calls[i].returned = time.Now()
		}
		f.mu.Unlock()
	}
	switch {
	case stuck > 0:
		time.Sleep(stuck)
		return done, errors.New("fake: i/o timeout")
	case down:
		<-ctx.Done()
		return done, ctx.Err()
	}
	if latency > 0 {
		select {
		case <-time.After(latency):
		case <-ctx.Done():
			return done, ctx.Err()
		}
	}
	return done, nil
}

func (f *fakeRedis) Acquire(ctx context.Context, name string, ttl time.Duration) (*Grant, error) {
	k := fakeKeys(name)
	done, err := f.request(ctx, "acquire", k.lock)
	defer done()
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.expire(k.lock)
	if v, held := f.value[k.lock]; held {
		holder, _ := parseHolder(v)
		return nil, &NotAcquiredError{Name: name, Remaining: time.Until(f.expires[k.lock]).Truncate(time.Millisecond), Holder: holder}
	}
	tok := max(f.counter[k.token]+1, time.Now().UnixMicro())
	f.counter[k.token] = tok
	f.owners++
	v := lockValue(fence.Token(tok), "owner"+strconv.FormatInt(f.owners, 10))
	f.value[k.lock] = v
	f.expires[k.lock] = time.Now().Add(ttl)
	rg := &redisGrant{keys: *k, value: v}
	rg.Grant = Grant{Name: name, Token: fence.Token(tok), TTL: ttl, Value: rg}
	return &rg.Grant, nil
}

func (f *fakeRedis) Renew(ctx context.Context, batch []*Grant, errs []error) {
	lockKeys := make([]string, len(batch))
	for i, g := range batch {
		lockKeys[i] = g.Value.(*redisGrant).lock
	}
	done, err := f.request(ctx, "renew", lockKeys...)
	defer done()
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, g := range batch {
		rg := g.Value.(*redisGrant)
		switch {
		case err != nil:
			errs[i] = err
		case f.failNext > 0:
			f.failNext--
			errs[i] = errFake
		case f.dead[rg.value]:
			errs[i] = errFake // never arrived
		default:
			errs[i] = f.compare(g, func() { f.expires[rg.lock] = time.Now().Add(g.TTL) })
		}
	}
}

// compare runs fn if g still holds its key (callers hold f.mu), and
// returns what renew.lua and release.lua would.
func (f *fakeRedis) compare(g *Grant, fn func()) error {
	rg := g.Value.(*redisGrant)
	f.expire(rg.lock)
	v, held := f.value[rg.lock]
	switch {
	case !held:
		return &LostError{Name: g.Name, Token: g.Token, Cause: CauseMissing}
	case v != rg.value:
		return &LostError{Name: g.Name, Token: g.Token, Cause: CauseStolen}
	}
	fn()
	return nil
}

func (f *fakeRedis) Release(ctx context.Context, g *Grant) error {
	rg := g.Value.(*redisGrant)
	done, err := f.request(ctx, "release", rg.lock)
	defer done()
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failRel > 0 {
		f.failRel--
		return errFake
	}
	return f.compare(g, func() { delete(f.value, rg.lock); delete(f.expires, rg.lock) })
}

func (f *fakeRedis) Watch(ctx context.Context, name string) (Watch, error) { return noWatch{}, nil }

func (f *fakeRedis) Inspect(ctx context.Context, name string) (Info, error) {
	k := fakeKeys(name)
	done, err := f.request(ctx, "inspect", k.lock)
	defer done()
	if err != nil {
		return Info{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.expire(k.lock)
	var info Info
	if v, held := f.value[k.lock]; held {
		info = Info{Held: true, Remaining: time.Until(f.expires[k.lock])}
		info.Holder, _ = parseHolder(v)
	}
	info.Last = fence.Token(f.counter[k.token])
	return info, nil
}

// expire drops key if its TTL passed (callers hold f.mu).
func (f *fakeRedis) expire(key string) {
	if e, ok := f.expires[key]; ok && !time.Now().Before(e) {
		delete(f.value, key)
		delete(f.expires, key)
	}
}

// steal gives key to another owner.
func (f *fakeRedis) steal(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for k := range f.value {
		if strings.Contains(k, "{"+name+"}") {
			f.value[k] = "1:thief"
		}
	}
}

// crash makes l's process "die": its renewals never reach the store, so
// the key expires at its TTL while l, unaware, ends at its deadline.
func (f *fakeRedis) crash(l *Lease) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.dead[lockValueOf(l)] = true
}
