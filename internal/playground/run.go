package playground

import (
	"fmt"
	"strings"
	"time"

	"github.com/fencekit/fencekit/sim"
	"github.com/fencekit/fencekit/sim/render"
)

// Response is what the page draws for one query.
type Response struct {
	// Query is the canonical query; the page puts it in its URL.
	Query    string `json:"query"`
	Scenario string `json:"scenario"`
	Title    string `json:"title"`
	Story    string `json:"story"`
	// Uses lists the knobs the scenario reads; the page disables the others.
	Uses []string `json:"uses"`
	// Values are the knobs' values as the page's controls show them.
	Values map[string]string `json:"values"`
	// Runs are the query's base (the scenario's baseline unless set:
	// fencing off for most), then its storage mode.
	Runs []Outcome `json:"runs"`
	// Scenarios, StorageModes, Sliders and Presets are the page's controls;
	// Notes say what a slider means in this scenario, where that differs
	// from its help (such as "work": B's step only, in kleppmann).
	Scenarios    []Choice          `json:"scenarios"`
	StorageModes []Choice          `json:"storage_modes"`
	Sliders      []Slider          `json:"sliders"`
	Presets      []Preset          `json:"presets"`
	Notes        map[string]string `json:"notes"`
	// Tour steps through the runs event by event (see [Step]).
	Tour []Step `json:"tour"`
	// PauseTTL is A's pause over the TTL, where the violation map marks
	// this run; 0 when the scenario has no pause.
	PauseTTL float64 `json:"pause_ttl"`
}

// Choice is one entry of a menu.
type Choice struct {
	Name  string `json:"name"`
	Title string `json:"title"`
	Help  string `json:"help,omitempty"`
}

// Outcome is one run: its drawing and its counts.
type Outcome struct {
	Storage  string   `json:"storage"`
	Heading  string   `json:"heading"`
	What     string   `json:"what"`    // what the storage does with tokens (sim.Storage.Describe)
	Verdict  string   `json:"verdict"` // "safe", "lost" or "backwards"
	Accepted int      `json:"accepted"`
	Rejected int      `json:"rejected"`
	Lost     []string `json:"lost"`
	Final    string   `json:"final"`
	Summary  []string `json:"summary"`
	// Tones mark each summary line "bad", "good" or "" for the page's colours.
	Tones []string `json:"tones"`
	SVG   string   `json:"svg"`
	// Opening is the run drawn from 0 to [openingEnd] only, at the same
	// width, or "" if the opening is not crowded (see [opening]): the
	// tour's steps in it (Step.Opening) show this drawing.
	Opening string `json:"opening,omitempty"`
}

// DefaultWidth is the figures' width in pixels when the page gives none.
const DefaultWidth = 1100

// Run parses the query (see [ParseQuery]), runs the scenario with fencing
// off and with the query's storage mode, and returns both runs drawn
// width pixels wide (0: DefaultWidth; see [render.Layout]) on one time axis,
// counted, and told step by step. It is deterministic: the same query and
// width give the same Response.
func Run(raw string, width int) (*Response, error) {
	q, err := ParseQuery(raw)
	if err != nil {
		return nil, err
	}
	sc, err := sim.Lookup(q.Scenario)
	if err != nil {
		return nil, err
	}
	resp := &Response{Query: q.Encode(), Scenario: sc.Name, Title: sc.Title, Story: sc.Story(q.Params),
		Values: map[string]string{}, StorageModes: storageChoices, Presets: presets, Notes: notes(sc)}
	if sc.Uses("pause") {
		resp.PauseTTL = float64(q.Params.Pause) / float64(q.Params.TTL)
	}
	for _, s := range sim.Scenarios() {
		resp.Scenarios = append(resp.Scenarios, Choice{Name: s.Name, Title: s.Title})
	}
	for _, k := range knobs {
		resp.Sliders = append(resp.Sliders, k.Slider)
		if sc.Uses(k.Name) {
			resp.Uses = append(resp.Uses, k.Name)
		}
	}
	for _, kv := range strings.Split(resp.Query, "&") {
		k, v, _ := strings.Cut(kv, "=")
		resp.Values[k] = v
	}
	results, end, err := runBoth(sc, q)
	if err != nil {
		return nil, err
	}
	if e := firstEvent(results[0], func(e sim.Event) bool { return e.Kind == sim.KindPaused }); e != nil && sc.Uses("pause-at") {
		// The slider counts from the start of A's work; the figures
		// and the tour from the run's.
		resp.Notes["pause-at"] = fmt.Sprintf("A's work starts at %s, so A pauses at %s on the figures.",
			sim.FormatTime(e.At-q.Params.PauseAt), sim.FormatTime(e.At))
	}
	if width == 0 {
		width = DefaultWidth
	}
	// One axis for both runs, ending a second or more after the last
	// event, rounded so that it holds still while a slider moves; compact,
	// so that both runs fit one screen.
	layout := render.Layout{Width: width, End: render.StableEnd(end + time.Second), Compact: true}
	// A column narrower than 1000 px (a phone, which scrolls the figures
	// sideways) gets the most compressed time axis that keeps both runs'
	// labels apart, so that its view spans more of the runs.
	if width < 1000 {
		layout.Width = 1000
		layout = layout.Narrowest(results...)
	}
	zoom := opening(results, layout)
	for _, res := range results {
		o, err := outcome(res, layout)
		if err != nil {
			return nil, err
		}
		if zoom.End > 0 {
			var b strings.Builder
			if err := render.SVGLayout(&b, res, "run-"+o.Storage, zoom); err != nil {
				return nil, fmt.Errorf("playground: drawing the opening: %v", err)
			}
			o.Opening = b.String()
		}
		resp.Runs = append(resp.Runs, o)
	}
	resp.Tour = tour(results[0], results[1], layout, zoom, resp.Query)
	return resp, nil
}

// openingEnd is where a run's opening ends: the first grant and read
// come within a few tenths of a second of the start.
const openingEnd = time.Second

// opening is the layout that draws the runs' first openingEnd on the
// whole width, or one with End 0 if fewer than two events of a run lie
// in it or they lie 40 px apart or more in l: drawn at the run's scale,
// A's grant and read at 0.2 s and 0.3 s were 5 px apart, their arrows
// one on the other (student trial 7).
func opening(runs []*sim.Result, l render.Layout) render.Layout {
	for _, r := range runs {
		var xs []float64
		for _, e := range r.Events {
			if e.At > 0 && e.At < openingEnd {
				xs = append(xs, l.X(e.At))
			}
		}
		for i := 1; i < len(xs); i++ {
			if xs[i] > xs[i-1] && xs[i]-xs[i-1] < 40 {
				zoom := l
				zoom.End = openingEnd
				return zoom
			}
		}
	}
	return render.Layout{}
}

func outcome(res *sim.Result, layout render.Layout) (Outcome, error) {
	storage := res.Storage
	o := Outcome{Storage: storage.String(), Heading: heading(storage), What: sentence(storage.Describe()), Verdict: "safe",
		Final: res.ValueString(res.Final), Summary: res.Summary(), Lost: []string{}}
	labels := res.WriteLabels()
	for _, e := range res.Events {
		switch e.Kind {
		case sim.KindWriteAccepted:
			o.Accepted++
		case sim.KindWriteRejected:
			o.Rejected++
		}
	}
	for _, i := range res.Lost() {
		o.Lost = append(o.Lost, labels[i])
	}
	switch res.Verdict() {
	case sim.VerdictBackwards:
		o.Verdict = "backwards"
	case sim.VerdictLost:
		o.Verdict = "lost"
	}
	for _, line := range o.Summary {
		o.Tones = append(o.Tones, tone(line))
	}
	var b strings.Builder
	if err := render.SVGLayout(&b, res, "run-"+o.Storage, layout); err != nil {
		return Outcome{}, fmt.Errorf("playground: drawing the timeline: %v", err)
	}
	o.SVG = b.String()
	return o, nil
}

// tone says whether a summary line reports harm ("bad"), protection
// ("good") or neither, as the HTML timeline colours them.
func tone(line string) string {
	switch {
	case strings.HasPrefix(line, "TOKENS WENT BACKWARDS") || strings.Contains(line, "LOST") || strings.Contains(line, "expired."):
		return "bad"
	case strings.HasPrefix(line, "SAFE") || strings.Contains(line, "REJECTED"):
		return "good"
	}
	return ""
}

// heading names a run by what its storage does with tokens.
func heading(storage sim.Storage) string {
	switch storage {
	case sim.StorageWrites:
		return "Write check only"
	case sim.StorageClaim:
		return "Write check + claim, in one step"
	case sim.StorageCheckThenWrite:
		return "Check, then write (two steps)"
	}
	return "Fencing off"
}

// sentence capitalizes s and ends it with a full stop.
func sentence(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:] + "."
}

// runBoth runs sc with q's base storage, then with its chosen one, and
// returns both results and the later of their ends.
func runBoth(sc sim.Scenario, q Query) ([]*sim.Result, time.Duration, error) {
	var results []*sim.Result
	var end time.Duration
	for _, storage := range []sim.Storage{q.Base, q.Params.Storage} {
		p := q.Params
		p.Storage = storage
		res, err := sc.Run(p)
		if err != nil {
			return nil, 0, fmt.Errorf("playground: %v", err)
		}
		results = append(results, res)
		end = max(end, res.End)
	}
	return results, end, nil
}
