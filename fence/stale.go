package fence

import (
	"errors"
	"strconv"
)

// ErrStale is the sentinel for a write rejected because a newer token was
// already accepted for the resource. Every stale-write error in fencekit
// matches it with errors.Is.
var ErrStale = errors.New("fence: stale token")

// ErrFencedOut means "you are no longer the holder: stop, do not retry".
// Every [*StaleError] matches it, and so does the cause of every lost lease
// (lease.ErrLost wraps it), so one errors.Is check covers a write the
// storage refused and a write cut off because the lease ended first.
var ErrFencedOut = errors.New("fence: fenced out, no longer the holder")

// StaleError describes a rejected write: the resource, the token the writer
// presented, and the newest token the storage had already accepted. It
// unwraps to [ErrStale] and [ErrFencedOut].
type StaleError struct {
	Resource           string
	Presented, Current Token
}

// Error reports the resource and both tokens.
func (e *StaleError) Error() string {
	return "fence: stale token " + e.Presented.String() + " for " + strconv.Quote(e.Resource) +
		": token " + e.Current.String() + " was already accepted"
}

// Unwrap returns [ErrStale] and [ErrFencedOut].
func (e *StaleError) Unwrap() []error { return []error{ErrStale, ErrFencedOut} }

// Check is the one definition of a stale write. It returns nil when a write
// presenting token presented may be accepted for resource, given that current
// is the newest token accepted so far (0 when none), and a [*StaleError]
// otherwise. Equal tokens are the same holder writing again: not stale.
func Check(resource string, presented, current Token) error {
	if presented < current {
		return &StaleError{Resource: resource, Presented: presented, Current: current}
	}
	return nil
}
