package lease

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/cause"
	"github.com/fencekit/fencekit/internal/valid"
)

// Lease is one grant of a named lease. Its token orders it against every
// other grant of the same name; its Context lives while the lease is held.
// A Lease is safe for concurrent use.
type Lease struct {
	c *Client
	g *Grant
	t timing

	ctx    context.Context
	cancel context.CancelCauseFunc

	mu        sync.Mutex
	deadline  time.Time     // local deadline; the lease is lost when it passes
	nextBeat  time.Time     // when the next renewal (or retry) is due
	inflight  time.Time     // when the renewal in flight was sent, zero if none
	ended     bool          // ctx cancelled (lost or released)
	hbErr     error         // last renewal error, nil after a success
	storeErr  error         // last renewal error not a context's end, nil after a success
	releasing bool          // a Release is in flight
	relWait   chan struct{} // closed when it returns; made by the first Release that waits for it
	relDone   bool          // a Release finished with a definite answer
	relErr    error         // its result, returned again by later calls

	// The heartbeat's fields, guarded by the Client's heartbeat.mu.
	wake time.Time // when the heartbeat looks at the lease next
	slot int       // index in the heartbeat's heap, -1 when not in it
}

// start makes the Lease for grant g, whose request was sent at sent, and
// puts it in the heartbeat. It reports false, with the lease ended, when
// the Client was closed meanwhile.
func (c *Client) start(ctx context.Context, g *Grant, t timing, sent time.Time) (*Lease, bool) {
	l := &Lease{c: c, g: g, t: t, slot: -1}
	// The lease's context keeps ctx's values (trace ids, loggers) but not
	// its cancellation: Acquire's ctx often ends long before the work.
	parent := ctx
	if _, ok := ctx.Deadline(); ok || ctx.Done() != nil {
		parent = context.WithoutCancel(ctx)
	}
	l.ctx, l.cancel = context.WithCancelCause(parent)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.deadline = t.deadline(sent)
	l.nextBeat = sent.Add(t.interval)
	if now := time.Now(); !now.Before(l.deadline) {
		// The reply came too late: the store may expire the grant any
		// moment. End the lease before the caller sees it.
		l.endLocked(l.lostErr(CauseExpired,
			fmt.Errorf("the acquire reply came %v after the request, more than the TTL minus the drift margin", now.Sub(sent))))
		return l, true
	}
	if !c.hb.add(l, l.nextBeat) { // before the deadline: interval < TTL - margin
		l.endLocked(ErrReleased)
		return l, false
	}
	return l, true
}

// errNilLease is what a nil *Lease reports: its Err, Release and the
// cause of its Context.
var errNilLease = valid.Invalid("lease: nil *lease.Lease (the Acquire that returned it failed)")

// nilLeaseCtx is a nil *Lease's Context: cancelled, with errNilLease as
// its cause, so that work started under it stops at once.
var nilLeaseCtx = func() context.Context {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errNilLease)
	return ctx
}()

// Token returns the lease's fencing token: present it with every write to
// fenced storage. A nil *Lease has token 0, which every fenced store
// refuses.
func (l *Lease) Token() fence.Token {
	if l == nil {
		return 0
	}
	return l.g.Token
}

// Name returns the lease's name ("" for a nil *Lease).
func (l *Lease) Name() string {
	if l == nil {
		return ""
	}
	return l.g.Name
}

// Context returns a context that is cancelled when the lease ends: with a
// cause wrapping [ErrLost] when it is lost, [ErrReleased] when released
// (see context.Cause). It carries the values of Acquire's context but not
// its cancellation or deadline. It is cancelled at the local deadline
// (request sent + TTL - drift margin) at the latest, before the store can grant
// the lease to anyone else, provided this process is running: a paused
// process cannot notice, which is why writes carry the token. A nil
// *Lease's Context is already cancelled, with a cause matching [ErrInvalid].
func (l *Lease) Context() context.Context {
	if l == nil {
		return nilLeaseCtx
	}
	return l.ctx
}

// Done returns a channel closed, exactly once, when the lease ends (at
// once for a nil *Lease).
func (l *Lease) Done() <-chan struct{} { return l.Context().Done() }

// Err returns nil while the lease is held, then why it ended: an error
// wrapping [ErrLost] (a [*LostError]) or [ErrReleased]. For a nil *Lease it
// returns an error matching [ErrInvalid].
func (l *Lease) Err() error {
	if l == nil {
		return errNilLease
	}
	if l.ctx.Err() == nil {
		return nil
	}
	return context.Cause(l.ctx)
}

// Deadline returns the current local deadline: when the lease will be
// considered lost unless a renewal sent before then is confirmed (the zero
// time for a nil *Lease).
func (l *Lease) Deadline() time.Time {
	if l == nil {
		return time.Time{}
	}
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
	l.c.hb.remove(l)
	// Count before cancelling, so that whoever wakes on Done sees the
	// count. Log after, from a goroutine that Close joins, not under l.mu:
	// the user's handler may block (a full pipe), and this and the other
	// leases' Contexts must end at their deadlines all the same.
	lost, isLost := cause.(*LostError) // causes are never wrapped
	if isLost {
		l.c.m.lost(lost.Cause)
	}
	l.cancel(cause)
	if isLost {
		warn := func() {
			l.c.cfg.logger.Warn("lease lost", "name", l.g.Name, "token", uint64(l.g.Token), "identity", lost.Identity,
				"backend", lost.Backend, "cause", lost.Cause, "err", lost.Error())
		}
		if !l.c.warnings.Go(warn) {
			warn() // an Acquire that raced Close, ended in its caller's goroutine
		}
	}
	return true
}

// lostErr is the cause of l's loss: cause, err (may be nil) and who lost
// it where.
func (l *Lease) lostErr(cause string, err error) *LostError {
	return &LostError{Name: l.g.Name, Token: l.g.Token, Identity: l.c.cfg.identity, Backend: l.c.b.Name(), Cause: cause, Err: err}
}

// lastErrLocked explains a missed deadline: the last renewal error, or the
// request still waiting for its reply, after the last error from the store
// when that is not the same (a network error, then the renewal's deadline).
func (l *Lease) lastErrLocked() error {
	err := l.hbErr
	if !l.inflight.IsZero() {
		err = fmt.Errorf("renewal sent %v before the deadline is still unanswered", l.deadline.Sub(l.inflight))
	}
	if l.storeErr != nil && l.storeErr != err {
		return errors.Join(l.storeErr, err)
	}
	return err
}

// Release ends the lease, then deletes it in the store if it is still this
// lease's and wakes the AcquireWait callers, in one round trip.
//
// The lease ends locally first, whatever ctx is: no more renewals, Context
// cancelled with [ErrReleased], Done closed. Then the delete is sent with
// ctx. It returns a [*LostError] (errors.Is ErrLost) when the key was no
// longer this lease's. A Release after a completed Release returns the same
// result and sends nothing. When ctx is done, or the request fails
// (network), nothing is deleted and the key expires at its TTL; calling
// Release again retries the delete. A delete whose reply was lost and that
// the driver resent finds the grant gone and reports CauseMissing, though
// this lease deleted it. A nil *Lease returns an error matching
// [ErrInvalid] and sends nothing.
func (l *Lease) Release(ctx context.Context) error {
	if l == nil {
		return errNilLease
	}
	l.mu.Lock()
	l.endLocked(ErrReleased)
	for l.releasing { // another Release is in flight: wait for it
		if l.relWait == nil {
			l.relWait = make(chan struct{})
		}
		wait := l.relWait
		l.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return fmt.Errorf("lease: release %q: ended locally; context done while another Release ran, the key expires at its TTL: %w", l.g.Name, ctx.Err())
		}
		l.mu.Lock()
	}
	if l.relDone {
		defer l.mu.Unlock()
		return l.relErr
	}
	if err := ctx.Err(); err != nil {
		l.mu.Unlock()
		return fmt.Errorf("lease: release %q: ended locally; context already done, nothing sent, the key expires at its TTL: %w", l.g.Name, err)
	}
	l.releasing = true
	l.mu.Unlock()

	err := l.c.b.Release(ctx, l.g)
	definite := true
	if err != nil {
		if lost, ok := asLost(err); ok {
			err = l.lostErr(lost.Cause, lost.Err)
		} else {
			err, definite = errScript("release", l.g.Name, cause.With(ctx, err)), false
		}
	}
	l.mu.Lock()
	if definite {
		l.relDone, l.relErr = true, err
	}
	l.releasing = false
	if l.relWait != nil {
		close(l.relWait)
		l.relWait = nil
	}
	l.mu.Unlock()
	return err
}
