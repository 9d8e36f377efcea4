package lease

import (
	"context"
	"time"

	"github.com/fencekit/fencekit/fence"
)

// Backend is a store of leases that issues fencing tokens: Redis
// (lease/redislease), PostgreSQL (lease/pglease), etcd (lease/etcdlease),
// ZooKeeper (lease/zklease). A [Client] made by [NewClient] keeps
// everything else above it, once: name, TTL and identity checks,
// deadlines, the heartbeat, retries, Context and loss signalling, metrics,
// logs, AcquireWait's loop, Close.
//
// The contract every Backend keeps:
//
//   - Tokens: every token Acquire grants for a name is strictly greater than
//     every token granted for that name before (on any Client, in any
//     process), and at most 2^63-1 (see [fence.ErrInvalid]).
//   - One holder: while a grant is unexpired in the store, Acquire of the
//     same name by anyone refuses.
//   - Deadlines: the store keeps a grant at least TTL after the Acquire or
//     Renew request that granted or extended it was sent (the store's
//     expiry is counted from when it processed the request, which is later).
//     The Client counts its local deadline from just before it calls the
//     method, minus the drift margin; it ends the lease there unless a later
//     Renew succeeded.
//   - Loss is definite: Renew and Release report a grant that is no longer
//     the caller's as a [*LostError] with Cause [CauseMissing] (the store no
//     longer has it) or [CauseStolen] (someone else holds the name), and
//     optionally Err. The Client fills in Name, Token, Identity and Backend
//     and ends the lease at once.
//   - Any other error is transient and may have taken effect or not: the
//     Client retries renewals until the local deadline and never assumes a
//     failed Acquire granted nothing (an unanswered grant expires at its TTL).
//   - An error wrapping [ErrInvalid] means nothing was sent: the request is
//     one the store cannot express (say, a TTL finer than its precision).
//   - ctx: every method returns soon after ctx ends. A renewal's ctx carries
//     the earliest deadline of its batch (use it for socket deadlines); it
//     ends at that deadline or by Close, not when the batch's leases are
//     released.
//   - Concurrency: methods are called from many goroutines at once, and
//     Renew, Release and Inspect may run at the same time for one name.
//
// The Client never reads Grant.Value and never changes a Grant after
// Acquire returned it.
type Backend interface {
	// Name names the store in errors and logs: "redis",
	// "postgres", "etcd", "zookeeper". It is constant.
	Name() string

	// Acquire grants name for ttl to identity (Options.Identity, stored
	// with the grant for Inspect) if nobody holds it, in one round trip
	// when the store allows. When someone holds it, it returns a
	// [*NotAcquiredError] with the holder's token (0 when unknown),
	// identity ("" when unknown) and remaining TTL, read in the same step
	// as the refusal. The Client has validated name, ttl (whole
	// milliseconds, at least [MinTTL]) and identity.
	Acquire(ctx context.Context, name string, ttl time.Duration, identity string) (*Grant, error)

	// Renew extends each grant of batch by its TTL, counted from now, and
	// returns one error per grant (len(batch) of them, or nil when all
	// were extended): nil when batch[i] was extended, a [*LostError] when
	// it is definitely lost, another error when its outcome is unknown.
	// The grants of a batch are the renewals that fell due together: send
	// them in as few round trips as the store allows (Redis: one pipeline
	// per node). Renew must not keep batch after it returns.
	Renew(ctx context.Context, batch []*Grant) []error

	// Release deletes g if it is still the holder and wakes the name's
	// waiters (see Watch). It returns nil when deleted, a [*LostError] when
	// g was no longer the holder, another error when the outcome is unknown.
	Release(ctx context.Context, g *Grant) error

	// Watch starts listening for releases of name before AcquireWait's
	// first attempt, so that no release after that attempt is missed. A
	// store without notifications may return a Watch that never wakes:
	// AcquireWait then retries at the holder's remaining TTL.
	Watch(ctx context.Context, name string) (Watch, error)

	// Inspect reads, in one round trip and changing nothing, who holds name
	// and the last token issued for it.
	Inspect(ctx context.Context, name string) (Info, error)

	// Close ends every goroutine the backend started (background deletes,
	// listeners), gives back what grants never released still hold (a
	// lost lease's connection or node), and returns when that is done, or
	// when ctx ends: then with an error wrapping ctx.Err() that says what
	// is left. The Client calls it once, last in [Client.Close], after its
	// leases were released and its watches closed. It does not close the
	// store's client.
	Close(ctx context.Context) error
}

// Operator is what a [Backend] implements for the operator calls of
// [Client]: Names, ForceRelease and Bump (fencectl's list, release --force
// and bump). The Client has validated name, pattern and to, and wraps
// errors with the call and the name. A Backend without it, or that cannot
// do one call, returns an error wrapping [ErrUnsupported] that says what
// to do instead; the Client returns it as it is.
type Operator interface {
	// Names returns, sorted, the names that have a holder or a token and
	// match the glob pattern ('*' any run of characters, '?' one).
	Names(ctx context.Context, pattern string) ([]string, error)

	// ForceRelease ends name's grant whoever holds it, or only if its
	// token is only (when not 0), and wakes the name's waiters. It returns
	// the holder it found (Held false: nothing to release), with Last 0.
	ForceRelease(ctx context.Context, name string, only fence.Token) (Info, error)

	// Bump makes every later grant of name carry a token greater than to,
	// never lowering tokens, and returns the name's last token before and
	// after. It refuses, changing nothing, when name is held and when to
	// is above the name's tokens and more than a second above the store's
	// clock (an error wrapping [ErrInvalid]).
	Bump(ctx context.Context, name string, to fence.Token) (before, after fence.Token, err error)
}

// Grant is one lease granted by a [Backend].
type Grant struct {
	Name  string
	Token fence.Token
	TTL   time.Duration
	// Value is the backend's own state for this grant (Redis: the lock
	// key's value and keys; etcd: the lease ID; PostgreSQL: the row's
	// owner id). The Client passes it back to Renew and Release untouched.
	Value any
}

// Watch reports releases of one name to [Client.AcquireWait].
type Watch interface {
	// Wait returns nil when a release of the name was seen since the Watch
	// was made or since the previous Wait returned, else ctx's error when
	// ctx ends first. A spurious nil return is allowed (AcquireWait just
	// tries again).
	Wait(ctx context.Context) error
	// Close stops listening.
	Close() error
}

// Info is what [Client.Inspect] reads about a name.
type Info struct {
	Held      bool          // someone holds the lease now
	Holder    fence.Token   // the holder's token (0 when not held or not written by fencekit)
	Identity  string        // the holder's Options.Identity ("" when not held or unknown)
	Remaining time.Duration // the holder's remaining TTL (0 when not held, negative when the key has no expiry)
	Last      fence.Token   // the last token issued for the name (0 when none)
}
