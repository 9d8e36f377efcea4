package main

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/leasearg"
	"github.com/fencekit/fencekit/internal/testenv"
	"github.com/fencekit/fencekit/lease"
)

func redisEnv(env *testenv.RedisEnv) []string { return []string{envRedisAddr + "=" + env.Addr} }

func acquire(t *testing.T, c *lease.Client, name string, ttl time.Duration) *lease.Lease {
	t.Helper()
	l, err := c.Acquire(context.Background(), name, ttl)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Release(context.Background()) })
	return l
}

func TestStatus(t *testing.T) {
	env := testenv.Redis(t)
	held, free := env.Name("held"), env.Name("never")
	l := acquire(t, newLeases(t, env.Client, nil), held, 30*time.Second)
	r := runWant(t, redisEnv(env), 0, "status", "-json", held, free)
	got := decode[[]leaseStatus](t, r)
	if len(got) != 2 {
		t.Fatalf("status of 2 names printed %d: %s", len(got), r.stdout)
	}
	h, f := got[0], got[1]
	if h.Name != held || !h.Held || h.Holder != uint64(l.Token()) || h.Last != uint64(l.Token()) || h.RemainingMS <= 0 || h.RemainingMS > 30000 {
		t.Errorf("held lease: %+v, want holder and last %v, remaining in (0, 30s]", h, l.Token())
	}
	if f != (leaseStatus{Name: free}) {
		t.Errorf("never used lease: %+v", f)
	}
	r = runWant(t, redisEnv(env), 0, "status", held)
	if !strings.Contains(r.stdout, held) || !strings.Contains(r.stdout, l.Token().String()) || !strings.Contains(r.stdout, "HOLDER") {
		t.Errorf("text status lacks the name or token:\n%s", r.stdout)
	}
	// The flag after the name works too, and -redis overrides the variable.
	runWant(t, []string{envRedisAddr + "=127.0.0.1:1"}, 0, "status", held, "-redis", env.Addr)
}

func TestUsageAndFailureExitCodes(t *testing.T) {
	env := testenv.Redis(t)
	e := redisEnv(env)
	for _, args := range [][]string{
		{},
		{"nope"},
		{"status"},
		{"status", "a b"},
		{"status", "-bogus", "x"},
		{"status", "-timeout", "0s", "x"},
		{"list", "a", "b"},
		{"list", "{x}"},
		{"watch"},
		{"watch", "a", "b"},
		{"release", "x"},
		{"release", "--force"},
		{"release", "--force", "--token", "abc", "x"},
		{"bump", "x"},
		{"bump", "x", "--to", "5", "--time"},
		{"bump", "x", "--to", "0"},
		{"bump", "x", "--to", "-3"},
		{"bump", "x", "--to", "+3"},
		{"bump", "x", "--to", "9007199254740991"},
		{"status", "-cluster=false", "-redis", "a:1,b:2", "x"},
		{"status", "-redis", "redis://[bad", "x"},
		{"status", "-prefix", "a b", "x"},
		{"s3-check", "-bucket", "b", "extra"},
		{"pg-status", "-postgres", "::nope::"},
	} {
		r := fencectl(t, e, args...)
		if r.code != exitUsage || r.stderr == "" || r.stdout != "" {
			t.Errorf("fencectl %q: exit %d, stdout %q, stderr %q; want exit 2, a message on stderr, nothing on stdout", args, r.code, r.stdout, r.stderr)
		}
	}
	r := runWant(t, e, 0, "help")
	if !strings.Contains(r.stdout, "release") || !strings.Contains(r.stdout, "pg-status") {
		t.Errorf("help lists no commands:\n%s", r.stdout)
	}
	runWant(t, e, 0, "status", "-h")
	// Unreachable Redis: a failure, saying where it looked.
	r = runWant(t, nil, 1, "status", "-redis", "127.0.0.1:1", "-timeout", "2s", "x")
	if !strings.Contains(r.stderr, "127.0.0.1:1") {
		t.Errorf("the error does not name the address: %s", r.stderr)
	}
}

func TestList(t *testing.T) {
	env := testenv.Redis(t)
	ctx := context.Background()
	prefix := env.Prefix + "*[p]" // glob characters in the prefix are matched literally
	c := newLeases(t, env.Client, &lease.Options{KeyPrefix: prefix, Identity: "lister/1"})
	l := acquire(t, c, env.Name("b-held"), time.Minute)
	done := acquire(t, c, env.Name("a-released"), time.Minute)
	if err := done.Release(ctx); err != nil {
		t.Fatal(err)
	}
	acquire(t, newLeases(t, env.Client, nil), env.Name("other-prefix"), time.Minute)
	// A key under the prefix that is no lease's is skipped.
	if err := env.Client.Set(ctx, prefix+":{"+env.Name("x")+"}:other", "1", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	r := runWant(t, redisEnv(env), 0, "list", "-json", "-prefix", prefix, env.Prefix+"*")
	got := decode[[]leaseStatus](t, r)
	want := []leaseStatus{
		{Name: env.Name("a-released"), Last: uint64(done.Token())},
		{Name: env.Name("b-held"), Held: true, Holder: uint64(l.Token()), Identity: "lister/1", Last: uint64(l.Token())},
	}
	if len(got) != 2 {
		t.Fatalf("list = %+v, want %+v", got, want)
	}
	got[1].RemainingMS = 0
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("list[%d] = %+v, want %+v", i, got[i], want[i])
		}
	}
	r = runWant(t, redisEnv(env), 0, "list", "-prefix", prefix, env.Name("b*"))
	if !strings.Contains(r.stdout, env.Name("b-held")) || !strings.Contains(r.stdout, " lister/1 ") || strings.Contains(r.stdout, "a-released") {
		t.Errorf("list with a pattern:\n%s", r.stdout)
	}
}

func TestListCluster(t *testing.T) {
	rc := testenv.StartRedisCluster(t, 3)
	cc := rc.Client(t)
	c := newLeases(t, cc, nil)
	ctx := context.Background()
	var names []string
	nodes := map[string]bool{}
	for i := range 12 {
		n := "cl-" + strconv.Itoa(i)
		names = append(names, n)
		acquire(t, c, n, time.Minute)
		slotNode, err := cc.MasterForKey(ctx, "{"+n+"}")
		if err != nil {
			t.Fatal(err)
		}
		nodes[slotNode.Options().Addr] = true
	}
	if len(nodes) < 2 {
		t.Fatalf("the names landed on %d node(s); the test needs several", len(nodes))
	}
	r := runWant(t, nil, 0, "list", "-json", "-cluster", "-redis", strings.Join(rc.Addrs, ","))
	got := decode[[]leaseStatus](t, r)
	if len(got) != len(names) {
		t.Fatalf("list on the cluster found %d leases, want %d: %s", len(got), len(names), r.stdout)
	}
	for _, s := range got {
		if !s.Held || s.Holder == 0 {
			t.Errorf("%+v: want held", s)
		}
	}
	// Without -cluster, one node holds only some of the leases: list (a
	// partial SCAN) and status (MOVED for another node's names) refuse,
	// saying what to add.
	for _, args := range [][]string{{"list", "-json"}, append([]string{"status"}, names...)} {
		r = fencectl(t, nil, append(args, "-redis", rc.Addrs[0])...)
		if r.code != exitFailed || r.stdout != "" || !strings.Contains(r.stderr, "is a Redis Cluster node: add -cluster") {
			t.Errorf("fencectl %s on one cluster node without -cluster: exit %d\nstdout: %s\nstderr: %s", args[0], r.code, r.stdout, r.stderr)
		}
	}
}

func TestReleaseForce(t *testing.T) {
	env := testenv.Redis(t)
	e := redisEnv(env)
	ctx := context.Background()
	name := env.Name("stuck")
	holder := acquire(t, newLeases(t, env.Client, &lease.Options{RenewInterval: 50 * time.Millisecond}), name, 30*time.Second)

	runWant(t, e, exitUsage, "release", name) // no --force: nothing sent
	r := runWant(t, e, exitFailed, "release", "--force", "--token", strconv.FormatUint(uint64(holder.Token())+1, 10), name)
	if !strings.Contains(r.stderr, holder.Token().String()) {
		t.Errorf("a refused release should name the holder's token: %s", r.stderr)
	}
	if holder.Err() != nil {
		t.Fatalf("the holder lost its lease to a refused release: %v", holder.Err())
	}

	// A waiter, woken by the release's notification long before the
	// holder's 30s TTL.
	got := make(chan *lease.Lease, 1)
	waitCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	go func() {
		l, err := newLeases(t, env.Client, nil).AcquireWait(waitCtx, name, time.Minute)
		if err != nil {
			t.Error(err)
		}
		got <- l
	}()
	time.Sleep(200 * time.Millisecond) // the waiter is refused and waits
	r = runWant(t, e, 0, "release", "--force", "-json", "--token", holder.Token().String(), name)
	rel := decode[releaseResult](t, r)
	if !rel.Released || rel.Holder != uint64(holder.Token()) || rel.RemainingMS <= 0 {
		t.Errorf("release --force reported %+v", rel)
	}
	select {
	case <-holder.Done():
		// Missing, or stolen when the waiter took the key first.
		if !errors.Is(holder.Err(), lease.ErrLost) {
			t.Errorf("the holder's lease ended with %v, want lost", holder.Err())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the holder did not see its lease gone")
	}
	l := <-got
	if l == nil {
		t.Fatal("the waiter got nothing")
	}
	defer l.Release(ctx)
	if l.Token() <= holder.Token() {
		t.Errorf("the next holder's token %v is not above %v", l.Token(), holder.Token())
	}
	if err := waitCtx.Err(); err != nil {
		t.Errorf("the waiter woke only at its deadline: %v", err)
	}

	other := env.Name("free")
	r = runWant(t, e, 0, "release", "--force", other)
	if !strings.Contains(r.stdout, "not held") {
		t.Errorf("release of a free lease: %q", r.stdout)
	}
}

func TestBump(t *testing.T) {
	env := testenv.Redis(t)
	e := redisEnv(env)
	ctx := context.Background()
	c := newLeases(t, env.Client, nil)
	name := env.Name("bump")
	l := acquire(t, c, name, time.Minute)
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	tok := uint64(l.Token())

	// Never lowers.
	r := runWant(t, e, 0, "bump", "-json", name, "--to", strconv.FormatUint(tok-1, 10))
	if b := decode[bumpResult](t, r); b.Changed || b.Before != tok || b.After != tok {
		t.Errorf("bump below the counter: %+v", b)
	}
	// Raises: the next token is above the target.
	target := uint64(time.Now().Add(leasearg.MaxAhead / 2).UnixMicro())
	r = runWant(t, e, 0, "bump", name, "--to", strconv.FormatUint(target, 10))
	if !strings.Contains(r.stdout, "bumped") {
		t.Errorf("bump text: %q", r.stdout)
	}
	l2 := acquire(t, c, name, time.Minute)
	if uint64(l2.Token()) <= target {
		t.Errorf("token after bump --to %d = %v", target, l2.Token())
	}
	// A held name: refused, naming the holder.
	r = runWant(t, e, exitFailed, "bump", name, "--time")
	if !strings.Contains(r.stderr, "held by token "+l2.Token().String()) {
		t.Errorf("bump of a held name: %s, want refused naming the holder", r.stderr)
	}
	if err := l2.Release(ctx); err != nil {
		t.Fatal(err)
	}
	// Ahead of the server's clock by more than leasearg.MaxAhead: refused,
	// saying why and what to do.
	ahead := uint64(time.Now().Add(time.Hour).UnixMicro())
	r = runWant(t, e, exitFailed, "bump", name, "--to", strconv.FormatUint(ahead, 10))
	if !strings.Contains(r.stderr, "ahead of the server's clock") || !strings.Contains(r.stderr, "bump --time") {
		t.Errorf("bump an hour ahead: %s, want refused naming the clock and --time", r.stderr)
	}
	// --time on a counter that was lost.
	lost := env.Name("lost")
	before := uint64(time.Now().UnixMicro())
	r = runWant(t, e, 0, "bump", "-json", "--time", lost)
	if b := decode[bumpResult](t, r); !b.Changed || b.Before != 0 || b.After < before {
		t.Errorf("bump --time: %+v, want changed from 0 to at least %d", b, before)
	}
	// A counter that is not a token: an error naming it, nothing changed.
	bad := env.Name("garbage")
	key := counterKey(bad)
	if err := env.Client.Set(ctx, key, "12ab", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	r = runWant(t, e, exitFailed, "bump", bad, "--to", "5")
	if !strings.Contains(r.stderr, key) {
		t.Errorf("error does not name the counter %s: %s", key, r.stderr)
	}
	if v, _ := env.Client.Get(ctx, key).Result(); v != "12ab" {
		t.Errorf("counter changed to %q", v)
	}
	// Leading zeros compare as numbers.
	zeros := env.Name("zeros")
	zkey := counterKey(zeros)
	if err := env.Client.Set(ctx, zkey, "0000000000000000000042", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	r = runWant(t, e, 0, "bump", "-json", zeros, "--to", "100")
	if b := decode[bumpResult](t, r); !b.Changed || b.Before != 42 {
		t.Errorf("bump over a counter with leading zeros: %+v", b)
	}
}

// readEvent reads the next watch line as JSON.
func readEvent(t *testing.T, ch <-chan string) watchEvent {
	t.Helper()
	select {
	case line, ok := <-ch:
		if !ok {
			t.Fatal("watch exited")
		}
		var ev watchEvent
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("watch line %q: %v", line, err)
		}
		return ev
	case <-time.After(20 * time.Second):
		t.Fatal("no watch event within 20s")
	}
	return watchEvent{}
}

func TestWatch(t *testing.T) {
	env := testenv.Redis(t)
	e := redisEnv(env)
	ctx := context.Background()
	name := env.Name("watched")
	c := newLeases(t, env.Client, nil)
	ch, cmd := lines(t, e, "watch", "-json", "-interval", "20ms", "-count", "7", name)
	want := func(event string, tok fence.Token) {
		t.Helper()
		ev := readEvent(t, ch)
		if ev.Event != event || ev.Name != name || (tok != 0 && ev.Token != uint64(tok)) {
			t.Fatalf("watch printed %+v, want %s of token %v", ev, event, tok)
		}
	}
	want(evNever, 0)
	a := acquire(t, c, name, 30*time.Second)
	want(evGrant, a.Token())
	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}
	want(evRelease, a.Token())
	// A holder that dies: its key expires.
	lock := lockKey(name)
	if err := env.Client.Set(ctx, lock, "123:dead", 300*time.Millisecond).Err(); err != nil {
		t.Fatal(err)
	}
	want(evGrant, 123)
	want(evExpire, 123)
	b := acquire(t, c, name, 30*time.Second)
	want(evGrant, b.Token())
	runWant(t, e, 0, "release", "--force", name)
	want(evRelease, b.Token())
	if err := cmd.Wait(); err != nil {
		t.Fatalf("watch -count 7 exit: %v", err)
	}
}

// Grants that begin and end between two reads are not silently lost: watch
// reports them as missed, with the last token issued.
func TestWatchReportsMissedGrants(t *testing.T) {
	env := testenv.Redis(t)
	ctx := context.Background()
	name := env.Name("watched")
	c := newLeases(t, env.Client, nil)
	ch, cmd := lines(t, redisEnv(env), "watch", "-json", "-interval", "1s", "-count", "2", name)
	if ev := readEvent(t, ch); ev.Event != evNever {
		t.Fatalf("first event %+v, want never", ev)
	}
	var last fence.Token
	for range 3 { // well inside one poll interval, and no waiter: no release is published
		l := acquire(t, c, name, 30*time.Second)
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
		last = l.Token()
	}
	if ev := readEvent(t, ch); ev.Event != evMissed || ev.Token != uint64(last) {
		t.Fatalf("watch printed %+v, want missed with the last token %v", ev, last)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("watch -count 2 exit: %v", err)
	}
}

func TestWatchText(t *testing.T) {
	env := testenv.Redis(t)
	name := env.Name("watched")
	l := acquire(t, newLeases(t, env.Client, nil), name, 30*time.Second)
	ch, _ := lines(t, redisEnv(env), "watch", name)
	select {
	case line := <-ch:
		if !strings.Contains(line, " held ") || !strings.Contains(line, "token="+l.Token().String()) || !strings.Contains(line, "remaining=") {
			t.Errorf("first line %q", line)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no line")
	}
}

// lockKey and counterKey are the Redis keys of name's lease (redislease's
// package doc).
func lockKey(name string) string    { return leasearg.DefaultKeyPrefix + ":{" + name + "}:lock" }
func counterKey(name string) string { return leasearg.DefaultKeyPrefix + ":{" + name + "}:token" }

// watch -count 1 prints the lease's state and exits, also when nothing
// happens to it.
// TestWatchCountOneOnAnIdleLease: watch -count 1 ends after its first
// line, which tells a name never granted ("never") from one granted and
// released ("free", with the last token issued); status's HELD column says
// the same.
func TestWatchCountOneOnAnIdleLease(t *testing.T) {
	env := testenv.Redis(t)
	name := env.Name("idle")
	first := func(want string) watchEvent {
		t.Helper()
		done := make(chan result, 1)
		go func() { done <- fencectl(t, redisEnv(env), "watch", "-json", "-count", "1", name) }()
		select {
		case r := <-done:
			ev := decode[watchEvent](t, r)
			if r.code != 0 || ev.Event != want {
				t.Fatalf("watch -count 1: exit %d, %+v; want 0 and %s", r.code, ev, want)
			}
			return ev
		case <-time.After(10 * time.Second):
			t.Fatal("watch -count 1 on an idle lease still runs after 10s")
		}
		return watchEvent{}
	}
	first(evNever)
	if r := runWant(t, redisEnv(env), 0, "status", name); !strings.Contains(r.stdout, " never ") {
		t.Errorf("status of a name never granted:\n%s", r.stdout)
	}
	l := acquire(t, newLeases(t, env.Client, nil), name, 30*time.Second)
	if err := l.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	if ev := first(evFree); ev.Token != uint64(l.Token()) {
		t.Errorf("free after a release: %+v; want the last token %d", ev, l.Token())
	}
	if r := runWant(t, redisEnv(env), 0, "status", name); strings.Contains(r.stdout, "never") || !strings.Contains(r.stdout, " no ") {
		t.Errorf("status of a released name:\n%s", r.stdout)
	}
}

// A lease whose TTL is shorter than the poll interval, released before
// its TTL ran out, is reported released, not expired.
func TestWatchShortTTLReleaseIsNoExpiry(t *testing.T) {
	env := testenv.Redis(t)
	name := env.Name("short")
	c := newLeases(t, env.Client, &lease.Options{Identity: "short/1"})
	ch, cmd := lines(t, redisEnv(env), "watch", "-json", "-interval", "2s", "-count", "3", name)
	if ev := readEvent(t, ch); ev.Event != evNever {
		t.Fatalf("first event %+v, want never", ev)
	}
	l := acquire(t, c, name, time.Second) // renewed every 333ms, shorter than the 2s poll
	time.Sleep(2500 * time.Millisecond)   // the watch's first poll sees it
	if ev := readEvent(t, ch); ev.Event != evGrant || ev.Token != uint64(l.Token()) || ev.Identity != "short/1" {
		t.Fatalf("watch printed %+v, want the grant of %v by short/1", ev, l.Token())
	}
	if err := l.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	if ev := readEvent(t, ch); ev.Event != evRelease || ev.Token != uint64(l.Token()) {
		t.Fatalf("watch printed %+v, want the release of %v", ev, l.Token())
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("watch exit: %v", err)
	}
}
