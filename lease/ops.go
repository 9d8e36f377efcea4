package lease

import (
	"context"
	"errors"
	"fmt"
	"github.com/fencekit/fencekit/internal/valid"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/leasearg"
)

// ErrUnsupported is matched by the error of an operator call (Names,
// ForceRelease, Bump) that the issuer cannot do; the message says what to
// do instead.
var ErrUnsupported = errors.New("lease: not supported by this issuer")

// Names returns, sorted, the names of the leases that have a holder or a
// token and match the glob pattern: '*' any run of characters, '?' one
// (etcd also takes '[...]'). Cost: one round trip (Redis: a SCAN per page
// and master). For operators' tools; leases that were never granted are
// not listed.
//
// Errors: an error wrapping [ErrInvalid] for a pattern that can match no
// name (empty, with a brace, whitespace or a control character); nothing
// is sent.
func (c *Client) Names(ctx context.Context, pattern string) ([]string, error) {
	op, err := c.operator("names", pattern)
	if err != nil {
		return nil, err
	}
	if err := leasearg.Pattern(pattern); err != nil {
		return nil, fmt.Errorf("lease: names: %w", err)
	}
	names, err := op.Names(ctx, pattern)
	if err != nil {
		return nil, errScript("names", pattern, err)
	}
	return names, nil
}

// ForceRelease ends the lease name whoever holds it, or only if its
// holder's token is only (when not 0), and wakes its waiters: for a
// holder that is stuck. The holder sees its lease lost at its next
// renewal. It returns the holder it found: nothing was released when
// Held is false, or when only is not 0 and differs from Holder. Last is
// 0; Remaining is negative when the store keeps no expiry (ZooKeeper,
// PostgreSQL advisory locks). Cost: one round trip (ZooKeeper: three;
// PostgreSQL advisory mode four, and it terminates the holder's session).
//
// Errors: an error wrapping [ErrInvalid] for a bad name (nothing is sent);
// the store's error otherwise.
func (c *Client) ForceRelease(ctx context.Context, name string, only fence.Token) (Info, error) {
	op, err := c.operator("force release", name)
	if err != nil {
		return Info{}, err
	}
	if err := leasearg.Name(name); err != nil {
		return Info{}, fmt.Errorf("lease: force release: %w", err)
	}
	info, err := op.ForceRelease(ctx, name, only)
	if err != nil {
		return Info{}, errScript("force release", name, err)
	}
	return info, nil
}

// Bump makes every later grant of name carry a token greater than to,
// and never lowers tokens: after the store lost data, or to move past
// another issuer's tokens (docs/operations.md). It returns the name's last
// token before (0: none) and after; they are equal when the tokens were
// already at or above to. Cost: one round trip (ZooKeeper: three).
//
// Errors: an error wrapping [ErrInvalid] for a bad name or a to of 0 or
// above 2^53-2, the largest every issuer keeps (nothing is sent), and for a to more than a second above
// the store's clock and above the name's tokens (nothing changes: tokens
// ahead of the clock would not be recovered if the store lost them); an
// error naming the holder when name is held (bump it when free); one
// wrapping [ErrUnsupported] on etcd, whose tokens are revisions.
func (c *Client) Bump(ctx context.Context, name string, to fence.Token) (before, after fence.Token, err error) {
	op, err := c.operator("bump", name)
	if err != nil {
		return 0, 0, err
	}
	if err := leasearg.Name(name); err != nil {
		return 0, 0, fmt.Errorf("lease: bump: %w", err)
	}
	if to == 0 || to > leasearg.MaxBump {
		return 0, 0, valid.Invalid("lease: bump %q: token %d is out of range: 1 to %d", name, uint64(to), uint64(leasearg.MaxBump))
	}
	before, after, err = op.Bump(ctx, name, to)
	if errors.Is(err, ErrUnsupported) { // it says what to do instead
		return 0, 0, err
	}
	if err != nil {
		return 0, 0, errScript("bump", name, err)
	}
	return before, after, nil
}

// operator returns c's Backend as an Operator, or the error of the call
// op on arg.
func (c *Client) operator(op, arg string) (Operator, error) {
	if c == nil {
		return nil, errNilClient
	}
	if c.closed() {
		return nil, fmt.Errorf("%w: %s %q: nothing sent", ErrClosed, op, arg)
	}
	o, ok := c.b.(Operator)
	if !ok {
		return nil, fmt.Errorf("%w: %s %q: %s has no operator calls", ErrUnsupported, op, arg, c.b.Name())
	}
	return o, nil
}
