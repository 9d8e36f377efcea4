package lease

import (
	"context"
	"errors"
	"time"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/valid"
)

// Do takes the lease name for ttl, waiting while someone else holds it (see
// [Client.AcquireWait]), runs fn with a context that ends when the lease
// ends or ctx does, and with the lease's token, then releases the lease.
// Present tok with every write fn makes to fenced storage.
//
// Cost: the round trips of AcquireWait (one when the lease is free), the
// heartbeat while fn runs, and one for the release.
//
// Do returns fn's error. When the lease was lost while fn ran (its Context
// ended with [ErrLost], or the release found the key gone or taken), the
// error also matches [ErrLost] and [fence.ErrFencedOut], even when fn
// returned nil: fn's writes may have raced a newer holder's. A panic in fn
// releases the lease and goes on. When ctx ends
// while fn runs, fn's context ends with ctx's cause and Do returns what fn
// returns. Other errors: those of AcquireWait (nothing ran); a failed
// release (the lease then expires at its TTL), joined to fn's error.
func (c *Client) Do(ctx context.Context, name string, ttl time.Duration, fn func(ctx context.Context, tok fence.Token) error) error {
	if fn == nil {
		return valid.Invalid("lease: nil function passed to Do(%.40q)", name)
	}
	l, err := c.AcquireWait(ctx, name, ttl)
	if err != nil {
		return err
	}
	fnErr, endErr := hold(ctx, l, ttl, fn)
	return errors.Join(fnErr, endErr)
}

// TryDo is Do without the wait: it takes the lease name for ttl only if
// nobody holds it now (one Acquire), runs fn as Do does, then releases the
// lease. When someone else holds it, TryDo returns (false, nil) at once and
// fn does not run: the form for cron jobs, where every worker fires on the
// same schedule and the ones that find the job running skip that round.
// (Do, which waits, would run the job once per worker, one after another.)
//
// Cost: one round trip when the lease is held; else one, the heartbeat
// while fn runs, and one for the release.
//
// ran reports whether fn ran. err is what Do would return once fn ran
// (fn's error, a loss while it ran, a failed release), or, with ran false,
// the error of the attempt: an error wrapping [ErrInvalid] for a nil fn, a
// bad name or TTL (nothing is sent), the store's or ctx's error.
func (c *Client) TryDo(ctx context.Context, name string, ttl time.Duration, fn func(ctx context.Context, tok fence.Token) error) (ran bool, err error) {
	if fn == nil {
		return false, valid.Invalid("lease: nil function passed to TryDo(%.40q)", name)
	}
	l, err := c.Acquire(ctx, name, ttl)
	if errors.Is(err, ErrNotAcquired) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	fnErr, endErr := hold(ctx, l, ttl, fn)
	return true, errors.Join(fnErr, endErr)
}

// hold runs fn under l and then releases l. fnErr is fn's result; endErr
// reports a loss of the lease while fn ran, or else a failed release.
func hold(ctx context.Context, l *Lease, ttl time.Duration, fn func(ctx context.Context, tok fence.Token) error) (fnErr, endErr error) {
	returned := false
	defer func() {
		if !returned { // fn panicked: release the lease, let the panic go on
			releaseBounded(ctx, l, ttl)
		}
	}()
	fnErr = runUnder(ctx, l, fn)
	returned = true
	lost := l.Err() // nil unless the lease was lost while fn ran
	relErr := releaseBounded(ctx, l, ttl)
	if errors.Is(lost, ErrLost) {
		return fnErr, lost // the release can only repeat it
	}
	return fnErr, relErr // a *LostError when the release found the key gone or taken
}

// runUnder runs fn with a context that is cancelled when l ends (its cause
// then is l's) or when ctx ends (ctx's cause), whichever comes first.
func runUnder(ctx context.Context, l *Lease, fn func(ctx context.Context, tok fence.Token) error) error {
	run, cancel := context.WithCancelCause(l.Context())
	defer cancel(nil)
	stop := context.AfterFunc(ctx, func() { cancel(context.Cause(ctx)) })
	defer stop()
	return fn(run, l.Token())
}

// releaseBounded releases l with ctx's values but not its cancellation (ctx
// may have ended: the lease must be released all the same), for at most
// ttl, after which the store has expired the grant anyway.
func releaseBounded(ctx context.Context, l *Lease, ttl time.Duration) error {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ttl)
	defer cancel()
	return l.Release(rctx)
}
