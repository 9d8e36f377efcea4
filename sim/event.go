package sim

import (
	"strconv"
	"time"

	"github.com/fencekit/fencekit/fence"
)

// Kind says what happened in an [Event].
type Kind uint8

// The kinds of events a run records. Events of the lease service and the
// storage are recorded when the message reaches them; events of a client
// when the reply reaches the client (or when its own timer fires).
const (
	// KindGranted: the lease service granted Token to Client.
	KindGranted Kind = iota + 1
	// KindDenied: the lease service refused Client; Other is the holder's token.
	KindDenied
	// KindAcquired: Client received its grant of Token.
	KindAcquired
	// KindRefused: Client received a refusal; Dur is the holder's
	// remaining TTL, which the client waits out unless a release wakes it.
	KindRefused
	// KindRenewed: the lease service extended Token's TTL (a heartbeat).
	KindRenewed
	// KindRenewDenied: the lease service refused a heartbeat for Token.
	KindRenewDenied
	// KindLost: Client learned from a refused heartbeat that it lost the lease.
	KindLost
	// KindExpired: Token's TTL ran out at the lease service.
	KindExpired
	// KindReleased: the lease service freed Token on Client's request.
	KindReleased
	// KindRead: the storage served Client's read (fenced: after claiming Token).
	KindRead
	// KindReadRejected: the fenced storage refused Client's read as stale.
	KindReadRejected
	// KindWriteAccepted: the storage accepted write Write carrying Token.
	KindWriteAccepted
	// KindWriteRejected: the fenced storage rejected write Write; Other is
	// the newest token it had accepted.
	KindWriteRejected
	// KindCheckFailed: Client stopped its job: before a step, because its
	// own clock said the lease would expire before the step ended or a
	// heartbeat had been refused; or after a step, without writing, because
	// a refused heartbeat told it during the step that the lease was lost.
	KindCheckFailed
	// KindPaused: Client stopped (GC, VM suspension) for Dur.
	KindPaused
	// KindResumed: Client runs again.
	KindResumed
	// KindCrashed: Client died; it sends nothing ever again.
	KindCrashed
	// KindDone: Client finished all its jobs.
	KindDone
	// KindChecked: the storage found write Write's Token not stale; the
	// write itself follows in a second request, which a check-then-write
	// storage applies without checking again (an atomic one checks the
	// write itself). Other is the storage's token.
	KindChecked
)

var kindNames = [...]string{
	KindGranted:       "granted",
	KindDenied:        "denied",
	KindAcquired:      "acquired",
	KindRefused:       "refused",
	KindRenewed:       "renewed",
	KindRenewDenied:   "renew-denied",
	KindLost:          "lost",
	KindExpired:       "expired",
	KindReleased:      "released",
	KindRead:          "read",
	KindReadRejected:  "read-rejected",
	KindWriteAccepted: "write-accepted",
	KindWriteRejected: "write-rejected",
	KindCheckFailed:   "check-failed",
	KindPaused:        "paused",
	KindResumed:       "resumed",
	KindCrashed:       "crashed",
	KindDone:          "done",
	KindChecked:       "checked",
}

// String returns the kind's name as the JSON output spells it, such as
// "write-accepted".
func (k Kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Actor says where an event happened: a client lane, the lease service or
// the storage.
func (k Kind) Actor() string {
	switch k {
	case KindGranted, KindDenied, KindRenewed, KindRenewDenied, KindExpired, KindReleased:
		return "lease"
	case KindRead, KindReadRejected, KindWriteAccepted, KindWriteRejected, KindChecked:
		return "storage"
	}
	return "client"
}

// Event is one thing that happened in a run, at virtual time At (since the
// start of the run, by the lease service's clock, which is true time).
type Event struct {
	At time.Duration
	// Sent is when the message that caused the event left its sender; it
	// equals At for events that no message caused.
	Sent   time.Duration
	Kind   Kind
	Client int // index into Result.Clients; -1 when no client is involved
	Token  fence.Token
	// Other is the competing token: the holder's for KindDenied, the
	// storage's newest for KindWriteRejected and KindReadRejected.
	Other fence.Token
	// Write is the write's index into Result.Writes, -1 for non-writes.
	Write int
	// Dur is the length of a pause (KindPaused); for KindAcquired and
	// KindRenewed, how long the lease is valid from At.
	Dur time.Duration
}
