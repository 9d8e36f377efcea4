package sim

import (
	"fmt"
	"github.com/fencekit/fencekit/fence"
	"slices"
	"strconv"
	"strings"
	"time"
)

// FormatTime formats a virtual time or duration as seconds with at most
// three decimals ("16.1s", "0.5s", "60s"), the form every output uses.
func FormatTime(d time.Duration) string {
	neg := d < 0
	if neg {
		d = -d
	}
	ms := int64((d + 500*time.Microsecond) / time.Millisecond)
	s := strconv.FormatInt(ms/1000, 10)
	if frac := ms % 1000; frac != 0 {
		f := strings.TrimRight(fmt.Sprintf("%03d", frac), "0")
		s += "." + f
	}
	if neg {
		s = "-" + s
	}
	return s + "s"
}

// WriteLabels names every write by its client and its number among that
// client's writes: "A1", "A2", "B1".
func (r *Result) WriteLabels() []string {
	labels := make([]string, len(r.Writes))
	count := make([]int, len(r.Clients))
	for i, w := range r.Writes {
		count[w.Client]++
		labels[i] = r.Clients[w.Client] + strconv.Itoa(count[w.Client])
	}
	return labels
}

// ValueString renders a stored value (a list of write indexes) with the
// writes' labels: `"A1 B1"`, or `""` for an empty value.
func (r *Result) ValueString(ids []int) string {
	labels := r.WriteLabels()
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = labels[id]
	}
	return strconv.Quote(strings.Join(parts, " "))
}

// Verdict is a run's outcome, from worst to best: tokens went backwards
// (the fencing invariant broke), an accepted write was lost, or safe.
type Verdict uint8

const (
	// VerdictSafe: no accepted write was lost and the storage never
	// accepted a token older than one it had accepted.
	VerdictSafe Verdict = iota
	// VerdictLost: the tokens reached the storage in order, yet an accepted
	// write is missing from the final value ([Result.Lost]).
	VerdictLost
	// VerdictBackwards: the storage accepted a write whose token was older
	// than one it had already accepted ([Result.Violation]).
	VerdictBackwards
)

// String returns "safe", "a write lost" or "tokens went backwards".
func (v Verdict) String() string {
	switch v {
	case VerdictSafe:
		return "safe"
	case VerdictLost:
		return "a write lost"
	case VerdictBackwards:
		return "tokens went backwards"
	}
	return "verdict(" + strconv.Itoa(int(v)) + ")"
}

// Verdict returns the run's outcome.
func (r *Result) Verdict() Verdict {
	switch {
	case r.Violation() != nil:
		return VerdictBackwards
	case len(r.Lost()) > 0:
		return VerdictLost
	}
	return VerdictSafe
}

// Summary explains the run's outcome in plain sentences. The first is the
// verdict ("SAFE", "A WRITE WAS LOST" or "TOKENS WENT BACKWARDS"); then
// which writes were rejected, which accepted writes came from an expired
// lease, which were lost and who overwrote them, what each pause did to
// the paused client's lease, any forced downtime, and the final value.
func (r *Result) Summary() []string {
	out := []string{r.verdictLine()}
	labels := r.WriteLabels()
	name := func(c int) string { return r.Clients[c] }
	for i, w := range r.Writes {
		if w.Accepted || !r.decided(i) {
			continue
		}
		out = append(out, fmt.Sprintf("%s's write %s (token %d) was REJECTED as stale at %s: the storage had already seen token %d%s.",
			name(w.Client), labels[i], w.Token, FormatTime(w.At), r.rejectedBy(i), r.firstSeen(r.rejectedBy(i))))
	}
	out = append(out, r.pauses()...)
	for _, i := range r.StaleAccepted() {
		w := r.Writes[i]
		out = append(out, fmt.Sprintf("%s's write %s was accepted at %s although its lease (token %d) had expired.",
			name(w.Client), labels[i], FormatTime(w.At), w.Token))
	}
	for _, i := range r.Lost() {
		w := r.Writes[i]
		s := fmt.Sprintf("%s's write %s (token %d, accepted at %s) is LOST", name(w.Client), labels[i], w.Token, FormatTime(w.At))
		if x := r.overwriter(i); x >= 0 {
			xw := r.Writes[x]
			s += fmt.Sprintf(": %s's write %s (token %d) at %s replaced it with a value read before it (%s)",
				name(xw.Client), labels[x], xw.Token, FormatTime(xw.At), r.ValueString(xw.Read))
			if xw.Token < w.Token {
				s += ", an older token clobbering newer data"
			}
		}
		out = append(out, s+". Its writer was told it succeeded.")
	}
	for _, sp := range r.Downtime() {
		if sp.To < 0 {
			out = append(out, fmt.Sprintf("Forced downtime: lease %d stayed with crashed %s from %s to the end of the run.",
				sp.Token, name(sp.Client), FormatTime(sp.From)))
			continue
		}
		out = append(out, fmt.Sprintf("Forced downtime: lease %d stayed with crashed %s from %s until it expired at %s: %s in which nobody could work.",
			sp.Token, name(sp.Client), FormatTime(sp.From), FormatTime(sp.To), FormatTime(sp.To-sp.From)))
	}
	if r.Cut {
		out = append(out, fmt.Sprintf("The run was CUT at its horizon (%s) with actions still pending: what would have happened later is not shown.",
			FormatTime(r.Horizon)))
	}
	out = append(out, fmt.Sprintf("Final value of %q: %s.", r.Resource, r.ValueString(r.Final)))
	return out
}

// verdictLine is the first sentence of the summary.
func (r *Result) verdictLine() string {
	accepted, rejected := 0, 0
	for i, w := range r.Writes {
		switch {
		case w.Accepted:
			accepted++
		case r.decided(i):
			rejected++
		}
	}
	switch r.Verdict() {
	case VerdictBackwards:
		labels := r.WriteLabels()
		newest := -1
		for _, e := range r.Events {
			if e.Kind != KindWriteAccepted {
				continue
			}
			if newest >= 0 && e.Token < r.Writes[newest].Token {
				w, nw := r.Writes[e.Write], r.Writes[newest]
				return fmt.Sprintf("TOKENS WENT BACKWARDS: the storage accepted %s (token %d) at %s after it had accepted %s (token %d) at %s.",
					labels[e.Write], w.Token, FormatTime(w.At), labels[newest], nw.Token, FormatTime(nw.At))
			}
			if newest < 0 || e.Token > r.Writes[newest].Token {
				newest = e.Write
			}
		}
		return "TOKENS WENT BACKWARDS."
	case VerdictLost:
		n := "an accepted write is"
		if k := len(r.Lost()); k > 1 {
			n = strconv.Itoa(k) + " accepted writes are"
		}
		return "A WRITE WAS LOST: the tokens reached the storage in order, yet " + n + " missing from the final value."
	}
	return fmt.Sprintf("SAFE: %d write(s) accepted, %d rejected, none lost, tokens never went backwards.", accepted, rejected)
}

// pauses says, for each pause of a client whose lease was live when the
// pause began, whether the lease outlived the pause.
func (r *Result) pauses() []string {
	var out []string
	held := make([]fence.Token, len(r.Clients)) // the lease each client holds by the service's book
	for i, e := range r.Events {
		switch e.Kind {
		case KindGranted:
			held[e.Client] = e.Token
		case KindExpired, KindReleased:
			if e.Client >= 0 && held[e.Client] == e.Token {
				held[e.Client] = 0
			}
		case KindPaused:
			tok := held[e.Client]
			if tok == 0 {
				continue
			}
			end := e.At + e.Dur
			s := fmt.Sprintf("%s was paused from %s to %s (%s) holding lease %d", r.Clients[e.Client],
				FormatTime(e.At), FormatTime(end), FormatTime(e.Dur), tok)
			expired := false
			for _, x := range r.Events[i+1:] {
				if x.At > end {
					break
				}
				if x.Kind == KindExpired && x.Token == tok {
					s += fmt.Sprintf(", which expired at %s, during the pause: %s did not know", FormatTime(x.At), r.Clients[e.Client])
					expired = true
					break
				}
			}
			if !expired {
				s += ", which was still valid when it resumed"
			}
			out = append(out, s+".")
		}
	}
	return out
}

// decided reports whether the storage decided write i.
func (r *Result) decided(i int) bool {
	for _, e := range r.Events {
		if e.Write == i && (e.Kind == KindWriteAccepted || e.Kind == KindWriteRejected) {
			return true
		}
	}
	return false
}

func (r *Result) rejectedBy(i int) uint64 {
	for _, e := range r.Events {
		if e.Write == i && e.Kind == KindWriteRejected {
			return uint64(e.Other)
		}
	}
	return 0
}

// firstSeen says how the storage first saw tok: ", claimed by B's read
// at 10.5s" or ", from B's write B1 at 12s"; "" if it cannot tell.
func (r *Result) firstSeen(tok uint64) string {
	if r.Recorded {
		return "" // several real stores: the first write with tok may have gone elsewhere
	}
	for _, e := range r.Events {
		if uint64(e.Token) != tok || e.Client < 0 {
			continue
		}
		switch e.Kind {
		case KindRead:
			return fmt.Sprintf(", claimed by %s's read at %s", r.Clients[e.Client], FormatTime(e.At))
		case KindWriteAccepted:
			return fmt.Sprintf(", from %s's write %s at %s", r.Clients[e.Client], r.WriteLabels()[e.Write], FormatTime(e.At))
		}
	}
	return ""
}

// overwriter returns the first write accepted after write i whose value
// was computed without it, or -1.
func (r *Result) overwriter(i int) int {
	seen := false
	for _, e := range r.Events {
		if e.Kind != KindWriteAccepted {
			continue
		}
		if e.Write == i {
			seen = true
			continue
		}
		if seen && !slices.Contains(r.Writes[e.Write].Read, i) && r.Writes[e.Write].Token != r.Writes[i].Token {
			return e.Write
		}
	}
	return -1
}
