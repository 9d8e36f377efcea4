// Package leasetest is the conformance suite of fencekit's lease issuers:
// one set of tests that every store behind a *lease.Client passes (Redis,
// PostgreSQL, etcd, ZooKeeper), run against the real servers.
//
// A package runs it with [Run] for its [Issuer], and registers the suite's
// child processes from an init function or TestMain, before testenv.Main:
//
//	func init() { leasetest.Register(issuer) }
//	func TestMain(m *testing.M) { testenv.Main(m) }
//	func TestConformance(t *testing.T) { leasetest.Run(t, issuer) }
package leasetest

import (
	"context"
	"errors"
	"github.com/fencekit/fencekit/internal/valid"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/testenv"
	"github.com/fencekit/fencekit/lease"
)

// Issuer is one lease store under test.
type Issuer struct {
	Name string
	// TTL is the TTL of the suite's leases: short, and one the store can
	// express (etcd: whole seconds, and a renew interval of TTL/3 at least
	// etcd's 500ms expiry check, so 2s).
	TTL time.Duration
	// BadTTL is a TTL at least MinTTL that the store cannot express (etcd
	// 1500ms), or 0 when every whole-millisecond TTL is fine.
	BadTTL time.Duration
	// Grants is how many grants TestTokensIncrease makes (default 10,000).
	Grants int
	// Open makes the test's namespace: the clients it returns compete for
	// the same names, and nothing else does.
	Open func(t testing.TB) Namespace
	// FromEnv makes, in a child process, a client on the namespace whose
	// Env the parent passed.
	FromEnv func(ctx context.Context) (*lease.Client, error)
	// SessionBound marks an issuer whose lease lives in a server session
	// and ends with it, with no TTL on the server (PostgreSQL advisory
	// locks). Two tests check what such a lease promises instead:
	// ContextEndsBeforeNextGrant, that the holder's Context ends within one
	// renew interval of its connections' cut (the server frees the lock at
	// once, so a grant may come first: its token still fences);
	// PausedHolderFenced, that a paused holder keeps the lease until its
	// session is ended (the Namespace must be a [SessionEnder]).
	SessionBound bool
	// NoBump marks an issuer whose Client.Bump is refused with
	// lease.ErrUnsupported (etcd: its tokens are revisions).
	NoBump bool
}

// SessionEnder is a Namespace of a SessionBound issuer that can end the
// server sessions of the clients its Env made (pg_terminate_backend).
type SessionEnder interface {
	EndChildSessions(t testing.TB)
}

// Namespace is one test's share of a store.
type Namespace interface {
	// Client returns a new client with its own connections, closed at
	// cleanup.
	Client(t testing.TB, opts *lease.Options) *Conn
	// Env describes the namespace to a child process (see Issuer.FromEnv).
	Env() []string
}

// Conn is a lease client and handles on its connections.
type Conn struct {
	*lease.Client
	// Cut closes the client's connections: every later request fails.
	Cut func()
	// Sent counts the requests the client sent so far.
	Sent func() int64
}

// quiet is the options of the suite's clients: the losses it causes are
// expected, not logged.
var quiet = &lease.Options{Logger: slog.New(slog.DiscardHandler)}

// CloseAtCleanup closes c at the end of the test, before the connections
// it uses (cleanups run last-registered first), within 10 seconds.
func CloseAtCleanup(t testing.TB, c *lease.Client) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c.Close(ctx) // a cut client's releases fail: fine
	})
}

// Run runs the suite for iss, each test in a subtest.
func Run(t *testing.T, iss Issuer) {
	if iss.Grants == 0 {
		iss.Grants = 10_000
	}
	for _, tc := range []struct {
		name string
		fn   func(*testing.T, Issuer)
	}{
		{"OneHolderAtATime", testOneHolder},
		{"TokensIncrease", testTokensIncrease},
		{"ContextEndsBeforeNextGrant", testContextEndsFirst},
		{"ReleaseWakesWaiter", testReleaseWakesWaiter},
		{"KilledHolderTakenOver", testKilledHolder},
		{"PausedHolderFenced", testPausedHolder},
		{"BadInputSendsNothing", testBadInput},
		{"LongestNameWorks", testLongestName},
		{"IdentityStoredWithGrant", testIdentity},
		{"ObserveSeesEveryHolder", testObserve},
		{"CloseLeavesNoGoroutine", testCloseJoins},
		{"OperatorCalls", testOperator},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, iss) })
	}
}

// testOneHolder runs do (wait, work, release) on one name from three clients at once and checks
// that no two bodies overlap and that tokens grow in the order they run.
func testOneHolder(t *testing.T, iss Issuer) {
	ns := iss.Open(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const clients, rounds = 3, 15
	// A TTL no loaded machine's acquire reply outlives: a slow reply
	// ends the lease at once (the drift margin), which is right but is
	// not what this test is about.
	ttl := 10 * iss.TTL
	var inside atomic.Int32
	var mu sync.Mutex
	var last fence.Token
	var wg sync.WaitGroup
	for range clients {
		c := ns.Client(t, quiet)
		wg.Go(func() {
			for range rounds {
				err := do(ctx, c, "one", ttl, func(lctx context.Context, tok fence.Token) error {
					if n := inside.Add(1); n != 1 {
						t.Errorf("%d holders at once", n)
					}
					defer inside.Add(-1)
					mu.Lock()
					if tok <= last {
						t.Errorf("token %v after %v", tok, last)
					}
					last = tok
					mu.Unlock()
					time.Sleep(time.Millisecond)
					return lctx.Err()
				})
				if err != nil {
					t.Errorf("Do: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// do waits for the lease, runs fn under it and releases it.
func do(ctx context.Context, c *Conn, name string, ttl time.Duration, fn func(context.Context, fence.Token) error) error {
	l, err := c.AcquireWait(ctx, name, ttl)
	if err != nil {
		return err
	}
	err = fn(l.Context(), l.Token())
	return errors.Join(err, l.Release(ctx))
}

// testTokensIncrease makes iss.Grants grants of one name, alternating
// between two clients, and checks that each token exceeds the previous.
// testLongestName: a name of valid.MaxNameLen bytes (multi-byte runes and
// a slash) is a lease like any other: one holder, Inspect and Names see it,
// the next grant's token is greater. (One byte more is refused unsent:
// testBadInput.)
func testLongestName(t *testing.T, iss Issuer) {
	ns := iss.Open(t)
	ctx := context.Background()
	a, b := ns.Client(t, quiet), ns.Client(t, quiet)
	name := strings.Repeat("é", valid.MaxNameLen/2-1) + "/x"
	if len(name) != valid.MaxNameLen {
		t.Fatalf("name of %d bytes", len(name))
	}
	ttl := 10 * iss.TTL
	l, err := a.Acquire(ctx, name, ttl)
	if err != nil {
		t.Fatalf("Acquire of a %d-byte name: %v", len(name), err)
	}
	if _, err := b.Acquire(ctx, name, ttl); !errors.Is(err, lease.ErrNotAcquired) {
		t.Fatalf("second Acquire while held: %v, want ErrNotAcquired", err)
	}
	if info, err := b.Inspect(ctx, name); err != nil || !info.Held || info.Holder != l.Token() {
		t.Fatalf("Inspect: %+v, %v; want held by %v", info, err, l.Token())
	}
	names, err := b.Names(ctx, "é*")
	if err != nil || !slices.Contains(names, name) {
		t.Fatalf("Names(\"é*\"): %d names, %v; want the %d-byte name", len(names), err, len(name))
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	l2, err := b.Acquire(ctx, name, ttl)
	if err != nil || l2.Token() <= l.Token() {
		t.Fatalf("Acquire after release: %v, %v; want a token above %v", l2, err, l.Token())
	}
	if err := l2.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

func testTokensIncrease(t *testing.T, iss Issuer) {
	ns := iss.Open(t)
	ctx := context.Background()
	cs := [2]*Conn{ns.Client(t, quiet), ns.Client(t, quiet)}
	ttl := 10 * iss.TTL // no expiry between Acquire and Release, even on a loaded machine
	var last fence.Token
	start := time.Now()
	for i := range iss.Grants {
		l, err := cs[i%2].Acquire(ctx, "tokens", ttl)
		if err != nil {
			t.Fatalf("grant %d: %v", i, err)
		}
		if l.Token() <= last {
			t.Fatalf("grant %d: token %v after %v", i, l.Token(), last)
		}
		last = l.Token()
		if err := l.Release(ctx); err != nil {
			t.Fatalf("release %d: %v", i, err)
		}
	}
	t.Logf("%d grants, strictly increasing tokens, %v per Acquire+Release", iss.Grants, time.Since(start)/time.Duration(iss.Grants))
	info, err := cs[0].Inspect(ctx, "tokens")
	if err != nil || info.Held || info.Last != last {
		t.Fatalf("Inspect: %+v, %v; want free with Last %v", info, err, last)
	}
}

// testContextEndsFirst cuts the holder's connections, so that its
// renewals fail, while another client tries to take the lease every few
// milliseconds: the holder's Context must end before that client is
// granted the lease.
func testContextEndsFirst(t *testing.T, iss Issuer) {
	ns := iss.Open(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	holder, other := ns.Client(t, quiet), ns.Client(t, quiet)
	l, err := holder.Acquire(ctx, "ctx", iss.TTL)
	if err != nil {
		t.Fatal(err)
	}
	ended := make(chan time.Time, 1)
	go func() { <-l.Done(); ended <- time.Now() }()
	cut := time.Now()
	holder.Cut()
	if iss.SessionBound {
		select {
		case end := <-ended:
			t.Logf("holder's Context ended %v after the cut", end.Sub(cut))
		case <-time.After(iss.TTL/3 + iss.TTL/2): // the renew interval, and slack
			t.Fatalf("holder's Context still live %v after its connections were cut", time.Since(cut))
		}
	}
	for {
		l2, err := other.Acquire(ctx, "ctx", iss.TTL)
		if err == nil {
			granted := time.Now()
			select {
			case end := <-ended:
				t.Logf("holder's Context ended %v before the grant's reply", granted.Sub(end))
			default:
				if iss.SessionBound {
					break // checked above
				}
				t.Fatalf("token %v granted while the holder's Context (token %v) is live", l2.Token(), l.Token())
			}
			if !errors.Is(l.Err(), lease.ErrLost) || l2.Token() <= l.Token() {
				t.Fatalf("holder ended with %v; new token %v after %v", l.Err(), l2.Token(), l.Token())
			}
			var lost *lease.LostError
			if !errors.As(l.Err(), &lost) || lost.Backend == "" || lost.Identity == "" ||
				!strings.Contains(lost.Error(), lost.Backend) || !strings.Contains(lost.Error(), lost.Identity) {
				t.Fatalf("holder's loss %q does not name its store and identity", l.Err())
			}
			return
		}
		if !errors.Is(err, lease.ErrNotAcquired) {
			t.Fatal(err)
		}
		time.Sleep(3 * time.Millisecond)
	}
}

// testReleaseWakesWaiter releases a lease with a long TTL while another
// client waits for it: the waiter must be woken by the release (it would
// otherwise wait for the TTL). The hand-over time is logged, not asserted.
func testReleaseWakesWaiter(t *testing.T, iss Issuer) {
	ns := iss.Open(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const ttl = 30 * time.Second
	holder, waiter := ns.Client(t, quiet), ns.Client(t, quiet)
	var total time.Duration
	const rounds = 5
	for range rounds {
		l, err := holder.Acquire(ctx, "wake", ttl)
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan *lease.Lease, 1)
		sent := waiter.Sent()
		go func() {
			l2, err := waiter.AcquireWait(ctx, "wake", ttl)
			if err != nil {
				t.Error(err)
			}
			got <- l2
		}()
		// The waiter's attempt has left before the release does: it is
		// refused, and only the release can wake it before the TTL.
		testenv.Poll(t, 10*time.Second, "the waiter's first attempt", func() bool { return waiter.Sent() > sent })
		released := time.Now()
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
		l2 := <-got
		if l2 == nil {
			return
		}
		took := time.Since(released)
		total += took
		if took > ttl/2 {
			t.Fatalf("waiter took %v after the release: not woken by it", took)
		}
		if err := l2.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("release to waiter's grant: %v on average over %d rounds", total/rounds, rounds)
}

// testIdentity checks that the store keeps each grant's Options.Identity:
// Inspect and another client's refusal name the holder, nobody once it is
// released, and a client without the option shows "<hostname>/<pid>".
func testIdentity(t *testing.T, iss Issuer) {
	ns := iss.Open(t)
	ctx := context.Background()
	const who = "worker-3/417:blue" // a ':' too, which a key layout might split on
	holder := ns.Client(t, &lease.Options{Logger: quiet.Logger, Identity: who})
	other := ns.Client(t, quiet)
	l, err := holder.Acquire(ctx, "who", 10*iss.TTL)
	if err != nil {
		t.Fatal(err)
	}
	if info, err := other.Inspect(ctx, "who"); err != nil || !info.Held || info.Identity != who {
		t.Fatalf("Inspect of a held lease: %+v, %v; want held by %q", info, err, who)
	}
	_, err = other.Acquire(ctx, "who", iss.TTL)
	var na *lease.NotAcquiredError
	if !errors.As(err, &na) || na.Identity != who || !strings.Contains(err.Error(), who) {
		t.Fatalf("refusal %v; want it to name %q", err, who)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if info, err := other.Inspect(ctx, "who"); err != nil || info.Held || info.Identity != "" {
		t.Fatalf("Inspect after release: %+v, %v; want no holder", info, err)
	}
	l2, err := other.Acquire(ctx, "who", 10*iss.TTL)
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Release(ctx)
	host, _ := os.Hostname()
	want := host + "/" + strconv.Itoa(os.Getpid())
	if info, err := holder.Inspect(ctx, "who"); err != nil || info.Identity != want {
		t.Fatalf("Inspect of a default identity's grant: %+v, %v; want %q", info, err, want)
	}
}

// testBadInput checks that invalid names and TTLs are refused with
// ErrInvalid before anything is sent, in a short message that says
// "lease:" once.
func testBadInput(t *testing.T, iss Issuer) {
	ns := iss.Open(t)
	c := ns.Client(t, quiet)
	ctx := context.Background()
	before := c.Sent()
	names := []string{"", "a b", "x{y}", "tab\t", "nul\x00", strings.Repeat("n", valid.MaxNameLen+1), strings.Repeat("n", 16<<10), "\xff"}
	ttls := []time.Duration{0, -time.Second, lease.MinTTL - time.Millisecond, iss.TTL + time.Microsecond, lease.MaxTTL + time.Second}
	check := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, lease.ErrInvalid) || !errors.Is(err, fence.ErrInvalid) {
			t.Errorf("%.60s: %v, want ErrInvalid", what, err)
		} else if msg := err.Error(); strings.Count(" "+msg, " lease:") != 1 || len(msg) > 200 {
			t.Errorf("%.60s: %.300q, want a short message saying \"lease:\" once", what, msg)
		}
	}
	for _, n := range names {
		_, err := c.Acquire(ctx, n, iss.TTL)
		check("Acquire name "+n, err)
		_, err = c.AcquireWait(ctx, n, iss.TTL)
		check("AcquireWait name "+n, err)
		_, err = c.Inspect(ctx, n)
		check("Inspect name "+n, err)
		_, err = c.ForceRelease(ctx, n, 0)
		check("ForceRelease name "+n, err)
		_, _, err = c.Bump(ctx, n, 5)
		check("Bump name "+n, err)
	}
	for _, p := range []string{"", "a{", "}", "a b", "a\x00", "\xff"} {
		_, err := c.Names(ctx, p)
		check("Names pattern "+p, err)
	}
	for _, to := range []fence.Token{0, 1 << 53, valid.MaxToken, ^fence.Token(0)} {
		_, _, err := c.Bump(ctx, "ok", to)
		check("Bump to "+to.String(), err)
	}
	for _, ttl := range ttls {
		_, err := c.Acquire(ctx, "ok", ttl)
		check("Acquire TTL "+ttl.String(), err)
		_, err = c.AcquireWait(ctx, "ok", ttl)
		check("AcquireWait TTL "+ttl.String(), err)
	}
	if iss.BadTTL != 0 { // the store refuses it (AcquireWait watches first)
		_, err := c.Acquire(ctx, "ok", iss.BadTTL)
		check("Acquire TTL "+iss.BadTTL.String(), err)
	}
	if n := c.Sent() - before; n != 0 {
		t.Fatalf("%d requests sent for bad input", n)
	}
}

// CheckRenew checks the results of one Backend.Renew batch: errs[i] is nil
// where want[i] is "" (errs may be nil when every grant was extended), else
// a *lease.LostError with cause want[i].
func CheckRenew(t *testing.T, batch []*lease.Grant, errs []error, want []string) {
	t.Helper()
	if errs != nil && len(errs) != len(batch) {
		t.Fatalf("Renew of %d grants returned %d errors", len(batch), len(errs))
	}
	for i := range batch {
		var err error
		if errs != nil {
			err = errs[i]
		}
		var lost *lease.LostError
		switch {
		case want[i] == "" && err != nil:
			t.Errorf("renew %d: %v, want nil", i, err)
		case want[i] != "" && (!errors.As(err, &lost) || lost.Cause != want[i]):
			t.Errorf("renew %d: %v, want %s", i, err, want[i])
		}
	}
}
