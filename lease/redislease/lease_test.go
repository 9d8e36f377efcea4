package redislease

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/testenv"
	"github.com/fencekit/fencekit/internal/valid"
	"github.com/fencekit/fencekit/lease"
)

func TestAcquireTwoClientsOneWins(t *testing.T) {
	c1, env := newTestClient(t, nil)
	c2 := mustNew(t, env.Client, nil)
	name := env.Name("one-wins")
	ctx := context.Background()

	const racers = 8
	var wg sync.WaitGroup
	leases := make([]*lease.Lease, racers)
	errs := make([]error, racers)
	for i := range racers {
		c := c1
		if i%2 == 1 {
			c = c2
		}
		wg.Go(func() { leases[i], errs[i] = c.Acquire(ctx, name, 5*time.Second) })
	}
	wg.Wait()
	var winner *lease.Lease
	for i, err := range errs {
		switch {
		case err == nil && winner != nil:
			t.Fatalf("two winners: tokens %v and %v", winner.Token(), leases[i].Token())
		case err == nil:
			winner = leases[i]
		default:
			var na *lease.NotAcquiredError
			if !errors.Is(err, lease.ErrNotAcquired) || !errors.As(err, &na) {
				t.Fatalf("loser %d: %v, want a *NotAcquiredError", i, err)
			}
			if na.Remaining <= 0 || na.Remaining > 5*time.Second {
				t.Errorf("loser %d: remaining %v, want in (0, 5s]", i, na.Remaining)
			}
			if na.Name != name || !strings.Contains(err.Error(), name) {
				t.Errorf("loser %d: error %q does not name %q", i, err, name)
			}
		}
	}
	if winner == nil {
		t.Fatal("nobody won")
	}
	for i, err := range errs {
		var na *lease.NotAcquiredError
		if errors.As(err, &na) && na.Holder != winner.Token() {
			t.Errorf("loser %d saw holder token %v, winner has %v", i, na.Holder, winner.Token())
		}
	}
	if winner.Err() != nil {
		t.Fatalf("winner's Err while held: %v", winner.Err())
	}
	release(t, winner)
	if !errors.Is(winner.Err(), lease.ErrReleased) || !errors.Is(context.Cause(winner.Context()), lease.ErrReleased) {
		t.Fatalf("after release Err = %v, cause = %v; want ErrReleased", winner.Err(), context.Cause(winner.Context()))
	}
	l := mustAcquire(t, c2, name, time.Second)
	if l.Token() <= winner.Token() {
		t.Errorf("next token %v is not above %v", l.Token(), winner.Token())
	}
	release(t, l)
}

func TestTokensStrictlyIncrease(t *testing.T) {
	c, env := newTestClient(t, nil)
	ctx := context.Background()
	n := 10000
	if testing.Short() {
		n = 1000
	}
	names := []string{env.Name("inc-a"), env.Name("inc-b")}
	last := map[string]fence.Token{}
	for i := range n {
		name := names[i%2]
		l, err := c.Acquire(ctx, name, time.Minute)
		if err != nil {
			t.Fatalf("grant %d: %v", i, err)
		}
		if l.Token() <= last[name] {
			t.Fatalf("grant %d of %s: token %v not above %v", i, name, l.Token(), last[name])
		}
		if err := valid.Token(l.Token()); err != nil {
			t.Fatal(err)
		}
		last[name] = l.Token()
		if err := l.Release(ctx); err != nil {
			t.Fatalf("release %d: %v", i, err)
		}
	}
	// The counter is stored exactly (no float formatting).
	got, err := env.Client.Get(ctx, keysOf(names[1]).token).Result()
	if err != nil || got != last[names[1]].String() {
		t.Fatalf("counter = %q, %v; want %v", got, err, last[names[1]])
	}
}

func TestCounterAheadOfClock(t *testing.T) {
	// A counter above the clock keeps counting by one; a counter at 2^53 is
	// refused (Lua doubles are exact only below it); a garbage counter is a
	// clear error.
	c, env := newTestClient(t, nil)
	ctx := context.Background()
	name := env.Name("ahead")
	k := keysOf(name)
	const ahead = 5_000_000_000_000_000 // about 2.7x today's time in µs
	env.Client.Set(ctx, k.token, ahead, 0)
	l := mustAcquire(t, c, name, time.Second)
	if l.Token() != ahead+1 {
		t.Fatalf("token %v, want %d", l.Token(), ahead+1)
	}
	release(t, l)

	// Every other counter value: the token is exactly max(counter + 1, the
	// server's time in µs), whatever the counter's length or leading zeros,
	// and the counter is left holding the token in canonical form.
	redisNow := func() uint64 {
		tm, err := env.Client.Time(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		return uint64(tm.UnixMicro())
	}
	now := redisNow()
	for _, tc := range []struct {
		counter string // "" = missing
		want    uint64 // 0 = the server time at the grant
	}{
		{"", 0},
		{"0", 0},
		{"5", 0},
		{"00000000000000000005", 0}, // leading zeros, longer than the time
		{"0000000000000000000000000000000000000000000000000000000000000000005", 0},
		{"0" + strconv.FormatUint(now-1_000_000, 10), 0}, // leading zero, a second behind
		{strconv.FormatUint(now-1_000_000, 10), 0},
		{strconv.FormatUint(now+60_000_000, 10), now + 60_000_001}, // a clock set back by a minute
		{"000" + strconv.FormatUint(now+60_000_000, 10), now + 60_000_001},
		{"9007199254740990", 9007199254740991}, // the largest exact token
		{"0009007199254740990", 9007199254740991},
	} {
		if tc.counter == "" {
			env.Client.Del(ctx, k.token)
		} else {
			env.Client.Set(ctx, k.token, tc.counter, 0)
		}
		before := redisNow()
		l, err := c.Acquire(ctx, name, time.Second)
		if err != nil {
			t.Errorf("counter %q: %v", tc.counter, err)
			continue
		}
		after := redisNow()
		got := uint64(l.Token())
		if tc.want != 0 && got != tc.want || tc.want == 0 && (got < before || got > after) {
			t.Errorf("counter %q: token %d, want %d (server time %d..%d)", tc.counter, got, tc.want, before, after)
		}
		if v, _ := env.Client.Get(ctx, k.token).Result(); v != l.Token().String() {
			t.Errorf("counter %q: counter after the grant %q, want %q", tc.counter, v, l.Token())
		}
		// The lock key holds the same token, with the TTL.
		if v, _ := env.Client.Get(ctx, k.lock).Result(); v != lockValueOf(l) || !strings.HasPrefix(v, l.Token().String()+":") {
			t.Errorf("counter %q: lock key %q, want %q with token %v", tc.counter, v, lockValueOf(l), l.Token())
		}
		if ttl, _ := env.Client.PTTL(ctx, k.lock).Result(); ttl <= 0 || ttl > time.Second {
			t.Errorf("counter %q: lock key's TTL %v, want at most 1s", tc.counter, ttl)
		}
		release(t, l) // the lock key holds what the lease renews and releases
	}

	for _, bad := range []string{"9007199254740991", "9007199254740992", "09007199254740991", "99999999999999999999",
		"abc", "-5", "1.5", "", " 5", "5 ", "+5", "1e3", "0x10", "1764000000000000abc"} {
		env.Client.Set(ctx, k.token, bad, 0)
		_, err := c.Acquire(ctx, name, time.Second)
		if err == nil || !strings.Contains(err.Error(), "token counter") {
			t.Errorf("counter %s: err = %v, want a counter error", bad, err)
		}
		if n, _ := env.Client.Exists(ctx, k.lock).Result(); n != 0 {
			t.Errorf("counter %s: lock key was written", bad)
		}
		if v, _ := env.Client.Get(ctx, k.token).Result(); v != bad {
			t.Errorf("counter %s: changed to %q by a refused Acquire", bad, v)
		}
	}

	// A counter key of another type: the same, the hash left as it was.
	env.Client.Del(ctx, k.token)
	env.Client.HSet(ctx, k.token, "f", "v")
	if _, err := c.Acquire(ctx, name, time.Second); err == nil || isNotAcquired(err) || !strings.Contains(err.Error(), "token counter") {
		t.Errorf("counter a hash: err = %v, want a counter error", err)
	}
	if n, _ := env.Client.Exists(ctx, k.lock).Result(); n != 0 {
		t.Error("counter a hash: lock key was written")
	}
	if v, err := env.Client.HGet(ctx, k.token, "f").Result(); err != nil || v != "v" {
		t.Errorf("counter a hash: %q, %v after Acquire", v, err)
	}
}

func TestAcquireRefusedByAnyValue(t *testing.T) {
	// A held key is refused from the same round trip with its remaining TTL
	// and holder's token, whatever it holds: 0 for a value fencekit did not
	// write, a negative TTL for a key without expiry.
	c, env := newTestClient(t, nil)
	ctx := context.Background()
	name := env.Name("refused")
	lock := keysOf(name).lock
	for _, tc := range []struct {
		value    string
		ttl      time.Duration
		holder   fence.Token
		identity string
	}{
		{"999:other", 5 * time.Second, 999, ""}, // fencekit before identities
		{"998:web-1/7:0123456789abcdef", 5 * time.Second, 998, "web-1/7"},
		{"997:a:b:0123456789abcdef+", 5 * time.Second, 997, "a:b"},
		{"garbage", 5 * time.Second, 0, ""},
		{"42", 5 * time.Second, 0, ""}, // a number, but not "<token>:<owner>"
		{"", 5 * time.Second, 0, ""},
		{"7:x", 0, 7, ""},
	} {
		env.Client.Set(ctx, lock, tc.value, tc.ttl)
		_, err := c.Acquire(ctx, name, time.Second)
		var na *lease.NotAcquiredError
		if !errors.As(err, &na) || !errors.Is(err, lease.ErrNotAcquired) {
			t.Errorf("lock %q: Acquire = %v, want a *NotAcquiredError", tc.value, err)
			continue
		}
		if na.Holder != tc.holder || na.Identity != tc.identity {
			t.Errorf("lock %q: holder %v of %q, want %v of %q", tc.value, na.Holder, na.Identity, tc.holder, tc.identity)
		}
		if tc.ttl > 0 && (na.Remaining <= 0 || na.Remaining > tc.ttl) || tc.ttl == 0 && na.Remaining >= 0 {
			t.Errorf("lock %q, TTL %v: remaining %v", tc.value, tc.ttl, na.Remaining)
		}
		if v, _ := env.Client.Get(ctx, lock).Result(); v != tc.value {
			t.Errorf("lock %q changed to %q by a refused Acquire", tc.value, v)
		}
	}
	if n, _ := env.Client.Exists(ctx, keysOf(name).token).Result(); n != 0 {
		t.Error("a refused Acquire wrote the token counter")
	}
}

func TestAcquireRefusedByAKeyOfAnotherType(t *testing.T) {
	// A lock key someone made a hash is held all the same: Acquire is
	// refused with its remaining TTL, and AcquireWait waits for it to expire.
	c, env := newTestClient(t, nil)
	ctx := context.Background()
	name := env.Name("hash")
	lock := keysOf(name).lock
	if err := env.Client.HSet(ctx, lock, "f", "v").Err(); err != nil {
		t.Fatal(err)
	}
	env.Client.PExpire(ctx, lock, 300*time.Millisecond)
	_, err := c.Acquire(ctx, name, time.Second)
	var na *lease.NotAcquiredError
	if !errors.As(err, &na) || !errors.Is(err, lease.ErrNotAcquired) || na.Holder != 0 || na.Remaining <= 0 || na.Remaining > 300*time.Millisecond {
		t.Fatalf("Acquire = %v (%+v), want a *NotAcquiredError with holder 0 and the key's TTL", err, na)
	}
	if v, err := env.Client.HGet(ctx, lock, "f").Result(); err != nil || v != "v" {
		t.Fatalf("the hash after a refused Acquire: %q, %v", v, err)
	}
	if n, _ := env.Client.Exists(ctx, keysOf(name).token).Result(); n != 0 {
		t.Fatal("a refused Acquire wrote the token counter")
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	l, err := c.AcquireWait(ctx, name, time.Second)
	if err != nil {
		t.Fatalf("AcquireWait = %v, want the lease once the key expired", err)
	}
	release(t, l)
}

func TestReleaseByNonOwnerFails(t *testing.T) {
	c, env := newTestClient(t, nil)
	ctx := context.Background()
	name := env.Name("non-owner")
	a := mustAcquire(t, c, name, 2*time.Second)
	k := keysOf(name)
	// Someone else takes the key (as after an expiry and a new grant).
	if err := env.Client.Set(ctx, k.lock, "999:other", 2*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	err := a.Release(ctx)
	if !isLost(err, lease.CauseStolen) {
		t.Fatalf("Release by non-owner = %v, want LostError stolen", err)
	}
	if v, _ := env.Client.Get(ctx, k.lock).Result(); v != "999:other" {
		t.Fatalf("lock value after failed release = %q, want it untouched", v)
	}
	if err2 := a.Release(ctx); err2 != err {
		t.Fatalf("second Release = %v, want the same %v", err2, err)
	}
	// Missing key.
	b := mustAcquire(t, c, env.Name("non-owner-2"), 2*time.Second)
	env.Client.Del(ctx, keysOf(b.Name()).lock)
	if err := b.Release(ctx); !isLost(err, lease.CauseMissing) {
		t.Fatalf("Release of deleted key = %v, want LostError missing", err)
	}
}

func TestReleaseTwiceAndCancelledContext(t *testing.T) {
	// Release ends the lease locally whatever its ctx: with a done ctx
	// nothing is deleted, but nothing is renewed either, so the key expires
	// at its TTL and the name is free for others.
	c, env := newTestClient(t, nil)
	ctx := context.Background()
	name := env.Name("twice")
	base := warmBase(t, c, name)
	l := mustAcquire(t, c, name, 300*time.Millisecond)

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	err := l.Release(cctx)
	if err == nil || !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "ended locally") {
		t.Fatalf("Release(cancelled) = %v", err)
	}
	if l.Err() != lease.ErrReleased {
		t.Fatalf("after Release(cancelled): Err = %v, want ErrReleased", l.Err())
	}
	select {
	case <-l.Done():
	default:
		t.Fatal("Done not closed by Release(cancelled)")
	}
	time.Sleep(450 * time.Millisecond) // past the TTL: alive only if renewed
	if n, _ := env.Client.Exists(ctx, keysOf(name).lock).Result(); n != 0 {
		t.Fatal("key renewed after Release(cancelled)")
	}
	if _, err := mustNew(t, env.Client, nil).Acquire(ctx, name, time.Second); err != nil {
		t.Fatalf("another client after Release(cancelled) + TTL: %v", err)
	}

	// Release(cancelled) then Release(live) deletes the key at once.
	name2 := env.Name("twice-2")
	l2 := mustAcquire(t, c, name2, 10*time.Second)
	if err := l2.Release(cctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Release(cancelled) = %v", err)
	}
	release(t, l2)
	release(t, l2)
	if n, _ := env.Client.Exists(ctx, keysOf(name2).lock).Result(); n != 0 {
		t.Fatal("key still there after Release")
	}
	testenv.CheckGoroutines(t, base)
}

func TestRenewKeepsShortLeaseAlive(t *testing.T) {
	c, env := newTestClient(t, nil)
	name := env.Name("renew")
	// 1s: short enough for 9 renewals in 3s, long enough that a 2-core
	// machine at load 10 (every package's tests and a benchmark) keeps it:
	// a renewal may be late by up to about 650 ms.
	l := mustAcquire(t, c, name, time.Second)
	ctx := context.Background()
	end := time.Now().Add(3 * time.Second)
	for time.Now().Before(end) {
		select {
		case <-l.Done():
			t.Fatalf("lease lost while renewing: %v", l.Err())
		case <-time.After(50 * time.Millisecond):
		}
		pttl, err := env.Client.PTTL(ctx, keysOf(name).lock).Result()
		if err != nil || pttl <= 0 {
			t.Fatalf("PTTL = %v, %v; want the key alive", pttl, err)
		}
	}
	if _, err := c.Acquire(ctx, name, time.Second); !errors.Is(err, lease.ErrNotAcquired) {
		t.Fatalf("second Acquire while renewed = %v", err)
	}
	if p := c.HeartbeatP99(); p <= 0 {
		t.Errorf("HeartbeatP99 = %v after 3s of heartbeats", p)
	}
	release(t, l)
}

func TestDeletedKeyEndsLeaseWithinOneInterval(t *testing.T) {
	c, env := newTestClient(t, &lease.Options{RenewInterval: 100 * time.Millisecond})
	name := env.Name("deleted")
	base := warmBase(t, c, name)
	l := mustAcquire(t, c, name, 5*time.Second)
	if err := env.Client.Del(context.Background(), keysOf(name).lock).Err(); err != nil {
		t.Fatal(err)
	}
	// Within one renew interval (plus scheduling slack on a busy machine),
	// far before the 5s TTL.
	err := waitDone(t, l, 100*time.Millisecond+time.Second)
	if !isLost(err, lease.CauseMissing) || !isLost(context.Cause(l.Context()), lease.CauseMissing) {
		t.Fatalf("Err = %v, want LostError missing", err)
	}
	if err := l.Release(context.Background()); !isLost(err, lease.CauseMissing) {
		t.Fatalf("Release after loss = %v", err)
	}
	testenv.CheckGoroutines(t, base)
}

func TestStolenKeyEndsLease(t *testing.T) {
	c, env := newTestClient(t, &lease.Options{RenewInterval: 50 * time.Millisecond})
	name := env.Name("stolen")
	l := mustAcquire(t, c, name, 5*time.Second)
	env.Client.Set(context.Background(), keysOf(name).lock, "1:x", 5*time.Second)
	if err := waitDone(t, l, 2*time.Second); !isLost(err, lease.CauseStolen) {
		t.Fatalf("Err = %v, want LostError stolen", err)
	}
	if !strings.Contains(l.Err().Error(), strconv.Quote(name)) {
		t.Errorf("error %q does not name the lease", l.Err())
	}
}

func TestBadInputSendsNothing(t *testing.T) {
	env := testenvRedisCounting(t)
	ctx := context.Background()
	good := mustNew(t, env.client, nil)
	cases := []struct {
		c    *lease.Client
		name string
		ttl  time.Duration
		want string
	}{
		{good, "", time.Second, "empty"},
		{good, strings.Repeat("x", 1025), time.Second, "1025 bytes"},
		{good, strings.Repeat("x", 16<<10), time.Second, "16384 bytes"},
		{good, "a{b}", time.Second, "hash tag"},
		{good, "a b", time.Second, "whitespace"},
		{good, "a\x00b", time.Second, "control"},
		{good, "a\xffb", time.Second, "UTF-8"},
		{good, "ok", 0, "below the minimum"},
		{good, "ok", -time.Second, "below the minimum"},
		{good, "ok", 9 * time.Millisecond, "below the minimum"},
		{good, "ok", 10*time.Millisecond + time.Microsecond, "whole number of milliseconds"},
		{good, "ok", lease.MaxTTL + time.Millisecond, "above the maximum 24h0m0s"},
		{good, "ok", 200 * 365 * 24 * time.Hour, "above the maximum 24h0m0s"},
		{nil, "ok", time.Second, "nil *lease.Client"},
		{mustNew(t, env.client, &lease.Options{RenewInterval: time.Second}), "ok", time.Second, "RenewInterval"},
		{mustNew(t, env.client, &lease.Options{DriftMargin: time.Second}), "ok", time.Second, "DriftMargin"},
	}
	for _, tc := range cases {
		_, err := tc.c.Acquire(ctx, tc.name, tc.ttl)
		if !errors.Is(err, lease.ErrInvalid) || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "lease: ") ||
			strings.Count(err.Error(), "lease:") != 1 || len(err.Error()) > 200 {
			t.Errorf("Acquire(%.20q, %v) = %.300v, want a short ErrInvalid mentioning %q, \"lease:\" once", tc.name, tc.ttl, err, tc.want)
		}
		_, err = tc.c.AcquireWait(ctx, tc.name, tc.ttl)
		if !errors.Is(err, lease.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("AcquireWait(%.20q, %v) = %v, want ErrInvalid mentioning %q", tc.name, tc.ttl, err, tc.want)
		}
	}
	if n := env.sent.Load(); n != 0 {
		t.Fatalf("%d commands sent for bad input", n)
	}
}

func TestNewRefusesBadClientAndOptions(t *testing.T) {
	env := testenvRedisCounting(t)
	cases := []struct {
		rdb  redis.UniversalClient
		opts *lease.Options
		want string
	}{
		{nil, nil, "nil Redis client"},
		{(*redis.Client)(nil), nil, "nil Redis client"},
		{(*redis.ClusterClient)(nil), nil, "nil Redis client"},
		{(*redis.Ring)(nil), nil, "nil Redis client"},
		{env.client, &lease.Options{KeyPrefix: "a{"}, "KeyPrefix"},
		{env.client, &lease.Options{KeyPrefix: "a b"}, "KeyPrefix"},
		{env.client, &lease.Options{RenewInterval: -1}, "RenewInterval"},
		{env.client, &lease.Options{DriftMargin: -1}, "DriftMargin"},
		{env.client, &lease.Options{RetryDelay: -1}, "RetryDelay"},
	}
	for _, tc := range cases {
		c, err := New(tc.rdb, tc.opts)
		if c != nil || !errors.Is(err, lease.ErrInvalid) || !strings.Contains(err.Error(), tc.want) ||
			!strings.HasPrefix(err.Error(), "lease: ") && !strings.HasPrefix(err.Error(), "redislease: ") || strings.Count(err.Error(), "lease:") != 1 {
			t.Errorf("New(%T, %+v) = %v, %v; want ErrInvalid mentioning %q", tc.rdb, tc.opts, c, err, tc.want)
		}
	}
	// A typed nil inside a Backend is the issuer's to catch (New above).
	if c, err := lease.NewClient(nil, nil); c != nil || !errors.Is(err, lease.ErrInvalid) || !strings.Contains(err.Error(), "nil Backend") {
		t.Errorf("NewClient(nil) = %v, %v; want ErrInvalid", c, err)
	}
	if n := env.sent.Load(); n != 0 {
		t.Fatalf("%d commands sent by New", n)
	}
}

// countingHook counts the commands a client sends: round trips.
type countingHook struct{ n *atomicInt }

func (h countingHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h countingHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmd)
	}
}
func (h countingHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmds)
	}
}

func TestOneRoundTripEach(t *testing.T) {
	env := testenvRedisCounting(t)
	c := mustNew(t, env.client, &lease.Options{RenewInterval: 40 * time.Millisecond})
	ctx := context.Background()
	name := env.Name("rtt")
	// Load the scripts once so EVALSHA hits (a first-ever call adds the
	// EVAL fallback).
	release(t, mustAcquire(t, c, name, time.Second))
	env.sent.Store(0)
	l := mustAcquire(t, c, name, time.Second)
	if n := env.sent.Load(); n != 1 {
		t.Errorf("Acquire sent %d commands, want 1", n)
	}
	if _, err := c.Acquire(ctx, name, time.Second); !errors.Is(err, lease.ErrNotAcquired) {
		t.Fatal(err)
	}
	if n := env.sent.Load(); n != 2 {
		t.Errorf("refused Acquire sent %d commands, want 1", n-1)
	}
	time.Sleep(130 * time.Millisecond) // about 3 heartbeats
	if n := env.sent.Load() - 2; n < 2 || n > 4 {
		t.Errorf("%d renewals in 130ms of 40ms heartbeats, want about 3", n)
	}
	release(t, l)
	// Release alone, on a lease whose first renewal is far away.
	c2 := mustNew(t, env.client, nil)
	l2 := mustAcquire(t, c2, name, 10*time.Second)
	before := env.sent.Load()
	release(t, l2)
	if n := env.sent.Load() - before; n != 1 {
		t.Errorf("Release sent %d commands, want 1", n)
	}
}

func TestAcquireWithDoneContextSendsNothing(t *testing.T) {
	env := testenvRedisCounting(t)
	c := mustNew(t, env.client, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Acquire(ctx, env.Name("done"), time.Second); !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "nothing sent") {
		t.Fatalf("Acquire(cancelled) = %v", err)
	}
	if n := env.sent.Load(); n != 0 {
		t.Fatalf("%d commands sent with a cancelled context", n)
	}
}

func TestAcquireOutOfMemoryIsAnError(t *testing.T) {
	// A Redis at maxmemory refuses the grant's first write: Acquire returns
	// Redis's error, not a refusal as if someone held the name.
	srv := testenv.StartRedisServer(t, "--maxmemory", "1", "--maxmemory-policy", "noeviction")
	c := mustNew(t, srv.Client(t), nil)
	_, err := c.Acquire(context.Background(), "oom", time.Second)
	if err == nil || isNotAcquired(err) || !strings.Contains(err.Error(), "OOM") {
		t.Fatalf("Acquire at maxmemory = %v, want Redis's OOM error", err)
	}
}
