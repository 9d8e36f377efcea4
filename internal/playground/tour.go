package playground

import (
	"fmt"
	"slices"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/sim"
	"github.com/fencekit/fencekit/sim/render"
)

// Preset is a run the lesson (docs/fencing.md) gives as fencesim flags,
// offered by the page as one button.
type Preset struct {
	Title string `json:"title"`
	Query string `json:"query"`
	Help  string `json:"help"`
}

var presets = []Preset{
	{"Kleppmann's pause", "scenario=kleppmann",
		"A pauses 15 s, past its 10 s lease, just before it writes."},
	{"The pause ends in time", "scenario=kleppmann&pause=5s",
		"A 5 s pause under a 10 s TTL: both runs are safe."},
	{"A shorter TTL makes it worse", "scenario=kleppmann&ttl=4s&pause=5s",
		"The same 5 s pause, now longer than the lease."},
	{"B still working: the write check alone loses", "scenario=kleppmann&work=8s&storage=writes",
		"A's late write lands first, then B's, based on an older read, replaces it."},
	{"Paused mid-work: the heartbeat warns A", "scenario=kleppmann&pause-at=1s",
		"A learns it lost the lease before its work is done, and writes nothing."},
	{"Check, then write", "scenario=check-then-write",
		"The same client against a storage that checks and writes in two steps."},
	{"No pause, a slow network", "scenario=kleppmann&heartbeat=0s&pause=0s&write-delay=15s",
		"A's write, sent in time, arrives after its lease expired."},
}

// notes says what a slider means in scenario sc where its help does not.
func notes(sc sim.Scenario) map[string]string {
	n := map[string]string{}
	switch sc.Name {
	case "kleppmann", "check-then-write":
		n["work"] = "B's work step; A's is 2s, and the pause falls in it."
	}
	if sc.Uses("seed") {
		n["seed"] = "Picks the small random jitter of message delays; the same seed replays the same run."
	}
	return n
}

// Step is one stop of the guided tour: a moment of the runs and one
// sentence about it. X is where the moment lies in both figures.
type Step struct {
	At   string  `json:"at"`
	X    float64 `json:"x"`
	Text string  `json:"text"`
}

// tour tells the fencing-off run (off) event by event, one sentence each,
// and, where the fenced run (on) treats the same write otherwise, says
// so; the last step gives both outcomes.
func tour(off, on *sim.Result, l render.Layout) []Step {
	labels := off.WriteLabels()
	onLabels := on.WriteLabels()
	lost := off.Lost()
	paused := make([]bool, len(off.Clients))
	renewed := make([]bool, len(off.Clients))
	told := map[int]bool{} // lost writes whose loss a step has told
	var steps []Step
	add := func(e sim.Event, format string, args ...any) {
		steps = append(steps, Step{At: sim.FormatTime(e.At), X: l.X(e.At),
			Text: sim.FormatTime(e.At) + ": " + fmt.Sprintf(format, args...)})
	}
	for _, e := range off.Events {
		name := ""
		if e.Client >= 0 {
			name = off.Clients[e.Client]
		}
		switch e.Kind {
		case sim.KindAcquired:
			add(e, "%s acquires the lease, token %d.", name, e.Token)
		case sim.KindRefused:
			add(e, "%s asks for the lease and is refused: token %d holds it. %s waits.", name, e.Other, name)
		case sim.KindRenewed:
			if !renewed[e.Client] {
				renewed[e.Client] = true
				add(e, "%s's heartbeat renews lease %d; it renews every %s while %s runs.", name, e.Token,
					sim.FormatTime(off.Heartbeat), name)
			}
		case sim.KindExpired:
			holder := ""
			for c, p := range paused {
				if p {
					holder = " " + off.Clients[c] + " is paused and does not know."
				}
			}
			add(e, "lease %d expires at the lease service.%s", e.Token, holder)
		case sim.KindReleased:
			add(e, "%s releases the lease.", name)
		case sim.KindRead:
			text := fmt.Sprintf("%s reads the file: %s.", name, off.ValueString(readOf(off, e)))
			if claimsOn(on) && claimedFirst(on, e.Token) {
				text += fmt.Sprintf(" With fencing on, this read claims token %d: older tokens are refused from now on.", e.Token)
			}
			add(e, "%s", text)
		case sim.KindPaused:
			paused[e.Client] = true
			add(e, "%s is paused for %s (a GC stop, a VM suspension): its work and its heartbeat stop with it.", name, sim.FormatTime(e.Dur))
		case sim.KindResumed:
			paused[e.Client] = false
			add(e, "%s resumes, still believing it holds its lease, and goes on where it stopped.", name)
		case sim.KindChecked:
			add(e, "the storage checks %s's token %d for %s: current, ok.", name, e.Token, labels[e.Write])
		case sim.KindWriteAccepted:
			w := off.Writes[e.Write]
			text := fmt.Sprintf("%s writes %s with token %d; the storage accepts it.", name, labels[e.Write], e.Token)
			if !w.Live {
				text = fmt.Sprintf("%s's late write %s (token %d) reaches the storage, which accepts it: lease %d had expired.",
					name, labels[e.Write], e.Token, e.Token)
			}
			for _, i := range lost {
				if !told[i] && off.Writes[i].Accepted && overwrites(off, e.Write, i) {
					told[i] = true
					text += fmt.Sprintf(" It was based on an older read, so %s's write %s is now lost.", off.Clients[off.Writes[i].Client], labels[i])
				}
			}
			if slices.Contains(lost, e.Write) {
				text += " (This write will be lost.)"
			}
			if i := slices.Index(onLabels, labels[e.Write]); i >= 0 && !on.Writes[i].Accepted {
				text += fmt.Sprintf(" With fencing on, the storage refuses it: it has seen token %d.", rejectedWith(on, i))
			}
			add(e, "%s", text)
		case sim.KindWriteRejected:
			add(e, "the storage refuses %s's write %s (token %d): it has seen token %d.", name, labels[e.Write], e.Token, e.Other)
		case sim.KindLost:
			add(e, "%s's heartbeat is refused: only now does %s learn that it lost the lease.", name, name)
		case sim.KindCheckFailed:
			add(e, "%s's own check says its lease is over or lost: it stops without writing.", name)
		case sim.KindCrashed:
			add(e, "%s crashes; its lease runs on until its TTL.", name)
		}
	}
	last := sim.Event{At: max(off.End, on.End)}
	add(last, "the end. %s: %s, final value %s. %s: %s, final value %s.",
		heading(off.Storage), verdictText(off), off.ValueString(off.Final),
		heading(on.Storage), verdictText(on), on.ValueString(on.Final))
	return steps
}

// readOf is the value a read returned: what the reader's next write was
// based on, or the writes accepted before the read.
func readOf(r *sim.Result, e sim.Event) []int {
	for _, w := range r.Writes {
		if w.Client == e.Client && w.Token == e.Token && w.Sent >= e.At {
			return w.Read
		}
	}
	var ids []int
	for _, x := range r.Events {
		if x.At > e.At {
			break
		}
		if x.Kind == sim.KindWriteAccepted {
			ids = append(slices.Clone(r.Writes[x.Write].Read), x.Write)
		}
	}
	return ids
}

// claimsOn reports whether the fenced run's storage claims at reads.
func claimsOn(r *sim.Result) bool {
	return r.Storage == sim.StorageClaim || r.Storage == sim.StorageCheckThenWrite
}

// claimedFirst reports whether tok's first read in r is the first event
// that brought tok to the storage.
func claimedFirst(r *sim.Result, tok fence.Token) bool {
	for _, e := range r.Events {
		if e.Token == tok && (e.Kind == sim.KindWriteAccepted || e.Kind == sim.KindWriteRejected) {
			return false
		}
		if e.Token == tok && e.Kind == sim.KindRead {
			return true
		}
	}
	return false
}

// overwrites reports whether accepted write w replaced lost write i: w
// came after i and was based on a read without it.
func overwrites(r *sim.Result, w, i int) bool {
	return r.Writes[w].At > r.Writes[i].At && r.Writes[w].Token != r.Writes[i].Token && !slices.Contains(r.Writes[w].Read, i)
}

// rejectedWith is the token the storage named when it refused write i.
func rejectedWith(r *sim.Result, i int) fence.Token {
	for _, e := range r.Events {
		if e.Kind == sim.KindWriteRejected && e.Write == i {
			return e.Other
		}
	}
	return 0
}

// verdictText is the run's verdict in a few lower-case words.
func verdictText(r *sim.Result) string {
	switch r.Verdict() {
	case sim.VerdictBackwards:
		return "tokens went backwards"
	case sim.VerdictLost:
		return "a write was lost"
	}
	return "safe"
}
