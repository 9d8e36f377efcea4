package browser

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/fencekit/fencekit/internal/playground"
)

// shot writes a screenshot of the screen to $FENCEKIT_SCREENSHOTS/name.png
// when that folder is set, for a person to look at.
func shot(t *testing.T, tab context.Context, name string) {
	t.Helper()
	dir := os.Getenv("FENCEKIT_SCREENSHOTS")
	if dir == "" {
		return
	}
	png, err := chromedp.Run(tab, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// tourState is what the page shows of the tour: its text, the figures'
// veils (what hides the part after the step) and where the figures and
// the sticky bar are on screen.
type tourState struct {
	Text      string
	Veils     []veil
	Lanes     [][2]float64 // per figure: the first and the last lane's y on screen
	Axes      []float64    // per figure: the bottom of its time axis' labels on screen
	StickyTop float64
	StickyBot float64
	Screen    float64
}

type veil struct{ X, Right, Width, Opacity float64 }

const tourStateJS = `(() => {
  const sticky = document.getElementById("sticky").getBoundingClientRect();
  return {
    Text: document.getElementById("tour-text").textContent,
    Veils: [...document.querySelectorAll(".run .timeline svg")].map((svg) => {
      const v = svg.querySelector("rect.veil");
      if (!v) return {X: -1, Right: -1, Width: +svg.getAttribute("width"), Opacity: 0};
      return {X: +v.getAttribute("x"), Right: +v.getAttribute("x") + +v.getAttribute("width"),
        Width: +svg.getAttribute("width"), Opacity: +getComputedStyle(v).fillOpacity * +getComputedStyle(v).opacity};
    }),
    Lanes: [...document.querySelectorAll(".run .timeline svg")].map((svg) => {
      const ys = [...svg.querySelectorAll("line[stroke='#bbb']")].map((l) => l.getBoundingClientRect().top);
      return [Math.min(...ys), Math.max(...ys)];
    }),
    Axes: [...document.querySelectorAll(".run .timeline svg")].map((svg) =>
      Math.max(...[...svg.querySelectorAll("text[font-size='11']")].map((l) => l.getBoundingClientRect().bottom))),
    StickyTop: sticky.top, StickyBot: sticky.bottom, Screen: innerHeight,
  };
})()`

// startTour opens the page at query, w x h, presses Guided tour and
// returns the tab and the tour's steps as Run gives them.
func startTour(t *testing.T, w, h int, query string) (context.Context, []playground.Step) {
	t.Helper()
	tab := openPage(t, w, h, query)
	resp, err := playground.Run(query, pageWidth)
	if err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(tab, chromedp.Click(chromedp.ID("tour-start"))); err != nil {
		t.Fatal(err)
	}
	return tab, resp.Tour
}

// next presses Next and waits for the step's text.
func next(t *testing.T, tab context.Context, want string) tourState {
	t.Helper()
	if err := chromedp.Do(tab, chromedp.Click(chromedp.ID("tour-next"))); err != nil {
		t.Fatal(err)
	}
	return waitStep(t, tab, want)
}

// eachStep calls f with each step of the tour and what the page shows
// of it, from the first step, pressing Next between them.
func eachStep(t *testing.T, tab context.Context, steps []playground.Step, f func(i int, s tourState)) {
	t.Helper()
	for i := range steps {
		var s tourState
		if i == 0 {
			s = waitStep(t, tab, steps[0].Text)
		} else {
			s = next(t, tab, steps[i].Text)
		}
		f(i, s)
	}
}

// waitStep polls until the tour shows the text want and the page has
// scrolled to it (two equal readings in a row), and returns what it shows.
func waitStep(t *testing.T, tab context.Context, want string) tourState {
	t.Helper()
	var last tourState
	for i := 0; i < 100; i++ {
		s := eval[tourState](t, tab, tourStateJS)
		if s.Text == want && fmt.Sprint(s) == fmt.Sprint(last) {
			return s
		}
		last = s
	}
	t.Fatalf("the tour shows %q, want %q", last.Text, want)
	return last
}

// TestBrowserTourDrawsUpToTheStep: at each step of the tour, both figures
// are drawn up to the step's moment and veiled after it, so the outcome
// does not show before the tour reaches it.
func TestBrowserTourDrawsUpToTheStep(t *testing.T) {
	tab, steps := startTour(t, 1280, 800, "scenario=kleppmann")
	eachStep(t, tab, steps, func(i int, s tourState) {
		if len(s.Veils) != 2 {
			t.Fatalf("step %d: %d figures", i, len(s.Veils))
		}
		for f, v := range s.Veils {
			if v.X < steps[i].X-1 || v.X > steps[i].X+1 || v.Right < v.Width || v.Opacity < 0.85 {
				t.Errorf("step %d (at x %.0f), figure %d: veil %+v, want x at the step, to the right edge, opaque", i, steps[i].X, f, v)
			}
		}
	})
}

// TestBrowserTourShowsBothRuns: at 1280 x 800, every step of the tour
// scrolls so that both figures, from the first client's lane to the
// labels of the time axis, are on screen below the tour's bar.
func TestBrowserTourShowsBothRuns(t *testing.T) {
	tab, steps := startTour(t, 1280, 800, "scenario=kleppmann")
	eachStep(t, tab, steps, func(i int, s tourState) {
		for f, l := range s.Lanes {
			if l[0] < s.StickyBot || l[1] > s.Screen {
				t.Errorf("step %d: figure %d's lanes span y %.0f..%.0f, not all between the bar (%.0f) and the screen's bottom (%.0f)",
					i, f, l[0], l[1], s.StickyBot, s.Screen)
			}
		}
		for f, a := range s.Axes {
			if a > s.Screen {
				t.Errorf("step %d: figure %d's time axis ends at y %.0f, below the screen's bottom (%.0f)", i, f, a, s.Screen)
			}
		}
		if i == len(steps)/2 {
			shot(t, tab, "tour-1280")
		}
	})
}

// TestBrowserPhoneTourBar: on a 400 x 860 phone, the sticky bar with the
// tour stays within a quarter of the screen at every step.
func TestBrowserPhoneTourBar(t *testing.T) {
	tab, steps := startTour(t, 400, 860, "scenario=kleppmann")
	tallest := 0.0
	eachStep(t, tab, steps, func(i int, s tourState) {
		h := s.StickyBot - s.StickyTop
		tallest = max(tallest, h)
		if h > 860/4 {
			t.Errorf("step %d: the tour's bar is %.0f px tall, over a quarter of 860 px", i, h)
		}
		if i == 10 {
			shot(t, tab, "tour-400")
		}
	})
	t.Logf("the tallest bar: %.0f px", tallest)
}

// TestBrowserPhoneFirstView: on a 400 x 860 phone, every preset is on
// screen's width (none hidden in a sideways strip), each figure opens
// scrolled to its danger window, and the lanes' names stay in view when
// a figure scrolls sideways.
func TestBrowserPhoneFirstView(t *testing.T) {
	tab := openPage(t, 400, 860, "scenario=kleppmann")
	shot(t, tab, "phone-top")
	type box struct{ Left, Right float64 }
	presets := eval[[]box](t, tab, `[...document.querySelectorAll("#presets .preset")].map((b) => { const r = b.getBoundingClientRect(); return {Left: r.left, Right: r.right}; })`)
	if len(presets) < 7 {
		t.Fatalf("%d presets", len(presets))
	}
	for i, p := range presets {
		if p.Left < 0 || p.Right > 400 {
			t.Errorf("preset %d spans x %.0f..%.0f, off a 400 px screen", i+1, p.Left, p.Right)
		}
	}
	type fig struct {
		Scroll, Width, Danger float64
		Names                 []box
		Left, Right           float64
	}
	figs := func() []fig {
		return eval[[]fig](t, tab, `[...document.querySelectorAll(".run .timeline")].map((el) => {
  const d = el.querySelector("svg rect.danger"), r = el.getBoundingClientRect();
  return {Scroll: el.scrollLeft, Width: el.clientWidth, Danger: d ? +d.getAttribute("x") : -1,
    Names: [...el.querySelectorAll("svg text.lane-name")].map((n) => { const b = n.getBoundingClientRect(); return {Left: b.left, Right: b.right}; }),
    Left: r.left, Right: r.right};
})`)
	}
	for i, f := range figs() {
		if f.Danger < 0 || f.Danger < f.Scroll || f.Danger > f.Scroll+f.Width {
			t.Errorf("figure %d opens showing x %.0f..%.0f; its danger window starts at x %.0f", i, f.Scroll, f.Scroll+f.Width, f.Danger)
		}
		if len(f.Names) < 4 {
			t.Errorf("figure %d: %d lane names", i, len(f.Names))
		}
		for _, n := range f.Names {
			if n.Left < f.Left-1 || n.Right > f.Right+1 {
				t.Errorf("figure %d scrolled to %.0f: a lane's name spans x %.0f..%.0f, outside the figure's %.0f..%.0f", i, f.Scroll, n.Left, n.Right, f.Left, f.Right)
			}
		}
	}
	eval[bool](t, tab, `(document.getElementById("run-off").scrollIntoView(), true)`)
	shot(t, tab, "phone-figure")
}

// revealState is what a step of the tour shows of the outcome: whether
// the runs' verdict badges and the lost-write marks are visible, the
// veils' opacity, and the labels of events at or before the cursor that
// the veil covers.
type revealState struct {
	Text     string
	Verdicts []bool
	LostMark []bool
	Opacity  []float64
	Covered  []string
	Future   []string
}

const revealStateJS = `((x) => {
  const shown = (el) => !!el && el.getClientRects().length > 0 && getComputedStyle(el).visibility === "visible";
  const svgs = [...document.querySelectorAll(".run .timeline svg")];
  return {
    Text: document.getElementById("tour-text").textContent,
    Verdicts: [...document.querySelectorAll(".run .verdict")].map(shown),
    LostMark: svgs.flatMap((svg) => [...svg.querySelectorAll("circle[r='7']")].map(shown)),
    Opacity: svgs.map((svg) => { const v = svg.querySelector("rect.veil"); return v ? +getComputedStyle(v).fillOpacity * +getComputedStyle(v).opacity : 0; }),
    Covered: svgs.flatMap((svg) => {
      const v = svg.querySelector("rect.veil");
      return [...svg.querySelectorAll("text[data-x]")].filter((t) => +t.dataset.x <= x + 0.5 && shown(t) &&
        v && (t.compareDocumentPosition(v) & Node.DOCUMENT_POSITION_FOLLOWING)).map((t) => t.textContent);
    }),
    Future: svgs.flatMap((svg) => [...svg.querySelectorAll("text[data-x]")].filter((t) => +t.dataset.x > x + 0.5 && shown(t)).map((t) => t.textContent)),
  };
})`

// TestBrowserTourRevealsInOrder: the tour shows no outcome before its
// narration reaches it: the verdict badges stay hidden until the step
// that tells the end, the lost-write mark until the step that tells the
// loss, and the veil hides the future entirely; and every label of an
// event the cursor has reached is drawn above the veil, at full strength.
func TestBrowserTourRevealsInOrder(t *testing.T) {
	tab, steps := startTour(t, 1280, 800, "scenario=kleppmann")
	end, loss := -1, -1
	for i, s := range steps {
		if end < 0 && strings.Contains(s.Text, "the end.") {
			end = i
		}
		if loss < 0 && strings.Contains(s.Text, "is now lost") {
			loss = i
		}
	}
	if end < 0 || loss < 0 {
		t.Fatalf("no step tells the end (%d) or the loss (%d)", end, loss)
	}
	eachStep(t, tab, steps, func(i int, _ tourState) {
		s := eval[revealState](t, tab, fmt.Sprintf("%s(%f)", revealStateJS, steps[i].X))
		for f, v := range s.Verdicts {
			if v != (i >= end) {
				t.Errorf("step %d: verdict badge %d shown %v; the end is told at step %d", i+1, f, v, end+1)
			}
		}
		for _, m := range s.LostMark {
			if m != (i >= loss) {
				t.Errorf("step %d: the lost-write mark shown %v; the loss is told at step %d", i+1, m, loss+1)
			}
		}
		for f, o := range s.Opacity {
			if o < 0.999 {
				t.Errorf("step %d: figure %d's veil has opacity %.2f: the future shows through", i+1, f, o)
			}
		}
		if len(s.Future) > 0 {
			t.Errorf("step %d: labels of events after the cursor are shown (a part may stick out left of the veil): %q", i+1, s.Future)
		}
		if len(s.Covered) > 0 {
			t.Errorf("step %d: labels of events the cursor has reached lie under the veil: %q", i+1, s.Covered)
		}
		if i == len(steps)-1 {
			shot(t, tab, "tour-last-1280")
		}
	})
}

// phoneState is what a phone shows at a step: whether each figure's lane
// names sit on an opaque strip drawn over everything else, and where the
// fenced run's REJECTED label is on screen.
type phoneState struct {
	Text      string
	Strips    []string // per figure: "" when its names have a strip over the data, else what is wrong
	Rejected  [2]float64
	StickyBot float64
	Screen    float64
}

const phoneStateJS = `(() => {
  const svgs = [...document.querySelectorAll(".run .timeline svg")];
  const rej = [...svgs[1].querySelectorAll("text[data-x]")].find((t) => t.textContent.includes("REJECTED") && getComputedStyle(t).visibility === "visible");
  const r = rej ? rej.getBoundingClientRect() : {top: -1, bottom: -1};
  return {
    Text: document.getElementById("tour-text").textContent,
    Strips: svgs.map((svg) => {
      const strip = svg.querySelector("rect.name-strip");
      if (!strip) return "no strip";
      if (+getComputedStyle(strip).fillOpacity < 0.999) return "a see-through strip";
      const s = strip.getBoundingClientRect();
      for (const n of svg.querySelectorAll("text.lane-name")) {
        const b = n.getBoundingClientRect();
        if (b.left < s.left - 1 || b.right > s.right + 1) return "a name outside the strip: " + n.textContent;
      }
      let after = false;
      for (const el of svg.children) {
        if (el === strip) { after = true; continue; }
        if (after && !el.classList.contains("lane-name") && el.tagName !== "line") return "drawn over the strip: " + el.tagName + " " + el.textContent;
      }
      return "";
    }),
    Rejected: [r.top, r.bottom],
    StickyBot: document.getElementById("sticky").getBoundingClientRect().bottom, Screen: innerHeight,
  };
})()`

// TestBrowserPhoneTourNames: on a 400 x 860 phone, at every step, each
// figure's lane names sit on an opaque strip that nothing is drawn over
// but them, so no data shows under a name; and from the step that tells
// A's late write on, the fenced run's REJECTED label is on screen (but at
// the last steps that name earlier moments).
func TestBrowserPhoneTourNames(t *testing.T) {
	tab, steps := startTour(t, 400, 860, "scenario=kleppmann")
	late := -1
	for i, s := range steps {
		if late < 0 && strings.Contains(s.Text, "late write") {
			late = i
		}
	}
	eachStep(t, tab, steps, func(i int, _ tourState) {
		s := eval[phoneState](t, tab, phoneStateJS)
		for f, problem := range s.Strips {
			if problem != "" {
				t.Errorf("step %d, figure %d: the lane names' strip: %s", i+1, f, problem)
			}
		}
		// A last step that names earlier moments shows them instead
		// (TestBrowserPhoneTourMomentsInView).
		if i >= late && len(steps[i].Moments) == 0 && (s.Rejected[0] < s.StickyBot || s.Rejected[1] > s.Screen) {
			t.Errorf("step %d: the fenced run's REJECTED label spans y %.0f..%.0f, not between the bar (%.0f) and the screen's bottom (%.0f)",
				i+1, s.Rejected[0], s.Rejected[1], s.StickyBot, s.Screen)
		}
		if i == late+2 {
			shot(t, tab, "tour-phone-late")
		}
	})
}

// legendState is what the screen shows of the figures' legend at a tour
// step: each entry of the first figure's own legend and whether it shows
// whole (a visible copy of its text at 11 px or more, between the tour's
// bar and the screen's bottom, inside the screen's width).
type legendState struct {
	Entries []string
	Missing []string
}

const legendStateJS = `(() => {
  const sticky = document.getElementById("sticky").getBoundingClientRect().bottom;
  const entries = [...document.querySelectorAll("#run-off .timeline svg text.legend")].map((t) => t.textContent);
  const visible = (t) => {
    if (getComputedStyle(t).visibility !== "visible" || t.getClientRects().length === 0) return false;
    for (let el = t; el; el = el.parentElement) if (getComputedStyle(el).display === "none") return false;
    const r = t.getBoundingClientRect();
    const px = parseFloat(getComputedStyle(t).fontSize) * (t.getScreenCTM ? t.getScreenCTM().a : 1);
    return r.width > 0 && r.top >= sticky - 0.5 && r.bottom <= innerHeight + 0.5 && r.left >= -0.5 && r.right <= innerWidth + 0.5 && px >= 10.99;
  };
  const texts = [...document.querySelectorAll("svg text")].filter(visible).map((t) => t.textContent);
  return {Entries: entries, Missing: entries.filter((e) => !texts.includes(e))};
})()`

// TestBrowserTourKeepsTheLegend: at 1280 x 800, at every step of the
// tour, every entry of the figures' legend (what the marks mean) shows
// whole on screen, below the tour's bar, while both runs stay on screen
// (TestBrowserTourShowsBothRuns), for the default run and the preset
// whose first heading is the longest.
func TestBrowserTourKeepsTheLegend(t *testing.T) {
	legendEveryStep(t, 1280, 800, legendStateJS, func(q string, i int, s tourState) {
		for f, a := range s.Axes {
			if a > s.Screen {
				t.Errorf("%s, step %d: figure %d's time axis ends at y %.0f, below the screen's bottom (%.0f)", q, i+1, f, a, s.Screen)
			}
		}
	})
}

// legendEveryStep takes the tours of the default run and of the preset
// whose first heading (and longest step) is the longest on a w x h
// screen, and fails t at every step for each legend entry js finds
// missing; then calls check.
func legendEveryStep(t *testing.T, w, h int, js string, check func(q string, i int, s tourState)) {
	for _, q := range []string{"scenario=kleppmann", "scenario=check-then-write"} {
		tab, steps := startTour(t, w, h, q)
		eachStep(t, tab, steps, func(i int, s tourState) {
			l := eval[legendState](t, tab, js)
			if len(l.Entries) < 4 {
				t.Fatalf("%s: the figure's legend has %d entries: %q", q, len(l.Entries), l.Entries)
			}
			for _, m := range l.Missing {
				t.Errorf("%s, step %d: the legend's %q is not shown whole on screen", q, i+1, m)
			}
			check(q, i, s)
		})
	}
}

// phoneLegendJS lists the entries of the first figure's legend (by their
// short names, data-short, which a phone shows) and those not shown
// whole on screen at 11 px or more with their mark (an svg just before
// the name): in the tour's bar, or below it.
const phoneLegendJS = `(() => {
  const bar = document.getElementById("sticky");
  const below = bar.getBoundingClientRect().bottom;
  const entries = [...document.querySelectorAll("#run-off .timeline svg text.legend")].map((t) => t.dataset.short || t.textContent);
  const shown = (el) => {
    for (let e = el; e; e = e.parentElement) {
      const cs = getComputedStyle(e);
      if (cs.display === "none" || cs.visibility === "hidden" || e.hidden) return false;
    }
    const r = el.getBoundingClientRect();
    return r.width > 0 && r.top >= (bar.contains(el) ? -0.5 : below - 0.5) && r.bottom <= innerHeight + 0.5 &&
      r.left >= -0.5 && r.right <= innerWidth + 0.5 && parseFloat(getComputedStyle(el).fontSize) >= 10.99;
  };
  const marked = (el) => {
    const m = el.previousElementSibling;
    return !!m && m.tagName.toLowerCase() === "svg" && shown(m) && m.getBoundingClientRect().width >= 10;
  };
  const texts = [...document.querySelectorAll("body *")].filter((el) => el.children.length === 0 && shown(el) && marked(el))
    .map((el) => el.textContent.trim());
  return {Entries: entries, Missing: entries.filter((e) => !texts.includes(e))};
})()`

// TestBrowserPhoneTourKeepsTheLegend: on a 400 x 860 phone, at every step
// of the tour, every entry of the figures' legend (what the marks mean)
// shows whole on screen, its mark beside its name, while the tour's bar
// stays within a quarter of the screen, for the default run and the
// preset whose tour has the longest step.
func TestBrowserPhoneTourKeepsTheLegend(t *testing.T) {
	legendEveryStep(t, 400, 860, phoneLegendJS, func(q string, i int, s tourState) {
		if h := s.StickyBot - s.StickyTop; h > 860/4 {
			t.Errorf("%s, step %d: the tour's bar is %.0f px tall, over a quarter of 860 px", q, i+1, h)
		}
	})
}
