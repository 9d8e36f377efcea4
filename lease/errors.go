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
	// [Lease.Release] (or a Release that failed to reach the store).
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
	// Remaining is the holder's remaining TTL as the store reported it in the
	// same round trip; negative when the key has no expiry (someone set it
	// outside fencekit).
	Remaining time.Duration
	// Holder is the current holder's token, 0 when unknown (not written by
	// fencekit).
	Holder fence.Token
	// Identity is the holder's Options.Identity, "" when unknown.
	Identity string
}

// Error names the lease, the holder's token and identity and its remaining
// TTL.
func (e *NotAcquiredError) Error() string {
	rem := "with no expiry"
	if e.Remaining >= 0 {
		rem = "for " + e.Remaining.String()
	}
	who := ""
	if e.Identity != "" {
		who = " of " + strconv.Quote(e.Identity)
	}
	return "lease: " + strconv.Quote(e.Name) + " is held by token " + e.Holder.String() + who + " " + rem
}

// Unwrap returns [ErrNotAcquired].
func (e *NotAcquiredError) Unwrap() error { return ErrNotAcquired }

// Causes of a lost lease, as LostError.Cause and the lease_lost metric's
// "cause" attribute.
const (
	CauseExpired = "expired" // the local deadline passed without a confirmed renewal
	CauseMissing = "missing" // the store no longer has the grant (expired, deleted, data lost)
	CauseStolen  = "stolen"  // the store shows another holder
)

// LostError describes why a lease was lost. It unwraps to [ErrLost] and, for
// CauseExpired, to the last renewal error. A [Backend] sets Cause (and
// maybe Err); the [Client] fills in the rest.
type LostError struct {
	Name     string
	Token    fence.Token
	Identity string // the lost holder's Options.Identity
	Backend  string // the store that lost it ([Backend.Name]): "redis", "postgres", ...
	Cause    string // CauseExpired, CauseMissing or CauseStolen
	Err      error  // CauseExpired: the last renewal error, or why the deadline passed unrenewed, after the last store error if that differs; may be nil
}

// Error names the lease, its token, holder and store, and why it was lost.
func (e *LostError) Error() string {
	msg := "lease: " + strconv.Quote(e.Name) + " with token " + e.Token.String()
	if e.Identity != "" {
		msg += " held by " + strconv.Quote(e.Identity)
	}
	store := e.Backend
	if store == "" {
		store = "the store"
	}
	msg += " lost: "
	switch e.Cause {
	case CauseExpired:
		msg += "no renewal confirmed by " + store + " before the local deadline"
	case CauseMissing:
		msg += store + " no longer has the grant"
	case CauseStolen:
		msg += store + " shows another holder"
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

// asLost returns the *LostError in err's chain, if any. It allocates
// nothing when err is nil (errors.As would, for its target).
func asLost(err error) (*LostError, bool) {
	if err == nil {
		return nil, false
	}
	var lost *LostError
	ok := errors.As(err, &lost)
	return lost, ok
}

// errScript names the call and the lease in err, a backend's error.
func errScript(op, name string, err error) error {
	return fmt.Errorf("lease: %s %q: %w", op, name, err)
}
