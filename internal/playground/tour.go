package playground

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

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
	// Change is what the preset changes against the default run, which
	// its tour's first step says (a linked tour opens as the default's).
	Change string `json:"-"`
}

var presets = []Preset{
	{"Kleppmann's pause", "scenario=kleppmann",
		"A pauses 15 s, past its 10 s lease, just before it writes.", ""},
	{"The pause ends in time", "scenario=kleppmann&pause=5s",
		"A 5 s pause under a 10 s TTL: both runs are safe.",
		"A's pause is 5s, not 15s."},
	{"A pause under the TTL", "scenario=kleppmann&pause=8.5s",
		"An 8.5 s pause, under the 10 s TTL, still outlasts the rest of A's lease.",
		"A's pause is 8.5s, not 15s: under the 10s TTL."},
	{"A shorter TTL: a shorter pause outlasts it", "scenario=kleppmann&ttl=4s&pause=5s",
		"The same 5 s pause, now longer than the lease.",
		"the TTL is 4s, not 10s, and A's pause 5s, not 15s."},
	{"B still working: the write check alone against the claim", "scenario=kleppmann&work=8s&base=writes&storage=claim",
		"Alone, the check accepts A's late write, then B's replaces it: A was told ok. B's read claims 34 and stops it.",
		"B works 8s, not 2s, and the first figure's storage checks tokens only at writes."},
	{"Paused mid-work: the heartbeat warns A", "scenario=kleppmann&pause-at=1s",
		"A learns it lost the lease before its work is done, and writes nothing.",
		"A pauses 1s into its 2s of work, not at its end."},
	{"Check, then write: two steps against one", "scenario=check-then-write",
		"A's token passes the check, A pauses, and its write lands unchecked; checked in the same step, it is refused.",
		"the first figure's storage checks a token in one request and writes in the next."},
	{"No pause, a slow network", "scenario=kleppmann&heartbeat=0s&pause=0s&write-delay=15s",
		"A's write, sent in time, arrives after its lease expired.",
		"A is not paused and runs no heartbeat; its write is delayed 15s on the network."},
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
	// Outcome: the step tells the runs' outcome, or comes after the one
	// that does; the page shows the verdicts from it on.
	Outcome bool `json:"outcome,omitempty"`
	// Moments are where the earlier moments a step names (one of the
	// tour's last steps) lie in both figures; the page marks them, with
	// their labels, and brings them into view rather than X.
	Moments []float64 `json:"moments,omitempty"`
	// Fig, if not 0, is the one figure (1 the first, 2 the second) whose
	// labels at the moments the page highlights; Store keeps those to
	// the storage's row, so that a label of the lease service's at the
	// same moment is not taken for what the step is about.
	Fig   int  `json:"fig,omitempty"`
	Store bool `json:"store,omitempty"`
	// Focus is the index in Moments of the moment the step is about (a
	// late write and its fate, accepted in one figure, refused in the
	// other): a phone that cannot show all of them shows that one, with
	// its labels, and names the others at the view's edge.
	Focus int `json:"focus,omitempty"`
	// Topic, on a summary step, is what it is about ("the claim"). A
	// preset it names in quotes links to the preset's tour at its step on
	// the same topic, told with that run's moments, not at its start.
	Topic string `json:"topic,omitempty"`
	// Opening: the step's moment lies in the runs' crowded opening, which
	// the page shows drawn zoomed in (Outcome.Opening); X is in that
	// drawing.
	Opening bool `json:"opening,omitempty"`
}

// zoomedOut ends the first step past the opening, where the figures
// stop drawing the runs' first second zoomed in. Most of the plot is
// still blank there, and a phone shows a window of it: the scale is what
// changed, and on a phone the window moves with the steps.
const zoomedOut = "Zoomed out: the time scale spans the whole run, drawn up to each step (on a phone, the figure scrolls to each step's moment)."

// tour tells the first run (off: fencing off for most) event by event,
// one sentence each, and, where the second run (on) treats the same read
// or write otherwise, says so. It opens with the setting and ends with
// both outcomes and the lesson: the rule, the claim, atomicity and why no
// TTL helps.
func tour(off, on *sim.Result, l, zoom render.Layout, query string) []Step {
	labels := off.WriteLabels()
	onLabels := on.WriteLabels()
	lost := off.Lost()
	paused := make([]bool, len(off.Clients))
	renewed := make([]bool, len(off.Clients))
	told := map[int]bool{} // lost writes whose loss a step has told
	claimed := false       // a step has told a read's claim
	grantedNewer := false  // a step has told a newer token's grant
	onName := heading(on.Storage)
	var steps []Step
	// A write's label stands where it was sent, and a step draws the
	// figures up to its moment: a step that first draws a write it does
	// not tell says that the write was sent, and a write sent before a
	// step's moment but after the last one's gets its own step.
	type sent struct {
		at    time.Duration
		what  string // "write" or "token check"
		label string
		name  string
		token fence.Token
		fig   int // the one figure that draws it, or 0
	}
	var sends []sent
	for _, r := range []*sim.Result{off, on} {
		add := func(s sent) {
			i := slices.IndexFunc(sends, func(o sent) bool { return o.what == s.what && o.label == s.label && l.X(o.at) == l.X(s.at) })
			if i < 0 {
				sends = append(sends, s)
			} else if sends[i].fig != s.fig {
				sends[i].fig = 0
			}
		}
		for i, w := range r.Writes {
			add(sent{w.Sent, "write", r.WriteLabels()[i], r.Clients[w.Client], w.Token, figure(r, off)})
		}
		for _, e := range r.Events {
			if e.Kind == sim.KindChecked && r.Storage == sim.StorageCheckThenWrite { // an atomic storage's is not drawn
				add(sent{e.Sent, "token check", r.WriteLabels()[e.Write], r.Clients[e.Client], e.Token, figure(r, off)})
			}
		}
	}
	slices.SortStableFunc(sends, func(a, b sent) int { return cmp.Compare(a.at, b.at) })
	// step is a step at moment at, in the opening's drawing if zoom has
	// one and at lies in it.
	// The first step past the opening says the scale changed: only the
	// axis labels show it.
	zoomed := false
	step := func(at time.Duration, text string) Step {
		if zoom.End > 0 && at < zoom.End {
			zoomed = true
			return Step{At: sim.FormatTime(at), X: zoom.X(at), Text: text, Opening: true}
		}
		if zoomed {
			zoomed = false
			text += " " + zoomedOut
		}
		return Step{At: sim.FormatTime(at), X: l.X(at), Text: text}
	}
	add := func(e sim.Event, format string, args ...any) {
		x, text := l.X(e.At), fmt.Sprintf(format, args...)
		for len(sends) > 0 && l.X(sends[0].at) <= x+0.5 {
			w := sends[0]
			sends = sends[1:]
			what := fmt.Sprintf("%s sends its %s for %s (token %d).", w.name, w.what, w.label, w.token)
			if w.fig != 0 {
				what = fmt.Sprintf("%s sends its %s for %s (token %d), drawn in the %s figure only: the %s storage checks as it writes.",
					w.name, w.what, w.label, w.token, ordinals[w.fig-1], ordinals[2-w.fig])
			}
			if w.what == "write" {
				what = fmt.Sprintf("%s sends its write %s (token %d).", w.name, w.label, w.token)
			}
			switch {
			case strings.Contains(text, w.label) && (w.what == "write" || strings.Contains(text, "check")):
			case l.X(w.at) >= x-0.5:
				text += " " + what
			default:
				steps = append(steps, step(w.at, sim.FormatTime(w.at)+": "+what))
			}
		}
		steps = append(steps, step(e.At, sim.FormatTime(e.At)+": "+text))
	}
	offName := heading(off.Storage)
	// A preset's tour opens with what it changes, in a step of its
	// own: the opening's words and the figures fill a screen already.
	for _, p := range presets {
		if p.Change != "" && canonical(p.Query) == query {
			add(sim.Event{}, "this preset. Against the default run, %s", p.Change)
		}
	}
	add(sim.Event{}, "%s", start(off))
	onDefines := defines(on.Storage)
	if off.Storage == sim.StorageCheckThenWrite && on.Storage == sim.StorageClaim {
		onDefines = "the same two rules, in one step."
	}
	add(sim.Event{}, "the two figures. The first is %s: %s The second is %s: %s", offName, defines(off.Storage), onName, onDefines)
	for _, e := range off.Events {
		name := ""
		if e.Client >= 0 {
			name = off.Clients[e.Client]
		}
		switch e.Kind {
		case sim.KindAcquired:
			add(e, "%s acquires the lease, token %d.", name, e.Token)
			// Where tokens come from, at the same moment, in a step of
			// its own: with the grant, it crowded a phone's bar.
			if query == canonical(kleppmannQuery) && !grantedNewer && firstEvent(off, func(x sim.Event) bool { return x.Kind == sim.KindAcquired && x.Token < e.Token }) != nil {
				grantedNewer = true
				add(e, "%s", issuers)
			}
		case sim.KindRefused:
			holder := fmt.Sprintf("token %d holds it", e.Other)
			if g := firstEvent(off, func(x sim.Event) bool { return x.Kind == sim.KindAcquired && x.Token == e.Other }); g != nil {
				holder = fmt.Sprintf("%s holds it, with token %d", off.Clients[g.Client], e.Other)
			}
			add(e, "%s asks for the lease and is refused: %s. %s waits.", name, holder, name)
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
					holder = " " + off.Clients[c] + " is paused and does not know. A shorter TTL would only let a shorter pause " +
						"do this: pauses have no bound."
				}
			}
			add(e, "lease %d expires at the lease service.%s", e.Token, holder)
		case sim.KindReleased:
			text := name + " releases the lease: its bar ends here."
			if on.Storage.Fenced() && seenBy(on, e.Token, e.At) {
				text += fmt.Sprintf(" %s: releasing does not lower the token the storage keeps (%d), so older tokens stay refused.", onName, e.Token)
			}
			add(e, "%s", text)
		case sim.KindRead:
			text := fmt.Sprintf("%s reads the file: %s.", name, off.ValueString(readOf(off, e)))
			// What a claim does is told at the first that has an older
			// token to refuse.
			then := ""
			switch {
			case claimsOn(on) && claimedFirst(on, e.Token) && claimsOn(off) && claimedFirst(off, e.Token):
				// Both figures draw "read claims": say it of both. The
				// two-step storage's claim fails later checks, not a
				// write already checked.
				text += fmt.Sprintf(" Both storages: this read claims token %d", e.Token)
				then = fmt.Sprintf(", so from now on a check of an older token fails, before %s writes anything", name)
			case claimsOn(on) && claimedFirst(on, e.Token):
				text += fmt.Sprintf(" %s: this read claims token %d", onName, e.Token)
				then = fmt.Sprintf(", so older tokens are refused from now on, before %s writes anything", name)
			}
			if then != "" {
				if claimed {
					text += then
				}
				text += "."
				claimed = true
			}
			add(e, "%s", text)
		case sim.KindPaused:
			paused[e.Client] = true
			add(e, "%s is paused for %s: its work and its heartbeat stop with it.", name, sim.FormatTime(e.Dur))
		case sim.KindResumed:
			paused[e.Client] = false
			add(e, "%s resumes, still believing it holds its lease.", name)
		case sim.KindChecked:
			if off.Storage != sim.StorageCheckThenWrite {
				break // an atomic storage's is not drawn
			}
			add(e, "the first figure's storage checks %s's token %d for %s: current, ok.", name, e.Token, labels[e.Write])
		case sim.KindWriteAccepted:
			w := off.Writes[e.Write]
			text := fmt.Sprintf("%s writes %s with token %d; the storage accepts it.", name, labels[e.Write], e.Token)
			if !w.Live {
				how := "which accepts it, although lease %d had expired: this storage has seen no newer token."
				switch off.Storage {
				case sim.StorageOff:
					how = `which accepts it, although lease %d had expired: this storage does not check tokens; its line shows the last write's ("wrote %d").`
				case sim.StorageCheckThenWrite:
					how = "which accepts it unchecked, though lease %d had expired."
				}
				args := []any{name, labels[e.Write], e.Token, e.Token}
				if off.Storage == sim.StorageOff {
					args = append(args, e.Token)
				}
				text = fmt.Sprintf("%s's late write %s (token %d) reaches the storage, "+how, args...)
			}
			refused := slices.Index(onLabels, labels[e.Write])
			if refused >= 0 && on.Writes[refused].Accepted {
				refused = -1
			}
			for _, i := range lost {
				if !told[i] && off.Writes[i].Accepted && overwrites(off, e.Write, i) {
					told[i] = true
					// A step that does not open with offName says
					// which figure loses the write.
					where := "It"
					if refused < 0 {
						where = "In the first figure (" + offName + ") it"
					}
					text += fmt.Sprintf(" %s was based on an older read, so %s's write %s is now lost, though %s was told it succeeded.",
						where, off.Clients[off.Writes[i].Client], labels[i], off.Clients[off.Writes[i].Client])
				}
			}
			if slices.Contains(lost, e.Write) {
				if refused >= 0 { // the step opens with offName
					text += " (This write will be lost.)"
				} else {
					text += fmt.Sprintf(" (%s: this write will be lost.)", offName)
				}
			}
			if refused >= 0 {
				seen := rejectedWith(on, refused)
				text = fmt.Sprintf("%s: %s %s: the storage refuses it, as it has seen token %d%s.", offName, text, onName, seen, claimLabel(on, seen))
			}
			add(e, "%s", text)
		case sim.KindWriteRejected:
			add(e, "the storage refuses %s's write %s (token %d): it has seen token %d.", name, labels[e.Write], e.Token, e.Other)
		case sim.KindLost:
			add(e, "%s's heartbeat sends a renewal of %d, which is refused: only now does %s learn that it lost the lease.", name, e.Token, name)
		case sim.KindCheckFailed:
			add(e, "%s's own check says its lease is over or lost: it stops without writing.", name)
		case sim.KindCrashed:
			add(e, "%s crashes; its lease runs on until its TTL.", name)
		}
	}
	last := sim.Event{At: max(off.End, on.End)}
	end := len(steps)
	add(last, "the end. %s: %s, final value %s. %s: %s, final value %s.",
		heading(off.Storage), verdictText(off), off.ValueString(off.Final),
		onName, verdictText(on), on.ValueString(on.Final))
	for _, lesson := range lessons(off, on, query) {
		topic := lesson.text[:strings.IndexAny(lesson.text, ".,")]
		st := Step{At: "summary", X: l.X(last.At), Text: "Summary, " + lesson.text, Topic: topic, Fig: lesson.fig, Store: lesson.store, Focus: lesson.focus}
		for _, at := range lesson.at {
			st.Moments = append(st.Moments, l.X(at))
		}
		steps = append(steps, st)
	}
	for i := range steps[end:] {
		steps[end+i].Outcome = true
	}
	return steps
}

// issuers says, at the default tour's first grant of a newer token,
// where real tokens come from (docs/leases.md, "Tokens"); the presets'
// tours, linked from the default's, leave it out.
const issuers = "where tokens come from. Redis and PostgreSQL issuers grant max(counter+1, server time in µs), about 1.8e15: " +
	"a Redis restarted without its counter still grants a larger one, unless its clock is behind: then the storage refuses new holders until the clock passes the last token. " +
	"etcd grants its revision, ZooKeeper its zxid."

// start is the tour's first step, over figures with nothing drawn yet:
// the setting, the problem and the words the tour uses for it.
func start(r *sim.Result) string {
	names := r.Clients
	who := strings.Join(names, " and ")
	if len(names) > 2 {
		who = strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
	}
	var grants []string
	for _, e := range r.Events {
		if e.Kind == sim.KindAcquired && len(grants) < 2 && !slices.Contains(grants, fmt.Sprint(e.Token)) {
			grants = append(grants, fmt.Sprint(e.Token))
		}
	}
	example := ""
	if len(grants) == 2 {
		example = " (" + grants[0] + ", then " + grants[1] + ")"
	}
	return fmt.Sprintf("the start. %s each read a file, add an entry, write it all back, under a lease: "+
		"one holder at a time for %s (its TTL) unless renewed. A holder paused past its lease wakes believing it holds it "+
		"and may undo the next holder's write. A fencing token fixes that: a number that grows with each grant%s, "+
		"sent with each read and write: the storage refuses an older one's reads and writes.", who, sim.FormatTime(r.TTL), example)
}

// lesson is one of the tour's last steps and the moments it names, with
// the figure (1, 2; 0 both) and row (store: the storage's) they lie in.
type lesson struct {
	text  string
	at    []time.Duration
	fig   int
	store bool
	focus int // the index in at of the moment the lesson is about
}

// The presets a last step names where the tour's own runs cannot show
// its point.
const (
	kleppmannQuery = "scenario=kleppmann"
	claimQuery     = "scenario=kleppmann&work=8s&base=writes&storage=claim"
	atomicQuery    = "scenario=check-then-write"
	inTimeQuery    = "scenario=kleppmann&pause=5s"
	shortTTLQuery  = "scenario=kleppmann&ttl=4s&pause=5s"
	underTTLQuery  = "scenario=kleppmann&pause=8.5s"
)

// button is the name, quoted, of the button of the preset that runs
// query: its title up to a colon.
func button(query string) string {
	for _, p := range presets {
		if p.Query == query {
			name, _, _ := strings.Cut(p.Title, ":")
			return "“" + name + "”"
		}
	}
	return query
}

// lessons are the tour's last steps: the rule, the claim, atomicity, the
// TTL and the limits, each told with the moments of the runs off and on
// that show it; where these runs cannot show a point, the step says so
// and names the preset that does.
func lessons(off, on *sim.Result, query string) []lesson {
	return []lesson{ruleLesson(off, on), claimLesson(off, on), atomicLesson(off, on), ttlLesson(off, query), limitsLesson(off)}
}

// ordinals name the figures by their place on the page.
var ordinals = [2]string{"first", "second"}

// which names run r, one of off and on, by its place on the page.
func which(r, off *sim.Result) string {
	return ordinals[figure(r, off)-1]
}

// figure is run r's place on the page, 1 or 2.
func figure(r, off *sim.Result) int {
	if r == off {
		return 1
	}
	return 2
}

func ruleLesson(off, on *sim.Result) lesson {
	l := lesson{text: "the rule. No holder can know, as its write lands, that its lease still holds; " +
		"so the storage, which sees writes in the order they arrive, refuses any write whose token is older than one it has seen " +
		"(an equal one passes: same holder) and, with the claim, any read with an older token too"}
	for _, r := range []*sim.Result{on, off} {
		if e := firstEvent(r, func(e sim.Event) bool { return e.Kind == sim.KindWriteRejected }); e != nil {
			l.text += fmt.Sprintf(": the %s figure's storage refuses %s at %s, having seen %d.",
				which(r, off), r.WriteLabels()[e.Write], sim.FormatTime(e.At), e.Other)
			l.at, l.fig, l.store = []time.Duration{e.At}, figure(r, off), true
			return l
		}
	}
	l.text += ". None arrives late here: " + button(kleppmannQuery) + " shows one refused."
	return l
}

func claimLesson(off, on *sim.Result) lesson {
	// Where no figure here draws a write check alone, the preset that
	// does is named.
	shows := ": " + button(claimQuery) + " shows it."
	for _, r := range []*sim.Result{on, off} {
		e := firstEvent(r, func(e sim.Event) bool {
			return e.Kind == sim.KindWriteRejected && claimsOn(r) && firstEvent(r, func(w sim.Event) bool {
				return w.Kind == sim.KindWriteAccepted && w.Token == e.Other && w.At <= e.At
			}) == nil
		})
		if e == nil {
			continue
		}
		// r refused a write on a read's claim alone.
		rd := firstEvent(r, func(x sim.Event) bool { return x.Kind == sim.KindRead && x.Token == e.Other })
		a, b, label := r.Clients[e.Client], r.Clients[rd.Client], r.WriteLabels()[e.Write]
		l := lesson{text: fmt.Sprintf("the claim. %s's read claimed %d at %s, so the %s figure refused %s's late write %s at %s",
			b, rd.Token, sim.FormatTime(rd.At), which(r, off), a, label, sim.FormatTime(e.At)), at: []time.Duration{rd.At, e.At}, fig: figure(r, off), store: true, focus: 1}
		if w := firstEvent(r, func(x sim.Event) bool { return x.Kind == sim.KindWriteAccepted && x.Token == rd.Token }); w != nil {
			l.text += fmt.Sprintf(", before %s's write (%s)", b, sim.FormatTime(w.At))
			l.at = append(l.at, w.At)
		}
		other := off
		if r == off {
			other = on
		}
		if i := slices.Index(other.WriteLabels(), label); i >= 0 && other.Storage == sim.StorageWrites && other.Writes[i].Accepted {
			l.text += fmt.Sprintf(". The %s, a write check alone, accepted %s and told %s ok; %s's write, based on an older read, then replaced it.",
				which(other, off), label, a, b)
			l.fig = 0 // both figures named
		} else {
			l.text += ". A write check alone would accept it, then lose it to " + b + "'s write" + shows
		}
		return l
	}
	// No write here was refused on a claim alone: show the window in
	// which only the claim refuses a late write, from a newer read to
	// its reader's write.
	rd, w := newerRead(on)
	if !claimsOn(on) || rd == nil || w == nil {
		l := lesson{text: "the claim. A read records its token at once, so a late write landing between a read and the reader's write is refused; " +
			"a write check alone would accept it, then lose it to the reader's write" + shows}
		if !claimsOn(on) && !claimsOn(off) {
			l.text = strings.Replace(l.text, "the claim.", "the claim, which neither storage here makes.", 1)
		}
		return l
	}
	b := on.Clients[rd.Client]
	if claimsOn(off) {
		// Both figures claim (check-then-write's): neither shows what a
		// write check alone would do.
		return lesson{text: fmt.Sprintf("the claim. In both figures %s's read claimed %d at %s, before %s's write (%s): from then on a check of an older token fails. "+
			"A write check alone would pass a late write landing between them"+shows,
			b, rd.Token, sim.FormatTime(rd.At), b, sim.FormatTime(w.At)), at: []time.Duration{rd.At, w.At}, store: true}
	}
	// A write check alone learns the reader's token only at its write;
	// the second figure's token line steps up at the read. The first
	// figure's line there, if it checks nothing, only records writes.
	ow := firstEvent(off, func(e sim.Event) bool { return e.Token == rd.Token && e.Kind == sim.KindWriteAccepted })
	if ow == nil {
		return lesson{text: fmt.Sprintf("the claim. In the second figure %s's read claimed %d at %s, before %s's write (%s): only the claim refuses a late write landing between them; "+
			"a write check alone would accept it"+shows, b, rd.Token, sim.FormatTime(rd.At), b, sim.FormatTime(w.At)),
			at: []time.Duration{rd.At, w.At}, fig: 2, store: true}
	}
	return lesson{text: fmt.Sprintf("the claim. The second figure's token line steps up to %d at %s's read, refusing older tokens. "+
		"A write check alone learns %d at %s's write, so a late write between %s's read at %s and %s's write at %s passes it, then is lost to %s's write"+shows,
		rd.Token, b, rd.Token, b, b, sim.FormatTime(rd.At), b, sim.FormatTime(ow.At), b), at: []time.Duration{rd.At, ow.At}, fig: 2, store: true}
}

func atomicLesson(off, on *sim.Result) lesson {
	const rule = "checks the token and applies the write in one step"
	for _, r := range []*sim.Result{off, on} {
		if r.Storage != sim.StorageCheckThenWrite {
			continue
		}
		c := firstEvent(r, func(c sim.Event) bool {
			return c.Kind == sim.KindChecked && r.Writes[c.Write].Accepted && !r.Writes[c.Write].Live
		})
		if c == nil {
			continue
		}
		w := r.Writes[c.Write]
		rd := firstEvent(r, func(x sim.Event) bool {
			return x.Kind == sim.KindRead && x.Token > c.Token && x.At > c.At && x.At < w.At
		})
		if rd == nil {
			continue
		}
		// r checked a write, then let it land after a newer token's read.
		label := r.WriteLabels()[c.Write]
		l := lesson{text: fmt.Sprintf("atomicity. In the %s figure %s's token passed its check at %s; %s's read claimed %d at %s, yet %s landed at %s, unchecked.",
			which(r, off), label, sim.FormatTime(c.At), r.Clients[rd.Client], rd.Token, sim.FormatTime(rd.At), label, sim.FormatTime(w.At)),
			at: []time.Duration{c.At, rd.At, w.At}, fig: figure(r, off), store: true, focus: 2}
		other := off
		if r == off {
			other = on
		}
		if i := slices.Index(other.WriteLabels(), label); i >= 0 && other.Storage.Fenced() && other.Storage != sim.StorageCheckThenWrite && !other.Writes[i].Accepted {
			// Its refusal lies at the moment it landed in r: both
			// figures are named, and marked.
			l.text += fmt.Sprintf(" The %s figure's storage %s: it refuses %s.", which(other, off), rule, label)
			l.fig = 0
		} else {
			l.text += " A safe storage " + rule + "."
		}
		return l
	}
	l := lesson{text: "atomicity. A safe storage " + rule}
	for _, r := range []*sim.Result{on, off} {
		if !r.Storage.Fenced() || r.Storage == sim.StorageCheckThenWrite {
			continue
		}
		// A paused client's late write it refused shows it: it checked
		// the token as the write arrived, long after the pause began.
		p := firstEvent(r, func(e sim.Event) bool { return e.Kind == sim.KindPaused })
		if p != nil {
			if e := firstEvent(r, func(e sim.Event) bool {
				return e.Kind == sim.KindWriteRejected && e.Client == p.Client && e.At > p.At
			}); e != nil {
				name, label := r.Clients[p.Client], r.WriteLabels()[e.Write]
				// The preset's own run, not this one, has the check
				// before the pause: the step gives it no time.
				who := fmt.Sprintf("The %s storage %s, in the write's own request: it", which(r, off), rule)
				if off.Storage.Fenced() && on.Storage.Fenced() {
					who = fmt.Sprintf("Both storages check the token and apply the write in one step, in the write's own request: the %s", which(r, off))
				}
				l.text = fmt.Sprintf("atomicity. %s refused %s as it arrived at %s. "+
					"%s checks in a request of its own, before the write: %s's check passes before its pause, and %s lands unchecked after %s.",
					who, label, sim.FormatTime(e.At), button(atomicQuery), name, label, newerReadName(r))
				l.at, l.fig, l.store = []time.Duration{e.At}, figure(r, off), true
				return l
			}
		}
		// Else its first write applied shows it; the next would leave
		// too little of a phone's view for the first's label.
		if e := firstEvent(r, func(e sim.Event) bool { return e.Kind == sim.KindWriteAccepted }); e != nil {
			l.text = fmt.Sprintf("atomicity. The %s storage %s, as with %s at %s", which(r, off), rule, r.WriteLabels()[e.Write], sim.FormatTime(e.At))
			l.at, l.fig, l.store = []time.Duration{e.At}, figure(r, off), true
		}
		break
	}
	l.text += ". No storage here checks apart from writing: " + button(atomicQuery) +
		" shows how that lets a checked write land unchecked after a newer read."
	return l
}

func ttlLesson(r *sim.Result, query string) lesson {
	var pause, expired, resumed, read *sim.Event
	for i := range r.Events {
		e := &r.Events[i]
		switch {
		case e.Kind == sim.KindPaused && pause == nil:
			pause = e
		case e.Kind == sim.KindResumed && pause != nil && resumed == nil && e.Client == pause.Client:
			resumed = e
		case e.Kind == sim.KindExpired && pause != nil && expired == nil && e.Client == pause.Client:
			expired = e
		case e.Kind == sim.KindRead && expired != nil && read == nil && e.Token > expired.Token:
			read = e
		}
	}
	// The reader is in one of the two presets compared, or neither.
	compare := "compare " + button(inTimeQuery) + " with " + button(shortTTLQuery)
	switch query {
	case canonical(inTimeQuery):
		compare = "compare with " + button(shortTTLQuery)
	case canonical(shortTTLQuery):
		compare = "compare with " + button(inTimeQuery)
	}
	// A heartbeat that warned the client (a pause mid-work) is not said
	// not to help.
	tail := " A shorter TTL does not help: a shorter pause does the same (" + compare + ")."
	const heartbeat = " Nor does a heartbeat, paused too."
	l := lesson{text: "the TTL. A pause longer than what is left of the lease loses it." + tail + heartbeat}
	switch {
	case pause != nil && expired != nil:
		a := r.Clients[pause.Client]
		l.text = fmt.Sprintf("the TTL. %s paused at %s with %s of its lease left (it expired at %s): "+
			"a pause longer than that loses the lease.", a, sim.FormatTime(pause.At), sim.FormatTime(expired.At-pause.At), sim.FormatTime(expired.At))
		l.at = []time.Duration{pause.At, expired.At}
		if late := lateWrite(r, pause); late >= 0 && read != nil && resumed != nil {
			// What sets the pause that loses a write is the newer
			// holder's read, not the expiry: both are marked (the
			// pause's start too would leave a phone's view too narrow
			// for their labels).
			b := r.Clients[read.Client]
			// A pause under the TTL that loses a write is shown by its
			// preset, unless this run's is one; a longer TTL is no fix
			// either (students took a shorter TTL's point for that).
			over := about(read.At - pause.At - late)
			at := []time.Duration{expired.At, read.At}
			under := fmt.Sprintf(" %s is under the %s TTL (%s).", sim.FormatTime(over), sim.FormatTime(r.TTL), button(underTTLQuery))
			if pause.Dur < r.TTL {
				// Its write lands in view: marked, its label is shown whole.
				under = fmt.Sprintf(" %s's %s pause, under the %s TTL, lands %s at %s.", a, sim.FormatTime(pause.Dur), sim.FormatTime(r.TTL),
					r.WriteLabels()[slices.IndexFunc(r.Writes, func(w sim.Write) bool { return w.Client == pause.Client && w.At >= resumed.At })], sim.FormatTime(resumed.At+late))
				at = append(at, resumed.At+late)
			}
			l.text = fmt.Sprintf("the TTL. %s paused from %s; its lease expired at %s; only a pause over about %s loses a write: %s's lands after %s's read (%s).%s "+
				"A shorter TTL only lets a shorter pause do it; a longer one is no fix: pauses have no bound, and a crash keeps others out longer. "+
				"A heartbeat can't help: it pauses with %s.",
				a, sim.FormatTime(pause.At), sim.FormatTime(expired.At), sim.FormatTime(over), a, b, sim.FormatTime(read.At), under, a)
			// The storage's row only: the lease service's "renewal of
			// 33 refused" lies at the write's moment too.
			// The point: A's late write where marked (a pause under
			// the TTL), else B's read, which it lands after.
			l.at, l.store, l.focus = at, true, len(at)-1
			return l
		}
		l.text += tail
	case pause != nil && resumed != nil:
		// Its end is not marked: A's write, sent then, has a label too
		// wide for a phone's view beside the pause's.
		l.text = fmt.Sprintf("the TTL. %s's %s pause at %s ended before its lease did; a longer one would lose it.",
			r.Clients[pause.Client], sim.FormatTime(resumed.At-pause.At), sim.FormatTime(pause.At)) + tail + heartbeat
		l.at = []time.Duration{pause.At}
	case pause == nil:
		i := slices.IndexFunc(r.Writes, func(w sim.Write) bool { return !w.Live })
		if i < 0 {
			break
		}
		w := r.Writes[i]
		exp := firstEvent(r, func(e sim.Event) bool { return e.Kind == sim.KindExpired && e.Token == w.Token })
		if exp == nil || exp.At < w.Sent {
			break
		}
		l.text = fmt.Sprintf("the TTL. %s sent %s at %s with %s of its lease left (it expired at %s); it landed at %s. "+
			"A shorter TTL does not help: a shorter delay then does the same (%s).",
			r.Clients[w.Client], r.WriteLabels()[i], sim.FormatTime(w.Sent), sim.FormatTime(exp.At-w.Sent), sim.FormatTime(exp.At), sim.FormatTime(w.At), compare)
		l.at, l.focus = []time.Duration{w.Sent, exp.At, w.At}, 2
	}
	return l
}

func limitsLesson(off *sim.Result) lesson {
	l := lesson{text: "the limits. What fencing cannot protect: side effects outside the storage, " +
		"a storage that does not check tokens"}
	if i := slices.IndexFunc(off.Writes, func(w sim.Write) bool { return w.Accepted && !w.Live }); i >= 0 && off.Storage == sim.StorageOff {
		l.text += fmt.Sprintf(" (the first figure's: %s at %s)", off.WriteLabels()[i], sim.FormatTime(off.Writes[i].At))
		l.at, l.fig, l.store = []time.Duration{off.Writes[i].At}, 1, true
	}
	l.text += ", locks held elsewhere (a paused holder's transaction keeps its row locks: B waits), " +
		"liveness. A refused writer stops (a retry is refused too), takes a new lease, reads again."
	return l
}

// about is d to the second, as a threshold that two presets reach a
// tenth of a second apart (8s, 7.9s) reads as one; under a second, to
// the tenth.
func about(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Second)
}

// canonical is query as Run gives it back (Response.Query).
func canonical(query string) string {
	q, err := ParseQuery(query)
	if err != nil {
		return query
	}
	return q.Encode()
}

// firstEvent is r's first event for which f holds, or nil.
func firstEvent(r *sim.Result, f func(sim.Event) bool) *sim.Event {
	for i := range r.Events {
		if f(r.Events[i]) {
			return &r.Events[i]
		}
	}
	return nil
}

// newerRead is r's first read with a newer token than the first grant's,
// and the write that token's holder then had accepted, or nils.
func newerRead(r *sim.Result) (read, write *sim.Event) {
	first := firstEvent(r, func(e sim.Event) bool { return e.Kind == sim.KindAcquired })
	if first == nil {
		return nil, nil
	}
	read = firstEvent(r, func(e sim.Event) bool { return e.Kind == sim.KindRead && e.Token > first.Token })
	if read == nil {
		return nil, nil
	}
	write = firstEvent(r, func(e sim.Event) bool {
		return e.Kind == sim.KindWriteAccepted && e.Token == read.Token && e.At > read.At
	})
	return read, write
}

// newerReadName names r's first read with a newer token than the first
// grant's ("B's read"), or says "a newer read".
func newerReadName(r *sim.Result) string {
	if rd, _ := newerRead(r); rd != nil {
		return r.Clients[rd.Client] + "'s read"
	}
	return "a newer read"
}

// lateWrite is how long after the paused client resumed its first write
// reached the storage, or -1 if it wrote nothing after resuming.
func lateWrite(r *sim.Result, pause *sim.Event) time.Duration {
	resumed := time.Duration(-1)
	for _, e := range r.Events {
		switch {
		case e.Kind == sim.KindResumed && e.Client == pause.Client && resumed < 0:
			resumed = e.At
		case (e.Kind == sim.KindWriteAccepted || e.Kind == sim.KindWriteRejected) && e.Client == pause.Client && resumed >= 0:
			return e.At - resumed
		}
	}
	return -1
}

// defines says what a storage mode does with tokens, naming the rules.
func defines(s sim.Storage) string {
	const check = "it refuses a write whose token is older than one it has seen (the write check)"
	switch s {
	case sim.StorageWrites:
		return check + "."
	case sim.StorageClaim:
		return check + ", and a read records the reader's token (the claim)."
	case sim.StorageCheckThenWrite:
		return check + ", and a read records the reader's token (the claim), but it checks in one request and writes in the next."
	}
	return "it accepts every write."
}

// seenBy reports whether r's storage had seen token tok by time at: a
// read claimed it or a write with it was accepted.
func seenBy(r *sim.Result, tok fence.Token, at time.Duration) bool {
	for _, e := range r.Events {
		if e.At > at {
			break
		}
		if e.Token == tok && (e.Kind == sim.KindWriteAccepted || (e.Kind == sim.KindRead && claimsOn(r))) {
			return true
		}
	}
	return false
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

// claimLabel quotes the figure's label of the read that brought tok to
// r's storage (` at "read claims 34"`, in straight quotes: curly
// ones name a preset), which the page then keeps in view, or is "" if a
// write brought it.
func claimLabel(r *sim.Result, tok fence.Token) string {
	if !claimsOn(r) || !claimedFirst(r, tok) {
		return ""
	}
	return fmt.Sprintf(" at \"read claims %d\"", tok)
}

// verdictText is the run's verdict in a few lower-case words.
func verdictText(r *sim.Result) string {
	switch r.Verdict() {
	case sim.VerdictBackwards:
		return "tokens went backwards (a write was accepted after a newer token's)"
	case sim.VerdictLost:
		return "a write was lost"
	}
	return "safe"
}
