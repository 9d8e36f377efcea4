package browser

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
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
	Names     []string // the first figure's lane names as shown
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
    Names: [...document.querySelectorAll(".run .timeline svg")].slice(0, 1).flatMap((svg) =>
      [...svg.querySelectorAll("text.lane-name")].map((n) => n.textContent)),
  };
})()`

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
        if (after && !el.classList.contains("lane-name") && !el.classList.contains("hint") && el.tagName !== "line") return "drawn over the strip: " + el.tagName + " " + el.textContent;
      }
      return "";
    }),
    Rejected: [r.top, r.bottom],
    StickyBot: document.getElementById("sticky").getBoundingClientRect().bottom, Screen: innerHeight,
  };
})()`

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
