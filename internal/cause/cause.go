// Package cause adds a context's cause to the errors of calls it cut off.
package cause

import (
	"context"
	"errors"
	"fmt"
)

// With returns err, wrapping also context.Cause(ctx) when ctx has ended for
// a reason err does not carry yet: a query or request cut off by a lost
// lease's Context then matches lease.ErrLost (and fence.ErrFencedOut), not
// only context.Canceled.
func With(ctx context.Context, err error) error {
	if err == nil || ctx.Err() == nil {
		return err
	}
	c := context.Cause(ctx)
	if c == nil || errors.Is(err, c) {
		return err
	}
	return fmt.Errorf("%w (%w)", err, c)
}
