package lease

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/fencekit/fencekit/fence"
)

var (
	// ErrNotAcquired means someone else holds the lease. Acquire returns it
	// wrapped in a [*NotAcquiredError] that says for how long.
	ErrNotAcquired = errors.New("lease: not acquired, held by another owner")

	// ErrLost is the cause of a lease's end when it was not released by its
	// holder: the key vanished or belongs to someone else, or the local
	// deadline passed without a confirmed renewal. Context, Err and Release
	// return it wrapped in a [*LostError]. It wraps [fence.ErrFencedOut].
	ErrLost error = &subError{msg: "lease: lost", parent: fence.ErrFencedOut}

	// ErrReleased is the cause of a lease's end after a successful
	// [Lease.Release] (or a Release that failed to reach Redis).
	ErrReleased = errors.New("lease: released")
)

// subError is a sentinel that also matches a more general one.
type subError struct {
	msg    string
	parent error
}

func (e *subError) Error() string { return e.msg }
func (e *subError) Unwrap() error { return e.parent }

// NotAcquiredError is returned by Acquire when another owner holds the
// lease. It unwraps to [ErrNotAcquired].
type NotAcquiredError struct {
	Name string
	// Remaining is the holder's remaining TTL as Redis reported it in the
	// same round trip; negative when the key has no expiry (someone set it
	// outside fencekit).
	Remaining time.Duration
	// Holder is the current holder's token, 0 when the key was not written
	// by fencekit.
	Holder fence.Token
}

// Error names the lease, the holder's token and its remaining TTL.
func (e *NotAcquiredError) Error() string {
	rem := "with no expiry"
	if e.Remaining >= 0 {
		rem = "for " + e.Remaining.String()
	}
	return "lease: " + strconv.Quote(e.Name) + " is held by token " + e.Holder.String() + " " + rem
}

// Unwrap returns [ErrNotAcquired].
func (e *NotAcquiredError) Unwrap() error { return ErrNotAcquired }

// Causes of a lost lease, as LostError.Cause and the lease_lost metric's
// "cause" attribute.
const (
	CauseExpired = "expired" // the local deadline passed without a confirmed renewal
	CauseMissing = "missing" // Redis no longer has the key (expired, deleted, data lost)
	CauseStolen  = "stolen"  // the key holds another owner's value
)

// LostError describes why a lease was lost. It unwraps to [ErrLost] and, for
// CauseExpired, to the last renewal error.
type LostError struct {
	Name  string
	Token fence.Token
	Cause string // CauseExpired, CauseMissing or CauseStolen
	Err   error  // CauseExpired: the last renewal error, or why the deadline passed unrenewed; may be nil
}

// Error names the lease, its token and why it was lost.
func (e *LostError) Error() string {
	msg := "lease: " + strconv.Quote(e.Name) + " with token " + e.Token.String() + " lost: "
	switch e.Cause {
	case CauseExpired:
		msg += "no renewal confirmed before the local deadline"
	case CauseMissing:
		msg += "the key is gone from Redis"
	case CauseStolen:
		msg += "the key belongs to another owner"
	default:
		msg += e.Cause
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns [ErrLost] and the last renewal error, if any.
func (e *LostError) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrLost, e.Err}
	}
	return []error{ErrLost}
}

func errScript(op, name string, err error) error {
	return fmt.Errorf("lease: %s %q: %w", op, name, err)
}
