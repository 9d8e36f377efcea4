package browser

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/fencekit/fencekit/internal/playground"
)

// openPage starts Chromium with a w x h window on the built playground at
// ?query and waits for the first drawing.
func openPage(t *testing.T, w, h int, query string) context.Context {
	t.Helper()
	tab := browserSized(t, w, h) // first: no build when Chromium is missing
	// Headless Chromium's window is at least 500 px wide: emulate a phone's
	// screen as its devtools do.
	if err := chromedp.Do(tab, chromedp.EmulateViewport(int64(w), int64(h))); err != nil {
		t.Fatal(err)
	}
	dir := playgroundDir(t)
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	t.Cleanup(srv.Close)
	if err := chromedp.Do(tab, chromedp.Navigate(srv.URL+"/?"+query)); err != nil {
		t.Fatal(err)
	}
	readPage(t, tab)
	return tab
}

func eval[T any](t *testing.T, tab context.Context, js string) T {
	t.Helper()
	v, err := chromedp.Run(tab, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("%s: %v", js, err)
	}
	return v
}

// TestBrowserLabelSizes: at a desktop width (1280) and a phone's (400),
// every label of both timelines and of the violation map renders at 11 px
// or more (its font size times the figure's scale on screen).
func TestBrowserLabelSizes(t *testing.T) {
	for _, size := range [][2]int{{1280, 900}, {400, 860}} {
		t.Run(fmt.Sprintf("%dpx", size[0]), func(t *testing.T) {
			tab := openPage(t, size[0], size[1], "")
			type label struct {
				Text string
				Px   float64
			}
			labels := eval[[]label](t, tab, `[...document.querySelectorAll(".timeline svg text, #map-figure svg text")].map((el) => ({
  Text: el.textContent,
  Px: parseFloat(getComputedStyle(el).fontSize) * el.getScreenCTM().a,
}))`)
			if len(labels) < 100 {
				t.Fatalf("%d labels found", len(labels))
			}
			small := 0
			least := math.Inf(1)
			for _, l := range labels {
				least = math.Min(least, l.Px)
				if l.Px < 10.99 {
					small++
					if small <= 5 {
						t.Errorf("label %q renders at %.3f px", l.Text, l.Px)
					}
				}
			}
			if small > 0 {
				t.Errorf("%d of %d labels under 11 px", small, len(labels))
			}
			t.Logf("%d labels, the smallest at %.1f px", len(labels), least)
		})
	}
}

// TestBrowserVerdictOnPhone: on a 400 x 860 screen, both verdicts are on
// screen when the page opens and after a slider far down the page moves,
// and they are the simulator's.
func TestBrowserVerdictOnPhone(t *testing.T) {
	tab := openPage(t, 400, 860, "pause=5s")
	type box struct{ Top, Bottom float64 }
	onScreen := func(when string) {
		t.Helper()
		b := eval[box](t, tab, `(() => { const r = document.getElementById("verdicts").getBoundingClientRect(); return {Top: r.top, Bottom: r.bottom}; })()`)
		if b.Top < 0 || b.Bottom > 860 || b.Bottom-b.Top < 10 {
			t.Errorf("%s: the verdicts span y %.0f..%.0f, off a 860 px screen", when, b.Top, b.Bottom)
		}
	}
	onScreen("on load")
	if got := eval[string](t, tab, `document.querySelector("#v-off .verdict").textContent`); got != "Safe" {
		t.Errorf("a 5 s pause: the bar says %q for fencing off, want Safe", got)
	}
	eval[bool](t, tab, `(document.getElementById("work").scrollIntoView(), true)`)
	if _, err := chromedp.Run(tab, setControl("pause", "15000")); err != nil {
		t.Fatal(err)
	}
	q, runs := readPage(t, tab)
	expect(t, runs, q)
	onScreen("after moving the pause with the sliders in view")
	if got := eval[string](t, tab, `document.querySelector("#v-off .verdict").textContent`); got != "Tokens went backwards" {
		t.Errorf("a 15 s pause: the bar says %q for fencing off, want Tokens went backwards", got)
	}
}

// TestBrowserHelpByTap: help is a tap away, not hover-only; the page never
// says left or right (the runs are stacked on a phone); the work slider's
// note says whose step it is; the seed says what it does.
func TestBrowserHelpByTap(t *testing.T) {
	tab := openPage(t, 400, 860, "")
	if eval[bool](t, tab, `document.querySelector('[data-knob="pause"] .help').hidden === false`) {
		t.Fatal("help is shown before a tap")
	}
	if err := chromedp.Do(tab, chromedp.Click(chromedp.CSS(`[data-knob="pause"] .help-toggle`))); err != nil {
		t.Fatal(err)
	}
	help := eval[string](t, tab, `(() => { const h = document.querySelector('[data-knob="pause"] .help'); return h.offsetParent ? h.textContent : ""; })()`)
	if !strings.Contains(help, "stops") {
		t.Errorf("after a tap the pause's help shows %q", help)
	}
	text := eval[string](t, tab, `document.body.innerText`)
	if m := regexp.MustCompile(`(?i).{0,40}(on the (left|right)|\b(left|right)[- ]hand|\((left|right)\)|left/right|\b(left|right)\b[^.]*\b(run|column|side)\b).{0,20}`).FindString(text); m != "" {
		t.Errorf("the page says %q; on a phone the runs are one above the other", m)
	}
	for knob, want := range map[string]string{"work": "B's work step", "seed": "jitter"} {
		if got := eval[string](t, tab, fmt.Sprintf(`document.querySelector('[data-note=%q]').textContent`, knob)); !strings.Contains(got, want) {
			t.Errorf("the %s note says %q, want %q", knob, got, want)
		}
	}
}

// TestBrowserPresets: every preset button runs its query, and the runs the
// lesson describes come out as it says.
func TestBrowserPresets(t *testing.T) {
	tab := openPage(t, 1280, 900, "")
	want := map[string][2]string{ // verdicts of fencing off, fenced
		"scenario=kleppmann&pause=5s":                          {"safe", "safe"},
		"scenario=kleppmann&pause=8.5s":                        {"lost", "safe"},
		"scenario=kleppmann&ttl=4s&pause=5s":                   {"backwards", "safe"},
		"scenario=kleppmann&work=8s&base=writes&storage=claim": {"lost", "safe"},
		"scenario=check-then-write":                            {"backwards", "safe"},
	}
	def, err := playground.Run("", 0)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range def.Presets {
		q, runs := clickPreset(t, tab, i)
		resp := expect(t, runs, q)
		canon, err := playground.Run(p.Query, 0)
		if err != nil {
			t.Fatalf("preset %q: %v", p.Title, err)
		}
		if q != canon.Query {
			t.Errorf("preset %q runs %q, want %q", p.Title, q, canon.Query)
		}
		if w, ok := want[p.Query]; ok && (resp.Runs[0].Verdict != w[0] || resp.Runs[1].Verdict != w[1]) {
			t.Errorf("preset %q: verdicts %s, %s; want %s, %s", p.Title, resp.Runs[0].Verdict, resp.Runs[1].Verdict, w[0], w[1])
		}
	}
}

// TestBrowserTour steps through Kleppmann's scenario: one sentence a
// step, forward and back (buttons and arrow keys), a cursor at the step's
// moment in both figures, the late write's step tells both outcomes, the
// end's step gives both final values, and the last step's Next reads
// Finish and closes the tour.
func TestBrowserTour(t *testing.T) {
	tab := openPage(t, 1280, 900, "scenario=kleppmann")
	resp, err := playground.Run("scenario=kleppmann", pageWidth)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Tour) < 8 {
		t.Fatalf("the tour has %d steps", len(resp.Tour))
	}
	type state struct {
		Text    string
		Cursors []string
		Back    bool
		Next    bool
		Label   string
		Hidden  bool
	}
	read := func() state {
		return eval[state](t, tab, `({
  Text: document.getElementById("tour-text").textContent,
  Cursors: [...document.querySelectorAll(".timeline line.cursor")].map((l) => l.getAttribute("x1")),
  Back: document.getElementById("tour-back").disabled,
  Next: document.getElementById("tour-next").disabled,
  Label: document.getElementById("tour-next").textContent,
  Hidden: document.getElementById("tour").hidden,
})`)
	}
	check := func(i int) {
		t.Helper()
		s := read()
		step := resp.Tour[i]
		if s.Text != step.Text {
			t.Errorf("step %d shows %q, want %q", i, s.Text, step.Text)
		}
		// The cursor stands 8 px right of the moment (arrowsClearOfCursor, releaseMarkClear).
		if want := fmt.Sprint(step.X + 8); len(s.Cursors) != 2 || s.Cursors[0] != want || s.Cursors[1] != want {
			t.Errorf("step %d: cursors at %v, want both at %v (8 px past the step's x)", i, s.Cursors, want)
		}
		last := i == len(resp.Tour)-1
		if s.Back != (i == 0) || s.Next || (s.Label == "Finish") != last {
			t.Errorf("step %d: back disabled %v, next disabled %v and reads %q", i, s.Back, s.Next, s.Label)
		}
	}
	if err := chromedp.Do(tab, chromedp.Click(chromedp.ID("tour-start"))); err != nil {
		t.Fatal(err)
	}
	check(0)
	for i := 1; i <= 3; i++ {
		if err := chromedp.Do(tab, chromedp.Click(chromedp.ID("tour-next"))); err != nil {
			t.Fatal(err)
		}
		check(i)
	}
	if err := chromedp.Do(tab, chromedp.Click(chromedp.ID("tour-back"))); err != nil {
		t.Fatal(err)
	}
	check(2)
	late := -1
	for i, s := range resp.Tour {
		if strings.Contains(s.Text, "late write A1") {
			late = i
		}
	}
	if late < 0 || !strings.Contains(resp.Tour[late].Text, "B1 is now lost") || !strings.Contains(resp.Tour[late].Text, "Write check + claim, in one step: the storage refuses it") {
		t.Fatalf("no step tells A's late write landing over B1 and refused with fencing: %+v", resp.Tour)
	}
	for i := 2; i < late; i++ {
		eval[bool](t, tab, `(document.getElementById("tour").dispatchEvent(new KeyboardEvent("keydown", {key: "ArrowRight", bubbles: true})), true)`)
	}
	check(late)
	end := slices.IndexFunc(resp.Tour, func(s playground.Step) bool { return strings.Contains(s.Text, "the end.") })
	if end < 0 || !strings.Contains(resp.Tour[end].Text, `final value "A1"`) || !strings.Contains(resp.Tour[end].Text, `final value "B1"`) {
		t.Errorf("no step gives the end with both final values: %+v", resp.Tour)
	}
	// The last step's Finish closes the tour.
	for i := late; i < len(resp.Tour)-1; i++ {
		eval[bool](t, tab, `(document.getElementById("tour").dispatchEvent(new KeyboardEvent("keydown", {key: "ArrowRight", bubbles: true})), true)`)
	}
	check(len(resp.Tour) - 1)
	if err := chromedp.Do(tab, chromedp.Click(chromedp.ID("tour-next"))); err != nil {
		t.Fatal(err)
	}
	if s := read(); !s.Hidden || len(s.Cursors) != 0 {
		t.Errorf("Finish leaves the tour shown (hidden %v) or its cursors drawn (%v)", s.Hidden, s.Cursors)
	}
}

// TestBrowserAxisHoldsStill: both figures share one time axis, and moving
// a slider by a step leaves it where it was.
func TestBrowserAxisHoldsStill(t *testing.T) {
	tab := openPage(t, 1280, 900, "scenario=kleppmann&pause=15s")
	ticks := func() [2]string {
		t.Helper()
		return eval[[2]string](t, tab, `[...document.querySelectorAll(".run .timeline svg")].map((svg) =>
  [...svg.querySelectorAll("text")].filter((x) => x.getAttribute("font-size") === "11").map((x) => x.getAttribute("x") + ":" + x.textContent).join(" "))`)
	}
	before := ticks()
	if before[0] == "" || before[0] != before[1] {
		t.Fatalf("the two figures' axes differ:\n%s\n%s", before[0], before[1])
	}
	for _, v := range []string{"15500", "16000", "14000"} {
		if _, err := chromedp.Run(tab, setControl("pause", v)); err != nil {
			t.Fatal(err)
		}
		readPage(t, tab)
		if after := ticks(); after != before {
			t.Errorf("pause %s ms moved the axis:\n%s\nto\n%s", v, before[0], after[0])
		}
	}
}

// TestBrowserMapMarksThisRun: the violation map marks the run's pause/TTL
// on each panel and follows the pause slider.
func TestBrowserMapMarksThisRun(t *testing.T) {
	tab := openPage(t, 1280, 900, "scenario=kleppmann&pause=15s")
	type mark struct{ X, Plot, W, XMax float64 }
	marks := func() []mark {
		return eval[[]mark](t, tab, `[...document.querySelectorAll("#map-figure line.here")].map((l, i) => {
  const p = document.querySelectorAll("#map-figure rect.plot")[i];
  return {X: +l.getAttribute("x1"), Plot: +p.getAttribute("x"), W: +p.getAttribute("width"), XMax: +p.dataset.xmax};
})`)
	}
	check := func(ratio float64) {
		t.Helper()
		ms := marks()
		if len(ms) != 4 {
			t.Fatalf("%d marks, want one per panel (4)", len(ms))
		}
		for _, m := range ms {
			if want := m.Plot + ratio/m.XMax*m.W; math.Abs(m.X-want) > 0.5 {
				t.Errorf("pause/TTL %.2f marked at x %.1f, want %.1f", ratio, m.X, want)
			}
		}
	}
	check(1.5)
	if _, err := chromedp.Run(tab, setControl("pause", "5000")); err != nil {
		t.Fatal(err)
	}
	readPage(t, tab)
	check(0.5)
}

// TestBrowserPhoneHasNoSidewaysPage: on a 400 px screen only the figures
// scroll sideways, never the page itself.
func TestBrowserPhoneHasNoSidewaysPage(t *testing.T) {
	tab := openPage(t, 400, 860, "")
	type widths struct {
		Page, Screen float64
		Widest       string
	}
	w := eval[widths](t, tab, `(() => {
  let widest = "", max = 0;
  for (const el of document.querySelectorAll("body *")) {
    if (el.closest(".timeline, .scroll")) continue;
    const r = el.getBoundingClientRect();
    if (r.right > max) { max = r.right; widest = el.tagName + "." + el.className + "#" + el.id; }
  }
  return {Page: document.documentElement.scrollWidth, Screen: innerWidth, Widest: widest + " " + max};
})()`)
	if w.Page > w.Screen {
		t.Errorf("the page is %.0f px wide on a %.0f px screen (widest: %s)", w.Page, w.Screen, w.Widest)
	}
}

// TestBrowserLabelsAtTheirEvents: in the page as drawn, every label of an
// event (data-x: the event's x) starts at most 70 px after the event and
// ends at most 40 px before it, in every preset's figures.
func TestBrowserLabelsAtTheirEvents(t *testing.T) {
	tab := openPage(t, 1280, 900, "")
	def, err := playground.Run("", 0)
	if err != nil {
		t.Fatal(err)
	}
	type label struct {
		Text       string
		X0, X1, At float64
	}
	checked := 0
	for i := range def.Presets {
		if err := chromedp.Do(tab, chromedp.Click(chromedp.CSS(fmt.Sprintf(`#presets button:nth-child(%d)`, i+1)))); err != nil {
			t.Fatal(err)
		}
		q, _ := readPage(t, tab)
		labels := eval[[]label](t, tab, `[...document.querySelectorAll(".timeline svg text[data-x]")].map((el) => {
  const b = el.getBBox();
  return {Text: el.textContent, X0: b.x, X1: b.x + b.width, At: +el.dataset.x};
})`)
		for _, l := range labels {
			if l.X0 > l.At+70 || l.X1 < l.At-40 {
				t.Errorf("%s: label %q drawn at x %.0f..%.0f, far from its event at %.0f", q, l.Text, l.X0, l.X1, l.At)
			}
		}
		checked += len(labels)
	}
	if checked < 50 {
		t.Fatalf("only %d labels checked", checked)
	}
}

// TestBrowserTourStepInAddress: the address records the tour's step
// (#step-N), so that a step can be linked: loading that address opens the
// tour at that step, and closing the tour takes the step out of the
// address.
func TestBrowserTourStepInAddress(t *testing.T) {
	tab := openPage(t, 1280, 900, "scenario=kleppmann")
	resp, err := playground.Run("scenario=kleppmann", pageWidth)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"tour-start", "tour-next", "tour-next"} {
		if err := chromedp.Do(tab, chromedp.Click(chromedp.ID(id))); err != nil {
			t.Fatal(err)
		}
	}
	addr := eval[string](t, tab, `location.href`)
	if !strings.HasSuffix(addr, "?"+resp.Query+"#step-3") {
		t.Fatalf("at step 3 the address is %q, want it to end in ?%s#step-3", addr, resp.Query)
	}
	// A fresh load of that address: the same query, the tour at step 3.
	if err := chromedp.Do(tab, chromedp.Navigate("about:blank")); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(tab, chromedp.Navigate(addr)); err != nil {
		t.Fatal(err)
	}
	readPage(t, tab)
	type state struct {
		Hidden bool
		Count  string
		Text   string
	}
	s := eval[state](t, tab, `({
  Hidden: document.getElementById("tour").hidden,
  Count: document.getElementById("tour-count").textContent,
  Text: document.getElementById("tour-text").textContent,
})`)
	if want := fmt.Sprintf("Step 3 of %d.", len(resp.Tour)); s.Hidden || s.Count != want || s.Text != resp.Tour[2].Text {
		t.Errorf("loading %s shows the tour hidden %v at %q %q, want %q %q", addr, s.Hidden, s.Count, s.Text, want, resp.Tour[2].Text)
	}
	if err := chromedp.Do(tab, chromedp.Click(chromedp.ID("tour-close"))); err != nil {
		t.Fatal(err)
	}
	if got := eval[string](t, tab, `location.href`); strings.Contains(got, "#") {
		t.Errorf("after closing the tour the address is %q, still with a step", got)
	}
}

// TestBrowserTourPresetLinks: where a step's text names another preset
// in quotes (“Check, then write”), the name is a button, on a desktop
// screen and a phone, that shows that preset and opens its tour at its
// step on the same topic (the claim, atomicity, the TTL), with that
// run's moments marked; the browser's Back returns to the step left, and
// so does Finish at the preset tour's last step. A student followed each
// link of the default tour's into a new tour that repeated the main one
// for 20 steps before it reached the point; another (trial 12) pressed
// Finish there and lost the way back with the closed tour.
func TestBrowserTourPresetLinks(t *testing.T) {
	resp, err := playground.Run("scenario=kleppmann", pageWidth)
	if err != nil {
		t.Fatal(err)
	}
	links := []string{"scenario=check-then-write", "scenario=kleppmann&work=8s&base=writes&storage=claim", "scenario=kleppmann&pause=8.5s"}
	for _, size := range [][2]int{{1280, 900}, {400, 860}} {
		var tab context.Context
		for _, query := range links {
			target, err := playground.Run(query, pageWidth)
			if err != nil {
				t.Fatal(err)
			}
			p := slices.IndexFunc(resp.Presets, func(p playground.Preset) bool { return p.Query == query })
			name, _, _ := strings.Cut(resp.Presets[p].Title, ":")
			name = "“" + name + "”"
			i := slices.IndexFunc(resp.Tour, func(s playground.Step) bool { return strings.Contains(s.Text, name) })
			if i < 0 {
				t.Fatalf("no step of the default tour names %s", name)
			}
			if tab == nil {
				tab = openPage(t, size[0], size[1], fmt.Sprintf("scenario=kleppmann#step-%d", i+1))
			} else {
				eval[bool](t, tab, fmt.Sprintf(`(showStep(%d), true)`, i))
			}
			buttons := eval[[]string](t, tab, `[...document.querySelectorAll("#tour-text button")].map((b) => b.textContent)`)
			if !slices.Contains(buttons, name) {
				t.Errorf("%dx%d, step %d (%q): the named presets' buttons are %q, want %s among them", size[0], size[1], i+1, resp.Tour[i].Text, buttons, name)
				continue
			}
			if err := chromedp.Do(tab, chromedp.Click(chromedp.CSS(`#tour-text button[data-query="`+query+`"]`))); err != nil {
				t.Fatal(err)
			}
			type state struct {
				Hidden      bool
				Query       string
				Count, Text string
				Marks       int
			}
			s := eval[state](t, tab, `({
  Hidden: document.getElementById("tour").hidden,
  Query: document.body.dataset.query,
  Count: document.getElementById("tour-count").textContent,
  Text: document.getElementById("tour-text").textContent,
  Marks: document.querySelectorAll(".timeline line.moment").length,
})`)
			j := slices.IndexFunc(target.Tour, func(o playground.Step) bool { return o.Topic != "" && o.Topic == resp.Tour[i].Topic })
			if j < 0 {
				t.Fatalf("%s: no step of its tour is on %q", name, resp.Tour[i].Topic)
			}
			if want := fmt.Sprintf("Step %d of %d.", j+1, len(target.Tour)); s.Hidden || s.Query != target.Query || s.Count != want || s.Text != target.Tour[j].Text || s.Marks == 0 {
				t.Errorf("%dx%d: the button %s shows %q, the tour hidden %v at %q %q, %d moments marked; want %q at %q %q, marked",
					size[0], size[1], name, s.Query, s.Hidden, s.Count, s.Text, s.Marks, target.Query, want, target.Tour[j].Text)
			}
			if err := chromedp.Do(tab, chromedp.NavigateBack(), chromedp.Sleep(300*time.Millisecond)); err != nil {
				t.Fatal(err)
			}
			if got, want := eval[string](t, tab, `document.getElementById("tour-count").textContent`), fmt.Sprintf("Step %d of %d.", i+1, len(resp.Tour)); got != want {
				t.Errorf("%dx%d: Back from %s shows %q, want the main tour's %q", size[0], size[1], name, got, want)
			}
			// Finish, at the preset's tour's last step, goes back to the
			// main tour too: it once closed the tour, and its way back with it.
			if err := chromedp.Do(tab, chromedp.Click(chromedp.CSS(`#tour-text button[data-query="`+query+`"]`))); err != nil {
				t.Fatal(err)
			}
			eval[bool](t, tab, fmt.Sprintf(`(showStep(%d), true)`, len(target.Tour)-1))
			if err := chromedp.Do(tab, chromedp.Click(chromedp.ID("tour-next")), chromedp.Sleep(300*time.Millisecond)); err != nil {
				t.Fatal(err)
			}
			f := eval[state](t, tab, `({
  Hidden: document.getElementById("tour").hidden,
  Query: document.body.dataset.query,
  Count: document.getElementById("tour-count").textContent,
})`)
			if want := fmt.Sprintf("Step %d of %d.", i+1, len(resp.Tour)); f.Hidden || f.Query != resp.Query || f.Count != want {
				t.Errorf("%dx%d: Finish in %s's tour shows %q, the tour hidden %v at %q; want the main tour's %q at %q, shown",
					size[0], size[1], name, f.Query, f.Hidden, f.Count, resp.Query, want)
			}
			if size[0] < 600 {
				break // a phone follows one link: the links are the same code
			}
		}
	}
}

// TestBrowserNoConsoleErrors: loading the page, taking a few tour steps
// and following a step's preset link log no error to the console and
// fetch nothing that fails: the first load once logged a 404 for
// /favicon.ico.
func TestBrowserNoConsoleErrors(t *testing.T) {
	tab := browserSized(t, 1280, 800)
	var mu sync.Mutex
	var errs []string
	err := chromedp.Listen(tab, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch ev := ev.(type) {
		case *runtime.EventExceptionThrown:
			errs = append(errs, fmt.Sprintf("exception: %s (line %d)", ev.ExceptionDetails.Text, ev.ExceptionDetails.LineNumber))
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeAssert {
				errs = append(errs, fmt.Sprintf("console.%s: %d arguments", ev.Type, len(ev.Args)))
			}
		case *cdplog.EventEntryAdded:
			if ev.Entry.Level == cdplog.EntryLevelError {
				errs = append(errs, "log: "+ev.Entry.Text+" "+ev.Entry.URL)
			}
		case *network.EventResponseReceived:
			if ev.Response.Status >= 400 {
				errs = append(errs, fmt.Sprintf("%s: HTTP %d", ev.Response.URL, ev.Response.Status))
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(playgroundDir(t))))
	t.Cleanup(srv.Close)
	if err := chromedp.Do(tab, chromedp.Navigate(srv.URL+"/")); err != nil {
		t.Fatal(err)
	}
	readPage(t, tab)
	resp, err := playground.Run("", pageWidth)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(resp.Tour, func(s playground.Step) bool { return strings.Contains(s.Text, "“Check, then write”") })
	if err := chromedp.Do(tab, chromedp.Click(chromedp.ID("tour-start")), chromedp.Click(chromedp.ID("tour-next"))); err != nil {
		t.Fatal(err)
	}
	eval[bool](t, tab, fmt.Sprintf(`(showStep(%d), true)`, i))
	if err := chromedp.Do(tab, chromedp.Click(chromedp.CSS(`#tour-text button.preset-link`)), chromedp.Sleep(500*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, e := range errs {
		t.Error(e)
	}
}

// TestBrowserTourPresetLinkReturns: a preset link in a step of the main
// tour starts that preset's tour, which offers a way back to the main
// tour at that step, and so does the browser's Back: following one left
// the main tour's remaining steps behind, and Back left the page. With
// that way back, the tour's bar keeps the main tour's height (on a phone
// it once pushed the legend onto a row of its own: 194 px, not 172) and
// stays within a quarter of the screen, and on a desktop both figures stay on it (beside Next, it once took
// the step's text a fourth line, and the second figure's axis 17 px).
func TestBrowserTourPresetLinkReturns(t *testing.T) {
	resp, err := playground.Run("", pageWidth)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(resp.Tour, func(s playground.Step) bool { return strings.Contains(s.Text, "“Check, then write”") })
	if i < 0 {
		t.Fatal("no step of the default tour names “Check, then write”")
	}
	for _, size := range [][2]int{{1280, 800}, {400, 860}} {
		tab := openPage(t, size[0], size[1], fmt.Sprintf("#step-%d", i+1))
		type state struct {
			Query, Count, Return string
			Shown                bool
			Bar, Runs            float64
		}
		read := func() state {
			return eval[state](t, tab, `(() => {
  const r = document.getElementById("tour-return");
  const b = r.getBoundingClientRect();
  return {Query: document.body.dataset.query, Count: document.getElementById("tour-count").textContent, Return: r.textContent + " (" + r.getAttribute("aria-label") + ")",
    Shown: !r.hidden && b.width > 0 && b.left >= 0 && b.right <= innerWidth && b.top >= 0 && b.bottom <= innerHeight,
    Bar: document.getElementById("sticky").getBoundingClientRect().height,
    Runs: document.querySelector("#run-on .timeline").getBoundingClientRect().bottom};
})()`)
		}
		want := fmt.Sprintf("Step %d of %d.", i+1, len(resp.Tour))
		for _, back := range []struct {
			how string
			act chromedp.Action[chromedp.Void]
		}{{"its return button", chromedp.Click(chromedp.ID("tour-return"))}, {"the browser's Back", chromedp.NavigateBack()}} {
			main := read()
			if err := chromedp.Do(tab, chromedp.Click(chromedp.CSS(`#tour-text button[data-query="scenario=check-then-write"]`))); err != nil {
				t.Fatal(err)
			}
			in := read()
			if in.Bar != main.Bar {
				t.Errorf("%dx%d: with the way back, the tour's bar is %.0f px tall on the preset's linked step, the main tour's %.0f: the figures jump",
					size[0], size[1], in.Bar, main.Bar)
			}
			if !in.Shown || !strings.Contains(in.Return, "Main tour (Back to the main tour, step "+strconv.Itoa(i+1)+")") {
				t.Errorf("%dx%d: the preset's tour (%s, %q) shows the way back %v, %q; want it on screen, naming the main tour's step %d",
					size[0], size[1], in.Query, in.Count, in.Shown, in.Return, i+1)
			}
			if in.Bar > float64(size[1])/4 {
				t.Errorf("%dx%d: with the way back, the tour's bar is %.0f px tall, over a quarter of the screen", size[0], size[1], in.Bar)
			}
			if size[0] > 600 && in.Runs > float64(size[1]) {
				t.Errorf("%dx%d: with the way back, the second figure ends at y %.0f, below the screen", size[0], size[1], in.Runs)
			}
			if err := chromedp.Do(tab, back.act, chromedp.Sleep(300*time.Millisecond)); err != nil {
				t.Fatalf("%s: %v", back.how, err)
			}
			if out := read(); out.Query != resp.Query || out.Count != want || out.Shown {
				t.Errorf("%dx%d: after %s the page shows %s at %q (the way back shown: %v), want %s at %q",
					size[0], size[1], back.how, out.Query, out.Count, out.Shown, resp.Query, want)
			}
		}
	}
}

// TestBrowserFinishShowsTheStory: after Finish at a desktop's 1280 x 800,
// no line of the scenario's description lies under the sticky bar, its
// top hidden and its bottom shown (the bar, shorter without the tour,
// once covered its first line).
func TestBrowserFinishShowsTheStory(t *testing.T) {
	tab := openPage(t, 1280, 800, "")
	resp, err := playground.Run("", pageWidth)
	if err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(tab, chromedp.Click(chromedp.ID("tour-start"))); err != nil {
		t.Fatal(err)
	}
	eachStep(t, tab, resp.Tour, func(int, tourState) {})
	if err := chromedp.Do(tab, chromedp.Click(chromedp.ID("tour-next")), chromedp.Sleep(300*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	type box struct{ Bar, Top, Bottom float64 }
	b := eval[box](t, tab, `(() => {
  const s = document.querySelector(".story").getBoundingClientRect();
  return {Bar: document.getElementById("sticky").getBoundingClientRect().bottom, Top: s.top, Bottom: s.bottom};
})()`)
	if b.Top < b.Bar-0.5 && b.Bottom > b.Bar+0.5 {
		t.Errorf("after Finish the description spans y %.0f..%.0f, the sticky bar ends at %.0f: its top lies under the bar", b.Top, b.Bottom, b.Bar)
	}
}
