package lease

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/fencekit/fencekit/internal/cause"
	"github.com/fencekit/fencekit/internal/join"
	"github.com/fencekit/fencekit/internal/leasearg"
	"github.com/fencekit/fencekit/internal/valid"
)

// Client grants leases from a [Backend] (lease/redislease, lease/pglease,
// lease/etcdlease, lease/zklease make one) and keeps them:
// it renews them, ends them at their local deadline, and signals their
// loss. It is safe for concurrent use.
type Client struct {
	b         Backend
	cfg       config
	m         *metrics
	hb        heartbeat      // renews every lease (heartbeat.go)
	observers sync.WaitGroup // Observe's goroutines and the AcquireWait calls: they watch the store; joined by Close
	warnings  join.Group     // "lease lost" warnings being written, joined by Close
}

// ErrClosed is returned by every call of a [Client] after [Client.Close].
var ErrClosed = errors.New("lease: client closed")

// NewClient returns a client that stores leases in b; every issuer's New
// (lease/redislease, lease/pglease, ...) makes its client with it. opts may
// be nil for the defaults (the backend reads KeyPrefix itself, if it uses
// one). NewClient sends nothing.
//
// Errors: an error wrapping [ErrInvalid] for a nil backend or an invalid
// option. A typed nil inside b (a nil *T whose methods dereference it) is
// the issuer's to catch: every issuer's New refuses a nil client.
func NewClient(b Backend, opts *Options) (*Client, error) {
	if b == nil {
		return nil, valid.Invalid("lease: NewClient: nil Backend")
	}
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	return newClient(b, cfg), nil
}

func newClient(b Backend, cfg config) *Client {
	c := &Client{b: b, cfg: cfg, m: newMetrics(cfg.meters, cfg.logger)}
	c.startHeartbeat()
	return c
}

// errNilClient is what every method of a nil *Client returns.
var errNilClient = valid.Invalid("lease: nil *lease.Client")

// Acquire tries once to take the lease name for ttl, in one round trip. On
// success the lease renews itself every RenewInterval (default ttl/3) until
// [Lease.Release] or until it is lost; its token is greater than the token
// of every earlier grant of name. It never returns a lease that has
// already ended: when the reply arrives after the local deadline (sent +
// ttl - drift margin) it gives the grant back and returns a [*LostError]
// with CauseExpired (errors.Is ErrLost).
//
// Errors: a [*NotAcquiredError] (errors.Is ErrNotAcquired) carrying the
// holder's remaining TTL when someone else holds it; an error wrapping
// [ErrInvalid] for a bad name or ttl (nothing is sent); the context's or
// the store's error otherwise, matching context.Cause(ctx) once ctx has
// ended (a store client's own timeout at ctx's deadline included). After a network or context error the grant
// may still have happened in the store without its reply arriving: it then
// expires ttl after the request, unrenewed.
func (c *Client) Acquire(ctx context.Context, name string, ttl time.Duration) (*Lease, error) {
	t, err := c.check(name, ttl)
	if err != nil {
		return nil, err
	}
	return c.acquire(ctx, name, t)
}

// check validates everything that needs no store.
func (c *Client) check(name string, ttl time.Duration) (timing, error) {
	if c == nil {
		return timing{}, errNilClient
	}
	if err := leasearg.Name(name); err != nil {
		return timing{}, fmt.Errorf("lease: %w", err)
	}
	return c.cfg.timingFor(ttl)
}

func (c *Client) acquire(ctx context.Context, name string, t timing) (*Lease, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("lease: acquire %q: nothing sent: %w", name, err)
	}
	if c.closed() {
		return nil, fmt.Errorf("%w: acquire %q: nothing sent", ErrClosed, name)
	}
	sent := time.Now()
	g, err := c.b.Acquire(ctx, name, t.ttl, c.cfg.identity)
	if err != nil && errors.Is(err, ErrNotAcquired) {
		c.m.acquireLatency(ctx, time.Since(sent), nil)
		return nil, err
	}
	c.m.acquireLatency(ctx, time.Since(sent), err)
	if err == nil {
		err = checkGrant(g, name, t.ttl)
	}
	if err != nil {
		return nil, errScript("acquire", name, cause.With(ctx, err))
	}
	c.m.acquired()
	l, ok := c.start(ctx, g, t, sent)
	if !ok { // Close ran meanwhile: give the grant back
		l.Release(ctx)
		return nil, fmt.Errorf("%w: acquire %q: the grant was given back", ErrClosed, name)
	}
	if err := l.Err(); err != nil { // the reply came after the local deadline
		l.Release(ctx)
		return nil, err
	}
	return l, nil
}

// checkGrant holds a backend to its contract on what it returns.
func checkGrant(g *Grant, name string, ttl time.Duration) error {
	switch {
	case g == nil:
		return errors.New("backend returned no grant and no error")
	case g.Name != name || g.TTL != ttl:
		return fmt.Errorf("backend granted %q for %v, asked %q for %v", g.Name, g.TTL, name, ttl)
	}
	if err := valid.Token(g.Token); err != nil {
		return fmt.Errorf("backend granted a bad token: %v", err) // not the caller's ErrInvalid
	}
	return nil
}

// Inspect reads, in one round trip and changing nothing, who holds name and
// the last token issued for it. The answer may be out of date when it
// arrives; it is for operators and tests, not for deciding who may write.
//
// Errors: an error wrapping [ErrInvalid] for a bad name (nothing is sent);
// the context's or the store's error otherwise.
func (c *Client) Inspect(ctx context.Context, name string) (Info, error) {
	if c == nil {
		return Info{}, errNilClient
	}
	if err := leasearg.Name(name); err != nil {
		return Info{}, fmt.Errorf("lease: %w", err)
	}
	if c.closed() {
		return Info{}, fmt.Errorf("%w: inspect %q: nothing sent", ErrClosed, name)
	}
	info, err := c.b.Inspect(ctx, name)
	if err != nil {
		return Info{}, errScript("inspect", name, err)
	}
	return info, nil
}

// endAll ends every lease in the heartbeat's heap with ErrReleased and
// returns them.
func (c *Client) endAll() []*Lease {
	leases := c.hb.leases()
	for _, l := range leases {
		l.end(ErrReleased)
	}
	return leases
}

// closed reports whether Close was called.
func (c *Client) closed() bool { return c.hb.isClosed() }

// Close ends every lease of c locally at once (no more renewals, Context
// cancelled with [ErrReleased]), waits for the renewals in flight to
// return, then releases the leases in the store with ctx, one round trip
// each, waits for the "lease lost" warnings being written, and closes the
// backend ([Backend.Close]), which gives back what leases lost and never
// released still hold in the store's client (an advisory lock's pool
// connection). Afterwards every call of c returns an error
// wrapping [ErrClosed], and c leaves no goroutine behind unless ctx ended
// first. It does not close the store's client.
//
// Errors: those of [Lease.Release] for leases found lost, joined; when ctx
// ends first, an error wrapping ctx.Err() that counts the leases left to
// expire at their TTL, or the warnings and backend work still running; an
// error wrapping ErrClosed when c was closed before.
func (c *Client) Close(ctx context.Context) error {
	if c == nil {
		return errNilClient
	}
	if !c.hb.close() {
		return fmt.Errorf("%w: close: called before", ErrClosed)
	}
	leases := c.endAll()
	c.hb.wait()        // cancels the renewals in flight
	c.observers.Wait() // ended by the same cancellation
	// A beat may have had leases out of the heap while endAll ran: they
	// are back in it now, and nothing else adds to it.
	leases = append(leases, c.endAll()...)

	var errs []error
	var notDeleted int
	var why error // the last failure, a message of this package
	for _, l := range leases {
		if err := ctx.Err(); err != nil {
			notDeleted++
			why = fmt.Errorf("lease: close: %w", err)
			continue
		}
		err := l.Release(ctx)
		if _, lost := asLost(err); lost {
			errs = append(errs, err)
		} else if err != nil {
			notDeleted++
			why = err
		}
	}
	if notDeleted > 0 {
		errs = append(errs, fmt.Errorf("%w; %d of %d leases not deleted, they expire at their TTL", why, notDeleted, len(leases)))
	}
	if n := c.warnings.Close(ctx); n > 0 {
		errs = append(errs, fmt.Errorf("lease: close: %d lease lost warnings still being written: %w", n, ctx.Err()))
	}
	if err := c.b.Close(ctx); err != nil {
		errs = append(errs, err) // it names its package
	}
	return errors.Join(errs...)
}
