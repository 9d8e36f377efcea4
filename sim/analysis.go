package sim

import (
	"slices"
	"strconv"
	"time"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/fencetest"
)

// AcceptedTokens returns the tokens of the accepted writes in the order the
// storage accepted them.
func (r *Result) AcceptedTokens() []fence.Token { return slices.Clone(r.accepted) }

// Violation checks the run against the fencing invariant with
// [fencetest.VerifyHistory]: it returns nil when no write was accepted with a
// token older than one accepted before it, and otherwise an error naming
// the seed and both writes.
func (r *Result) Violation() error {
	if err := fencetest.VerifyHistory(r.Resource, r.accepted); err != nil {
		return &ViolationError{Seed: r.Seed, Storage: r.Storage, Err: err}
	}
	return nil
}

// ViolationError reports a run that broke the fencing invariant.
type ViolationError struct {
	Seed    uint64
	Storage Storage
	Err     error // from fencetest.VerifyHistory
}

// Error names the seed so the run can be replayed.
func (e *ViolationError) Error() string {
	return "sim: failed for seed=" + strconv.FormatUint(e.Seed, 10) + " (fencing " + e.Storage.String() + "): " + e.Err.Error()
}

// Unwrap returns the history error.
func (e *ViolationError) Unwrap() error { return e.Err }

// Lost returns the accepted writes whose data is not in the final value:
// a later write was computed from a value read before them and overwrote
// them. Their writers were told the write succeeded.
func (r *Result) Lost() []int {
	var lost []int
	for i, w := range r.Writes {
		if w.Accepted && !slices.Contains(r.Final, i) {
			lost = append(lost, i)
		}
	}
	return lost
}

// StaleAccepted returns the accepted writes whose token was no longer the
// lease service's live lease when the storage accepted them.
func (r *Result) StaleAccepted() []int {
	var stale []int
	for i, w := range r.Writes {
		if w.Accepted && !w.Live {
			stale = append(stale, i)
		}
	}
	return stale
}

// Span is an interval of virtual time during which a lease was held by a
// client that could not use it.
type Span struct {
	Client   int
	Token    fence.Token
	From, To time.Duration
}

// Downtime returns, for every client that crashed while the lease service
// still counted it as the holder, the span from the crash until the lease
// expired: time in which no client could do the work.
func (r *Result) Downtime() []Span {
	var spans []Span
	holder, tok := -1, fence.Token(0)
	open := -1
	for _, e := range r.Events {
		switch e.Kind {
		case KindGranted:
			holder, tok = e.Client, e.Token
		case KindExpired, KindReleased:
			if open >= 0 && spans[open].Token == e.Token {
				spans[open].To = e.At
				open = -1
			}
			holder = -1
		case KindCrashed:
			if holder == e.Client {
				spans = append(spans, Span{Client: e.Client, Token: tok, From: e.At, To: -1})
				open = len(spans) - 1
			}
		}
	}
	return spans
}

// NewRecorded builds a Result from events observed outside the simulator,
// such as the real servers of cmd/fencereal, so that the same
// timeline, JSON and HTML writers can show them. events must be in time
// order and their Write fields index writes; final lists the writes whose
// data the storage holds at the end. Violation checks the accepted writes
// in event order.
func NewRecorded(clients []string, resource string, storage Storage, ttl, heartbeat time.Duration,
	events []Event, writes []Write, final []int) *Result {
	r := &Result{Storage: storage, TTL: ttl, Heartbeat: heartbeat, Resource: resource,
		Clients: clients, Events: events, Writes: writes, Final: final, Recorded: true}
	for _, e := range events {
		if e.Kind == KindWriteAccepted {
			r.accepted = append(r.accepted, e.Token)
		}
	}
	if n := len(events); n > 0 {
		r.End = events[n-1].At
	}
	return r
}
