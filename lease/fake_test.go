package lease

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/valid"
)

// fakeBackend is a Backend in memory, with time.Now as its clock, so that
// testing/synctest can drive the timing logic without a network. It works
// as Redis does: per name, a holder value "<token>:<owner>" with an expiry
// and a token counter. Its faults are switched on and off by the test. A
// batch of renewals is one request, as a pipeline is.
type fakeBackend struct {
	mu      sync.Mutex
	value   map[string]string    // name -> holder "<token>:<owner>"
	expires map[string]time.Time // name -> expiry of value
	counter map[string]int64     // name -> last token
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
	key      string // the lease name
	sent     time.Time
	deadline time.Time // the request context's deadline, zero if none
	returned time.Time // when the request returned, zero while in flight
}

var errFake = errors.New("fake: connection refused")

func newFakeBackend() *fakeBackend {
	return &fakeBackend{value: map[string]string{}, expires: map[string]time.Time{}, counter: map[string]int64{}, dead: map[string]bool{}}
}

var _ Backend = (*fakeBackend)(nil)

// fakeGrant is a fake grant's Value: the holder value it wrote.
type fakeGrant struct{ value string }

// lockValueOf returns the holder value that l's grant wrote.
func lockValueOf(l *Lease) string { return l.g.Value.(fakeGrant).value }

func (f *fakeBackend) Name() string { return "fake" }

func (f *fakeBackend) Close(context.Context) error { return nil }

func (f *fakeBackend) renewCalls() []fakeCall {
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

// count returns how many requests of script were sent.
func (f *fakeBackend) count(script string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.calls {
		if c.script == script {
			n++
		}
	}
	return n
}

func (f *fakeBackend) set(fn func(f *fakeBackend)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

// request records one request for the lock keys, then plays the faults: it
// returns an error when the request gets no (good) reply. done records when
// the request returned.
func (f *fakeBackend) request(ctx context.Context, script string, lockKeys ...string) (done func(), err error) {
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

func (f *fakeBackend) Acquire(ctx context.Context, name string, ttl time.Duration, identity string) (*Grant, error) {
	done, err := f.request(ctx, "acquire", name)
	defer done()
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.expire(name)
	if v, held := f.value[name]; held {
		return nil, &NotAcquiredError{Name: name, Remaining: time.Until(f.expires[name]).Truncate(time.Millisecond), Holder: holderToken(v)}
	}
	tok := max(f.counter[name]+1, time.Now().UnixMicro())
	f.counter[name] = tok
	f.owners++
	v := strconv.FormatInt(tok, 10) + ":" + identity + "#" + strconv.FormatInt(f.owners, 10)
	f.value[name] = v
	f.expires[name] = time.Now().Add(ttl)
	return &Grant{Name: name, Token: fence.Token(tok), TTL: ttl, Value: fakeGrant{v}}, nil
}

// holderToken is the token of a holder value, 0 for one the fake did not write.
func holderToken(v string) fence.Token {
	tok, _ := valid.ParseToken(strings.SplitN(v, ":", 2)[0])
	return tok
}

func (f *fakeBackend) Renew(ctx context.Context, batch []*Grant) []error {
	names := make([]string, len(batch))
	for i, g := range batch {
		names[i] = g.Name
	}
	done, err := f.request(ctx, "renew", names...)
	defer done()
	f.mu.Lock()
	defer f.mu.Unlock()
	errs := make([]error, len(batch))
	for i, g := range batch {
		switch {
		case err != nil:
			errs[i] = err
		case f.failNext > 0:
			f.failNext--
			errs[i] = errFake
		case f.dead[g.Value.(fakeGrant).value]:
			errs[i] = errFake // never arrived
		default:
			errs[i] = f.compare(g, func() { f.expires[g.Name] = time.Now().Add(g.TTL) })
		}
	}
	return errs
}

// compare runs fn if g still holds its name (callers hold f.mu), and
// returns what renew.lua and release.lua would.
func (f *fakeBackend) compare(g *Grant, fn func()) error {
	f.expire(g.Name)
	v, held := f.value[g.Name]
	switch {
	case !held:
		return &LostError{Cause: CauseMissing}
	case v != g.Value.(fakeGrant).value:
		return &LostError{Cause: CauseStolen}
	}
	fn()
	return nil
}

func (f *fakeBackend) Release(ctx context.Context, g *Grant) error {
	done, err := f.request(ctx, "release", g.Name)
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
	return f.compare(g, func() { delete(f.value, g.Name); delete(f.expires, g.Name) })
}

func (f *fakeBackend) Watch(ctx context.Context, name string) (Watch, error) { return noWatch{}, nil }

func (f *fakeBackend) Inspect(ctx context.Context, name string) (Info, error) {
	done, err := f.request(ctx, "inspect", name)
	defer done()
	if err != nil {
		return Info{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.expire(name)
	var info Info
	if v, held := f.value[name]; held {
		info = Info{Held: true, Holder: holderToken(v), Remaining: time.Until(f.expires[name])}
	}
	info.Last = fence.Token(f.counter[name])
	return info, nil
}

// expire drops name's holder if its TTL passed (callers hold f.mu).
func (f *fakeBackend) expire(key string) {
	if e, ok := f.expires[key]; ok && !time.Now().Before(e) {
		delete(f.value, key)
		delete(f.expires, key)
	}
}

// steal gives name to another owner.
func (f *fakeBackend) steal(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.value[name]; ok {
		f.value[name] = "1:thief"
	}
}

// crash makes l's process "die": its renewals never reach the store, so
// the grant expires at its TTL while l, unaware, ends at its deadline.
func (f *fakeBackend) crash(l *Lease) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.dead[lockValueOf(l)] = true
}
