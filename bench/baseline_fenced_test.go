package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// fencedDiag is the name of the hand-written fenced lock in BenchmarkLease.
const fencedDiag = "baseline-fenced"

// baselineFencedAcquire is what a careful go-redis user writes to get a
// fencing token with the lock: the token must come from the same atomic step
// as the grant, so SET NX PX and INCR of a counter key in one script.
var baselineFencedAcquire = redis.NewScript(`-- KEYS[1] lock key, KEYS[2] counter key; ARGV[1] owner value, ARGV[2] ttl in ms
if redis.call("set", KEYS[1], ARGV[1], "nx", "px", ARGV[2]) then return redis.call("incr", KEYS[2]) end
return false`)

// BaselineFenced is a diagnostic, not a library: the hand-written baseline
// doing the fencing part of fencekit's work, as a user would write it with
// go-redis alone. Acquire is one script (SET NX PX, then INCR of a counter:
// the token), release and renew are the baseline's scripts. Its tokens go
// backwards when Redis loses the counter (restart without persistence,
// FLUSHALL, failover to a lagging replica), which fencekit's do not; it has
// no heartbeat, no local deadline and no release notification. Comparing it
// with "baseline" prices a token issued atomically with the grant; comparing
// fencekit with it prices the rest of fencekit.
type BaselineFenced struct{ C redis.UniversalClient }

func (BaselineFenced) Name() string     { return fencedDiag }
func (BaselineFenced) AutoRenews() bool { return false }

func (b BaselineFenced) TryAcquire(ctx context.Context, key string, ttl time.Duration) (Held, error) {
	value, err := ownerValue()
	if err != nil {
		return nil, err
	}
	lock := "{" + key + "}:lock"
	tok, err := baselineFencedAcquire.Run(ctx, b.C, []string{lock, "{" + key + "}:token"}, value, ttl.Milliseconds()).Int64()
	if err == redis.Nil {
		return nil, ErrHeld
	}
	if err != nil {
		return nil, err
	}
	if tok < 1 {
		return nil, fmt.Errorf("bench: baseline-fenced token %d", tok)
	}
	return &baselineLock{c: b.C, key: lock, value: value}, nil
}

func (b BaselineFenced) AcquireWait(context.Context, string, time.Duration) (Held, error) {
	return nil, fmt.Errorf("bench: %s is a diagnostic without a waiting acquire", fencedDiag)
}
