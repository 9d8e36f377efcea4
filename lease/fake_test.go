package lease

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// fakeRedis runs the three lease scripts in memory, with time.Now as its
// clock, so that testing/synctest can drive the timing logic without a
// network. Its faults are switched on and off by the test.
type fakeRedis struct {
	mu      sync.Mutex
	value   map[string]string
	expires map[string]time.Time
	counter map[string]int64

	latency  time.Duration // every reply takes this long (ctx may cut it)
	down     bool          // requests never get a reply until ctx ends
	stuck    time.Duration // >0: requests hang this long, ignoring ctx (go-redis without ContextTimeoutEnabled)
	failNext int           // the next n renewals fail with errFake
	calls    []fakeCall
}

type fakeCall struct {
	script   string // acquire, renew, release
	key      string // KEYS[1], the lock key
	sent     time.Time
	deadline time.Time // the request context's deadline, zero if none
}

var errFake = errors.New("fake: connection refused")

func newFakeRedis() *fakeRedis {
	return &fakeRedis{value: map[string]string{}, expires: map[string]time.Time{}, counter: map[string]int64{}}
}

var _ redis.Scripter = (*fakeRedis)(nil)

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

func (f *fakeRedis) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	cmd := redis.NewCmd(ctx)
	var script string
	switch sha {
	case acquireScript.Hash():
		script = "acquire"
	case renewScript.Hash():
		script = "renew"
	case releaseScript.Hash():
		script = "release"
	default:
		cmd.SetErr(fmt.Errorf("NOSCRIPT %s", sha))
		return cmd
	}
	dl, _ := ctx.Deadline()
	f.mu.Lock()
	f.calls = append(f.calls, fakeCall{script: script, key: keys[0], sent: time.Now(), deadline: dl})
	latency, down, stuck := f.latency, f.down, f.stuck
	fail := script == "renew" && f.failNext > 0
	if fail {
		f.failNext--
	}
	f.mu.Unlock()

	switch {
	case stuck > 0:
		time.Sleep(stuck)
		cmd.SetErr(errors.New("fake: i/o timeout"))
		return cmd
	case down:
		<-ctx.Done()
		cmd.SetErr(ctx.Err())
		return cmd
	}
	if latency > 0 {
		select {
		case <-time.After(latency):
		case <-ctx.Done():
			cmd.SetErr(ctx.Err())
			return cmd
		}
	}
	if fail {
		cmd.SetErr(errFake)
		return cmd
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.expire(keys[0])
	v, held := f.value[keys[0]]
	switch script {
	case "acquire":
		if held {
			cmd.SetVal([]any{time.Until(f.expires[keys[0]]).Milliseconds(), v})
			return cmd
		}
		ttl, _ := strconv.ParseInt(fmt.Sprint(args[0]), 10, 64)
		tok := max(f.counter[keys[1]]+1, time.Now().UnixMicro())
		f.counter[keys[1]] = tok
		f.value[keys[0]] = strconv.FormatInt(tok, 10) + ":" + fmt.Sprint(args[1])
		f.expires[keys[0]] = time.Now().Add(time.Duration(ttl) * time.Millisecond)
		cmd.SetVal(strconv.FormatInt(tok, 10))
	case "renew", "release":
		switch {
		case !held:
			cmd.SetVal(int64(0))
		case v != args[0]:
			cmd.SetVal(int64(-1))
		case script == "renew":
			ttl, _ := strconv.ParseInt(fmt.Sprint(args[1]), 10, 64)
			f.expires[keys[0]] = time.Now().Add(time.Duration(ttl) * time.Millisecond)
			cmd.SetVal(int64(1))
		default:
			delete(f.value, keys[0])
			cmd.SetVal(int64(1))
		}
	}
	return cmd
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

func (f *fakeRedis) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	cmd := redis.NewCmd(ctx)
	cmd.SetErr(errors.New("fake: EVAL not supported; EvalSha is always tried first"))
	return cmd
}

func (f *fakeRedis) EvalRO(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	return f.Eval(ctx, script, keys, args...)
}

func (f *fakeRedis) EvalShaRO(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	return f.EvalSha(ctx, sha, keys, args...)
}

func (f *fakeRedis) ScriptExists(ctx context.Context, hashes ...string) *redis.BoolSliceCmd {
	cmd := redis.NewBoolSliceCmd(ctx)
	cmd.SetVal(make([]bool, len(hashes)))
	return cmd
}

func (f *fakeRedis) ScriptLoad(ctx context.Context, script string) *redis.StringCmd {
	cmd := redis.NewStringCmd(ctx)
	cmd.SetErr(errors.New("fake: SCRIPT LOAD not supported"))
	return cmd
}
