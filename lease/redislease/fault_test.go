package redislease

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/fencetest"
	"github.com/fencekit/fencekit/internal/testenv"
	"github.com/fencekit/fencekit/internal/valid"
	"github.com/fencekit/fencekit/lease"
)

func init() { testenv.RegisterChild("lease-holder", childHolder) }

// childHolder acquires the lease named by LEASE_CHILD_NAME on
// LEASE_CHILD_ADDR for LEASE_CHILD_TTL, prints "token N", and prints
// "lost <cause>" when its Context ends.
func childHolder() int {
	ttl, err := time.ParseDuration(os.Getenv("LEASE_CHILD_TTL"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	rdb := redis.NewClient(&redis.Options{Addr: os.Getenv("LEASE_CHILD_ADDR"), ContextTimeoutEnabled: true})
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := New(rdb, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	l, err := c.AcquireWait(ctx, os.Getenv("LEASE_CHILD_NAME"), ttl)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("token %d\n", l.Token())
	select {
	case <-l.Done():
		fmt.Printf("lost %v\n", l.Err())
	case <-ctx.Done():
		fmt.Println("timeout")
	}
	return 0
}

func startHolder(t *testing.T, addr, name string, ttl time.Duration) (*testenv.Child, fence.Token) {
	t.Helper()
	ch := testenv.StartChild(t, "lease-holder", "LEASE_CHILD_ADDR="+addr, "LEASE_CHILD_NAME="+name, "LEASE_CHILD_TTL="+ttl.String())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	line, err := ch.Expect(ctx, "token ")
	if err != nil {
		t.Fatal(err)
	}
	tok, err := valid.ParseToken(strings.TrimPrefix(line, "token "))
	if err != nil {
		t.Fatal(err)
	}
	return ch, tok
}

func TestFaultKilledHolderTakenOverWithinTTL(t *testing.T) {
	c, env := newTestClient(t, nil)
	name := env.Name("sigkill")
	const ttl = time.Second
	ch, childTok := startHolder(t, env.Addr, name, ttl)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	type result struct {
		l  *lease.Lease
		at time.Time
	}
	got := make(chan result, 1)
	errc := make(chan error, 1)
	go func() {
		l, err := c.AcquireWait(ctx, name, ttl)
		if err != nil {
			errc <- err
			return
		}
		got <- result{l, time.Now()}
	}()
	waitMarked(t, env.Client, name) // the waiter was refused and sleeps on the holder's TTL
	killed := time.Now()
	if err := ch.Kill(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		t.Fatal(err)
	case r := <-got:
		d := r.at.Sub(killed)
		t.Logf("taken over %v after SIGKILL (TTL %v)", d, ttl)
		// The key lives at most one TTL after the holder's last renewal;
		// the waiter adds up to WaitJitter; 500ms slack for a busy machine.
		if d > ttl+10*time.Millisecond+500*time.Millisecond {
			t.Errorf("take-over %v after SIGKILL, want within TTL %v + margin", d, ttl)
		}
		if r.l.Token() <= childTok {
			t.Errorf("new token %v not above the killed holder's %v", r.l.Token(), childTok)
		}
		release(t, r.l)
	}
}

func TestFaultPausedHolderLosesAndIsFenced(t *testing.T) {
	c, env := newTestClient(t, nil)
	name := env.Name("sigstop")
	const ttl = 500 * time.Millisecond
	ch, childTok := startHolder(t, env.Addr, name, ttl)
	if err := ch.Stop(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// While the holder is paused past its TTL, the key expires and a new
	// holder takes it.
	l, err := c.AcquireWait(ctx, name, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer release(t, l)
	if l.Token() <= childTok {
		t.Fatalf("new token %v not above the paused holder's %v", l.Token(), childTok)
	}
	store := fencetest.NewStore()
	if err := store.Put(name, l.Token(), []byte("new holder")); err != nil {
		t.Fatal(err)
	}
	if err := ch.Cont(); err != nil {
		t.Fatal(err)
	}
	// After SIGCONT the old holder's Context is done at once or at its next
	// heartbeat (which finds the key stolen).
	line, err := ch.Expect(ctx, "lost ")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(line, "lease: lost") && !strings.Contains(line, "lost:") {
		t.Errorf("child reported %q", line)
	}
	t.Logf("paused holder: %s", line)
	// Had it written before noticing, fencing refuses its token.
	if err := store.Put(name, childTok, []byte("paused holder")); !fenceIsStale(err) {
		t.Fatalf("write with the paused holder's token %v after %v = %v, want stale", childTok, l.Token(), err)
	}
	if err := ch.Wait(); err != nil {
		t.Fatalf("child exit: %v\n%s", err, ch.Stderr())
	}
}

func fenceIsStale(err error) bool {
	var se *fence.StaleError
	return errors.As(err, &se) && errors.Is(err, fence.ErrStale)
}

// grants acquires and releases name n times on c and returns the last token.
func grants(t *testing.T, c *lease.Client, name string, n int) fence.Token {
	t.Helper()
	var last fence.Token
	for i := range n {
		l := mustAcquire(t, c, name, time.Minute)
		if l.Token() <= last {
			t.Fatalf("grant %d: token %v not above %v", i, l.Token(), last)
		}
		last = l.Token()
		release(t, l)
	}
	return last
}

func TestFaultRestartWithoutPersistence(t *testing.T) {
	srv := testenv.StartRedisServer(t)
	rdb := srv.Client(t)
	c := mustNew(t, rdb, nil)
	ctx := context.Background()
	const name = "restart"
	last := grants(t, c, name, 50)
	for _, how := range []string{"restart", "flushall"} {
		if how == "restart" {
			if err := srv.Restart(ctx); err != nil {
				t.Fatal(err)
			}
		} else if err := rdb.FlushAll(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		// The counter is really gone.
		if err := waitPing(ctx, rdb); err != nil {
			t.Fatal(err)
		}
		if n, err := rdb.Exists(ctx, keysOf(name).token).Result(); err != nil || n != 0 {
			t.Fatalf("after %s: counter exists=%d err=%v", how, n, err)
		}
		l := mustAcquire(t, c, name, time.Minute)
		if l.Token() <= last {
			t.Fatalf("after %s: token %v not above %v", how, l.Token(), last)
		}
		release(t, l)
		last = grants(t, c, name, 10)
	}
}

// TestFaultBumpAboveClockThenRestart bumps a counter 72 minutes past the
// server's clock (what a switch from an issuer whose tokens ran ahead
// would ask for), then restarts Redis without persistence: the next grant
// must still be above every token issued and promised, or the bump must
// have been refused, changing nothing.
func TestFaultBumpAboveClockThenRestart(t *testing.T) {
	srv := testenv.StartRedisServer(t)
	rdb := srv.Client(t)
	c := mustNew(t, rdb, nil)
	ctx := context.Background()
	const name = "ahead"
	last := grants(t, c, name, 3)
	far := fence.Token(time.Now().Add(72 * time.Minute).UnixMicro())
	before, after, err := c.Bump(ctx, name, far)
	switch {
	case err == nil && after != before:
		last = far // promised: the next grant's token is above it
	case !errors.Is(err, lease.ErrInvalid) || !strings.Contains(err.Error(), "ahead of the server's clock"):
		t.Fatalf("Bump 72 minutes ahead: %v -> %v, %v; want a refusal naming the clock", before, after, err)
	default:
		t.Log(err)
		if v, err := rdb.Get(ctx, keysOf(name).token).Result(); err != nil || v != last.String() {
			t.Fatalf("counter after the refused bump: %q, %v; want %v", v, err, last)
		}
	}
	if err := srv.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if err := waitPing(ctx, rdb); err != nil {
		t.Fatal(err)
	}
	if l := mustAcquire(t, c, name, time.Minute); l.Token() <= last {
		t.Fatalf("after a restart without persistence: token %v not above %v", l.Token(), last)
	}
}

// waitPing waits until the server answers (the client does not retry).
func waitPing(ctx context.Context, rdb *redis.Client) error {
	var err error
	for range 100 {
		if err = rdb.Ping(ctx).Err(); err == nil {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return err
}

func TestFaultFailoverToLaggingReplica(t *testing.T) {
	master := testenv.StartRedisServer(t, "--repl-diskless-sync-delay", "0")
	replica := testenv.StartRedisServer(t, "--replicaof", "127.0.0.1", strconv.Itoa(master.Port))
	mc, rc := master.Client(t), replica.Client(t)
	ctx := context.Background()
	c := mustNew(t, mc, nil)
	const name = "failover"
	synced := grants(t, c, name, 20)
	var v string
	for range 500 { // the replica's first sync may take a moment
		if v, _ = rc.Get(ctx, keysOf(name).token).Result(); v == synced.String() {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if v != synced.String() {
		t.Fatalf("replica counter %q, want %v before the pause", v, synced)
	}
	// The replica stops hearing from the master: it is paused and its
	// replication link is cut, so it cannot catch up from socket buffers.
	if err := replica.Pause(); err != nil {
		t.Fatal(err)
	}
	if err := mc.Do(ctx, "CLIENT", "KILL", "TYPE", "replica").Err(); err != nil {
		t.Fatal(err)
	}
	last := grants(t, c, name, 20)
	if err := master.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := replica.Resume(); err != nil {
		t.Fatal(err)
	}
	if err := waitPing(ctx, rc); err != nil {
		t.Fatal(err)
	}
	if err := rc.Do(ctx, "REPLICAOF", "NO", "ONE").Err(); err != nil {
		t.Fatal(err)
	}
	v, _ = rc.Get(ctx, keysOf(name).token).Result()
	if v != synced.String() {
		t.Fatalf("promoted replica's counter %q, want the lagging %v (last grant %v)", v, synced, last)
	}
	l := mustAcquire(t, mustNew(t, rc, nil), name, time.Minute)
	if l.Token() <= last {
		t.Fatalf("after failover: token %v not above %v (replica counter %s)", l.Token(), last, v)
	}
	release(t, l)
}

func TestFaultHolderAcrossRestart(t *testing.T) {
	// A holder whose Redis restarts without persistence loses the key: its
	// next renewal (EVALSHA answered NOSCRIPT, then EVAL) finds it missing
	// and ends the lease, or, if the restart outlasts the deadline, the
	// deadline does. After a second restart, a new lease's first renewal
	// also goes through the NOSCRIPT fallback and keeps it alive.
	srv := testenv.StartRedisServer(t)
	rdb := srv.Client(t)
	c := mustNew(t, rdb, &lease.Options{RenewInterval: 50 * time.Millisecond})
	ctx := context.Background()
	l := mustAcquire(t, c, "across-restart", 2*time.Second)
	if err := srv.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if err := waitPing(ctx, rdb); err != nil {
		t.Fatal(err)
	}
	err := waitDone(t, l, 5*time.Second)
	if !isLost(err, lease.CauseMissing) && !isLost(err, lease.CauseExpired) {
		t.Fatalf("holder across a restart: Err = %v, want lost (missing or expired)", err)
	}
	t.Logf("holder across a restart: %v", err)

	if err := srv.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if err := waitPing(ctx, rdb); err != nil {
		t.Fatal(err)
	}
	l2 := mustAcquire(t, c, "after-restart", 500*time.Millisecond)
	time.Sleep(1500 * time.Millisecond) // 30 renewals, the first after NOSCRIPT
	if err := l2.Err(); err != nil {
		t.Fatalf("lease acquired after a restart was lost: %v", err)
	}
	// The restarted server had no scripts: acquire and renew were refused
	// with NOSCRIPT once each and sent again with EVAL.
	info, err := rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	var evalsha string
	for line := range strings.Lines(info) {
		if strings.HasPrefix(line, "cmdstat_evalsha:") {
			evalsha = line
		}
	}
	if !strings.Contains(info, "cmdstat_eval:calls=2,") || !strings.Contains(evalsha, "failed_calls=2") {
		t.Errorf("want 2 EVAL fallbacks after 2 NOSCRIPT replies, commandstats:\n%s", info)
	}
	release(t, l2)
}
