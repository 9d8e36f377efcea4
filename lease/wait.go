package lease

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// AcquireWait takes the lease name for ttl, waiting while someone else holds
// it, until ctx ends. It subscribes to the lease's release channel first,
// then tries Acquire; while the lease is held it sleeps until a release is
// published (a graceful release hands over within a round trip or two) or
// until the holder's remaining TTL, reported by the refused attempt, has
// passed, plus a random jitter of up to Options.WaitJitter. Each attempt is
// one round trip, made after a notification or the holder's expiry; a
// backend that cannot be notified wakes it at an interval of its own
// instead (pglease through a transaction-pooling PgBouncer: every 200 ms).
//
// Errors: those of [Client.Acquire] other than ErrNotAcquired (when that is
// ctx's end and listening for releases had failed, joined after the
// store's error from that), and, when ctx ends first, a one-line error
// wrapping both ctx.Err() and the last refusal (a [*NotAcquiredError]); an
// error wrapping [ErrClosed] when [Client.Close] is called meanwhile (Close
// waits for the call to return).
func (c *Client) AcquireWait(ctx context.Context, name string, ttl time.Duration) (*Lease, error) {
	t, err := c.check(name, ttl)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("lease: wait for %q: %w", name, err)
	}
	if !c.addObserver() {
		return nil, fmt.Errorf("%w: wait for %q: nothing sent", ErrClosed, name)
	}
	defer c.observers.Done()
	// Close ends the wait (and Close waits for it), so that the watch is
	// closed before the backend is.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	defer context.AfterFunc(c.hb.ctx, func() { cancel(ErrClosed) })()
	// Listen first, so that a release after the first attempt cannot be
	// missed. If that fails (store down), the attempt below reports the
	// error or the wait falls back to the holder's TTL.
	w, werr := c.b.Watch(ctx, name)
	if werr != nil || w == nil {
		w = noWatch{}
	}
	defer w.Close()
	for {
		l, err := c.acquire(ctx, name, t)
		if err == nil {
			return l, nil
		}
		var na *NotAcquiredError
		if !errors.As(err, &na) {
			if context.Cause(ctx) == ErrClosed {
				return nil, fmt.Errorf("%w: wait for %q ended by Close", ErrClosed, name)
			}
			if werr != nil && !isContextEnd(werr) && isContextEnd(err) {
				return nil, fmt.Errorf("%w (listening for releases had failed: %w)", err, werr)
			}
			return nil, err
		}
		wait := na.Remaining
		if wait < 0 {
			// The key has no expiry: only a release (or ctx) ends the wait;
			// still look again after one TTL in case it was deleted silently.
			wait = t.ttl
		}
		if c.cfg.waitJitter > 0 {
			wait += rand.N(c.cfg.waitJitter)
		}
		if wait < time.Millisecond {
			wait = time.Millisecond
		}
		wctx, cancel := context.WithTimeout(ctx, wait)
		w.Wait(wctx)
		cancel()
		if context.Cause(ctx) == ErrClosed {
			return nil, fmt.Errorf("%w: wait for %q ended by Close", ErrClosed, name)
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w; waited until: %w", err, ctx.Err())
		}
	}
}

// isContextEnd reports whether err is a context's cancellation or deadline.
func isContextEnd(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// noWatch never sees a release: AcquireWait retries at the holder's TTL.
type noWatch struct{}

func (noWatch) Wait(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
func (noWatch) Close() error                   { return nil }
