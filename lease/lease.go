package lease

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fencekit/fencekit/fence"
)

// Lease is one grant of a named lease. Its token orders it against every
// other grant of the same name; its Context lives while the lease is held.
// A Lease is safe for concurrent use.
type Lease struct {
	c     *Client
	g     *Grant
	name  string
	token fence.Token
	t     timing

	ctx    context.Context
	cancel context.CancelCauseFunc

	beats  atomic.Int32  // renewals running now
	fake   bool          // granted in a synctest bubble: the wheel serves it on that clock
	relSem chan struct{} // holds one token: serializes Release calls

	mu       sync.Mutex
	deadline time.Time // local deadline; the lease is lost when it passes
	nextBeat time.Time // when the next renewal (or retry) is due
	inflight time.Time // when the renewal in flight was sent, zero if none
	ended    bool      // ctx cancelled (lost or released)
	frozen   bool      // tests only: the process "died", nothing more is sent
	hbErr    error     // last renewal error, nil after a success
	relDone  bool      // Release finished with a definite answer
	relErr   error     // its result, returned again by later calls

	// The wheel's fields, guarded by the Client's wheel.mu.
	wake time.Time // when the wheel looks at the lease next
	slot int       // index in the wheel's heap, -1 when not in it
}

// start makes the Lease for a grant whose request was sent at sent and
// launches its heartbeat.
func (c *Client) start(ctx context.Context, g *Grant, t timing, sent time.Time) *Lease {
	name, tok := g.Name, g.Token
	l := &Lease{c: c, g: g, name: name, token: tok, t: t, fake: inBubble(sent), relSem: make(chan struct{}, 1), slot: -1}
	// The lease's context keeps ctx's values (trace ids, loggers) but not
	// its cancellation: Acquire's ctx often ends long before the work.
	parent := ctx
	if _, ok := ctx.Deadline(); ok || ctx.Done() != nil {
		parent = context.WithoutCancel(ctx)
	}
	l.ctx, l.cancel = context.WithCancelCause(parent)
	l.mu.Lock()
	l.deadline = t.deadline(sent)
	l.nextBeat = sent.Add(t.interval)
	if now := time.Now(); !now.Before(l.deadline) {
		// The reply came too late: Redis may expire the key any moment.
		// End the lease before the caller sees it.
		l.endLocked(&LostError{Name: name, Token: tok, Cause: CauseExpired,
			Err: fmt.Errorf("the acquire reply came %v after the request, more than the TTL minus the drift margin", now.Sub(sent))})
	} else {
		c.wheel.set(l, l.nextBeat) // before the deadline: interval < TTL - margin
	}
	l.mu.Unlock()
	return l
}

// Token returns the lease's fencing token: present it with every write to
// fenced storage.
func (l *Lease) Token() fence.Token { return l.token }

// Name returns the lease's name.
func (l *Lease) Name() string { return l.name }

// Context returns a context that is cancelled when the lease ends: with a
// cause wrapping [ErrLost] when it is lost, [ErrReleased] when released
// (see context.Cause). It carries the values of Acquire's context but not
// its cancellation or deadline. It is cancelled at the local deadline
// (request sent + TTL - drift margin) at the latest, before Redis can grant
// the lease to anyone else, provided this process is running: a paused
// process cannot notice, which is why writes carry the token.
func (l *Lease) Context() context.Context { return l.ctx }

// Done returns a channel closed, exactly once, when the lease ends.
func (l *Lease) Done() <-chan struct{} { return l.ctx.Done() }

// Err returns nil while the lease is held, then why it ended: an error
// wrapping [ErrLost] (a [*LostError]) or [ErrReleased].
func (l *Lease) Err() error {
	if l.ctx.Err() == nil {
		return nil
	}
	return context.Cause(l.ctx)
}

// Deadline returns the current local deadline: when the lease will be
// considered lost unless a renewal sent before then is confirmed.
func (l *Lease) Deadline() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.deadline
}

// end cancels the lease's context with cause, once. It reports whether this
// call ended it.
func (l *Lease) end(cause error) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.endLocked(cause)
}

func (l *Lease) endLocked(cause error) bool {
	if l.ended {
		return false
	}
	l.ended = true
	l.c.wheel.remove(l)
	// Count before cancelling, so that whoever wakes on Done sees the
	// count. Log after, and not under l.mu: the user's handler may block (a
	// full pipe), and the Context must end at the deadline all the same.
	lost, isLost := cause.(*LostError) // causes are never wrapped
	if isLost {
		l.c.m.lost(l.ctx, lost.Cause)
	}
	l.cancel(cause) // also cancels a renewal in flight
	if isLost {
		go l.c.cfg.logger.Warn("lease lost", "name", l.name, "token", uint64(l.token), "cause", lost.Cause, "err", lost.Err)
	}
	return true
}

// lastErrLocked explains a missed deadline: the last renewal error, or the
// request still waiting for its reply.
func (l *Lease) lastErrLocked() error {
	if !l.inflight.IsZero() {
		return fmt.Errorf("renewal sent %v before the deadline is still unanswered", l.deadline.Sub(l.inflight))
	}
	return l.hbErr
}

// Release ends the lease: it stops the heartbeat, cancels Context with
// [ErrReleased], then deletes the key if it is still this lease's and
// publishes the release to AcquireWait callers, in one round trip.
//
// It returns a [*LostError] (errors.Is ErrLost) when the key was no longer
// this lease's. A Release after a completed Release returns the same
// result and sends nothing. When ctx is already done, Release returns an
// error wrapping ctx.Err() and changes nothing, locally or in Redis: the
// lease stays held and renewed, and a later Release with a live context
// releases it. When the request itself fails (network), the lease has
// ended locally (Context is cancelled), the key expires at its TTL, and
// calling Release again retries the delete. A delete whose reply was lost
// and that go-redis resent (or that Release retried) finds the key gone
// and reports CauseMissing, though the key was deleted by this lease.
func (l *Lease) Release(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("lease: release %q: context already done, nothing changed: %w", l.name, err)
	}
	select {
	case l.relSem <- struct{}{}:
		defer func() { <-l.relSem }()
	case <-ctx.Done():
		return fmt.Errorf("lease: release %q: context done while another Release ran: %w", l.name, ctx.Err())
	}
	if l.relDone {
		return l.relErr
	}
	// Stop the heartbeat first. A renewal already in flight may still
	// reach Redis before the delete (it extends a key about to be deleted)
	// or after it (it finds no key and does nothing): either way harmless.
	l.end(ErrReleased)
	err := l.c.b.Release(ctx, l.g)
	var lost *LostError
	if err != nil && !errors.As(err, &lost) {
		return errScript("release", l.name, err)
	}
	l.relDone = true
	l.relErr = err
	return l.relErr
}
