package lease

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/backoff"
	"github.com/fencekit/fencekit/internal/valid"
)

// Campaign is leader election on the lease name: it waits to lead (see
// [Client.AcquireWait]), runs lead with a context that ends when the lease
// ends or ctx does and with the term's token, and campaigns again when the
// term ends, until ctx ends. At most one process leads a name at a time as
// long as its Context is live; each term's token is larger than every
// earlier term's, so fenced storage refuses a deposed leader that has not
// noticed yet (a paused process).
//
// A term ends in one of three ways:
//   - the lease is lost (lead's context ends with [ErrLost]): Campaign
//     campaigns again at once, waiting for whoever took over;
//   - lead returns, with nil or an error (logged): Campaign steps down,
//     releasing the lease so that a waiting candidate takes over within a
//     round trip or two, pauses (ttl/10, doubling while lead keeps failing,
//     up to ttl) so that another candidate can win, then campaigns again;
//   - ctx ends: lead's context ends with ctx's cause, Campaign waits for
//     lead to return, releases the lease and returns.
//
// A killed leader's lease expires at its TTL: a waiting candidate takes
// over within the TTL plus the renew interval and a jitter of the time it
// died.
//
// Cost: per term, the round trips of AcquireWait, the heartbeat, and one
// for the release. A failed attempt (store unreachable) is logged and
// retried after a backoff (10ms doubling up to ttl, with jitter).
//
// Campaign returns nil when ctx ends (a normal shutdown), unless the last
// attempt to lead had failed: then an error wrapping ctx.Err() and that
// attempt's error (store unreachable, say); an error wrapping [ErrClosed]
// once the Client is closed ([Client.Close] ends the term's lease); at once
// an error wrapping [ErrInvalid] for a bad name, TTL, client or a nil lead.
func (c *Client) Campaign(ctx context.Context, name string, ttl time.Duration, lead func(ctx context.Context, tok fence.Token) error) error {
	if lead == nil {
		return valid.Invalid("lease: nil lead function passed to Campaign(%.40q)", name)
	}
	var (
		lastErr    error // the last failed attempt to lead
		failed     int   // attempts failed in a row
		leadFailed int   // terms in a row whose lead returned an error
	)
	for {
		l, err := c.AcquireWait(ctx, name, ttl)
		if ctx.Err() != nil {
			return campaignOver(ctx, name, lastErr)
		}
		if err != nil {
			if errors.Is(err, ErrInvalid) || errors.Is(err, ErrClosed) {
				return err
			}
			lastErr = err
			failed++
			c.cfg.logger.Warn("lease: campaign: attempt to lead failed; retrying", "name", name, "err", err)
			if backoff.Sleep(ctx, backoff.Delay(10*time.Millisecond, failed, ttl)) != nil {
				return campaignOver(ctx, name, lastErr)
			}
			continue
		}
		lastErr, failed = nil, 0
		leadErr, endErr := hold(ctx, l, ttl, lead)
		switch {
		case ctx.Err() != nil:
			return campaignOver(ctx, name, nil)
		case errors.Is(endErr, ErrLost):
			continue // deposed: wait for the new leader's term to end
		case leadErr != nil:
			leadFailed++
			c.cfg.logger.Warn("lease: campaign: lead returned an error; stepped down", "name", name, "token", uint64(l.Token()), "err", leadErr)
		default:
			leadFailed = 0
		}
		if backoff.Sleep(ctx, backoff.Delay(ttl/10, leadFailed+1, ttl)) != nil {
			return campaignOver(ctx, name, nil)
		}
	}
}

// campaignOver is what Campaign returns when ctx ends: nil, a normal
// shutdown, unless the attempts to lead were failing then.
func campaignOver(ctx context.Context, name string, lastErr error) error {
	if lastErr == nil {
		return nil
	}
	return fmt.Errorf("%w; campaign for %q over: %w", lastErr, name, ctx.Err())
}
