package browser

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/fencekit/fencekit/internal/playground"
)

// The tour's properties are checked in one walk a screen size: every
// step of every preset's tour is shown once, and each property (a
// subtest, by name) is checked there, in the presets it names. A walk of
// the 142 steps takes most of this package's time; a walk a property made
// the package take three minutes.

// walk is a tour step as a walk shows it: the page, the preset, its
// tour as Run gives it at the page's width, the step's index and what
// the page shows of the tour.
type walk struct {
	t    *testing.T
	tab  context.Context
	p    playground.Preset
	tour []playground.Step
	j    int
	s    tourState
}

// step is the tour's step the walk is at.
func (w walk) step() playground.Step { return w.tour[w.j] }

// where names the preset and the step, for a failure.
func (w walk) where() string { return fmt.Sprintf("%s, step %d", w.p.Title, w.j+1) }

// stepCheck is a property checked at every step of a walk, in the
// presets whose queries only lists (all if empty); done, if set, is
// called after the walk.
type stepCheck struct {
	name  string
	only  []string
	check func(w walk, errorf func(string, ...any))
	done  func(errorf func(string, ...any), logf func(string, ...any))
}

// walkTours opens the page at w x h and, for each preset, presses it,
// calls first (if set) on its first view, and takes its tour, checking
// every check at every step; then reports each check's failures in a
// subtest of its name.
func walkTours(t *testing.T, w, h int, first func(t *testing.T, tab context.Context, p playground.Preset, errorf func(string, ...any)), checks []stepCheck) {
	errs := make([][]string, len(checks)+1)
	errorfOf := func(i int) func(string, ...any) {
		return func(f string, args ...any) { errs[i] = append(errs[i], fmt.Sprintf(f, args...)) }
	}
	tab := openPage(t, w, h, "")
	def, err := playground.Run("", 0)
	if err != nil {
		t.Fatal(err)
	}
	steps := 0
	for i, p := range def.Presets {
		q, _ := clickPreset(t, tab, i)
		if first != nil {
			first(t, tab, p, errorfOf(len(checks)))
		}
		tourShown(t, tab, q, func(tour []playground.Step, j int, s tourState) {
			steps++
			shot(t, tab, fmt.Sprintf("walk-%dx%d-preset%d-step-%02d", w, h, i+1, j+1)) // with FENCEKIT_SCREENSHOTS set
			for c, ch := range checks {
				if len(ch.only) > 0 && !slices.Contains(ch.only, p.Query) {
					continue
				}
				ch.check(walk{t: t, tab: tab, p: p, tour: tour, j: j, s: s}, errorfOf(c))
			}
		})
	}
	t.Logf("%d presets, %d tour steps walked", len(def.Presets), steps)
	if first != nil {
		t.Run("FirstView", func(t *testing.T) {
			for _, e := range errs[len(checks)] {
				t.Error(e)
			}
		})
	}
	for c, ch := range checks {
		t.Run(ch.name, func(t *testing.T) {
			for _, e := range errs[c] {
				t.Error(e)
			}
			if ch.done != nil {
				ch.done(t.Errorf, t.Logf)
			}
		})
	}
}

// TestBrowserTourSteps walks every step of every preset's tour at
// 1280 x 800 and on a 400 x 860 phone, once each, and checks there the
// properties its subtests name (see each check's comment).
func TestBrowserTourSteps(t *testing.T) {
	t.Run("1280x800", func(t *testing.T) {
		walkTours(t, 1280, 800, nil, append(commonChecks(), desktopChecks()...))
	})
	t.Run("400x860", func(t *testing.T) {
		walkTours(t, 400, 860, phoneFirstView, append(commonChecks(), phoneChecks()...))
	})
}

// commonChecks are checked at both sizes.
func commonChecks() []stepCheck {
	return []stepCheck{figuresWhole(), nextHoldsStill(), labelsReadable(), arrowsClearOfCursor(), keyNamesTheMarks(), summaryLabelsOffCursor(),
		cursorCrossesNoLabel(), releaseMarkClear(), expiryMarkClear(), openingSpread(), barHoldsStill(), quotedLabelsShow(), tokenStepsNamed(), laneNamesOneForm()}
}

// laneNamesOneForm: at one screen size, the lanes keep one name from
// step to step: on a phone the tour switched between "Client A", "Lease
// service" and "A", "Lease" as the figures scrolled sideways.
func laneNamesOneForm() stepCheck {
	first := map[string]string{} // a lane name's first form (the lease's: "Lease service" or "Lease") to where it showed
	return stepCheck{name: "LaneNamesOneForm", check: func(w walk, errorf func(string, ...any)) {
		for _, n := range w.s.Names {
			if strings.HasPrefix(n, "Lease") && len(first) < 2 {
				if _, ok := first[n]; !ok {
					first[n] = w.where()
				}
			}
		}
	}, done: func(errorf func(string, ...any), logf func(string, ...any)) {
		if len(first) > 1 {
			errorf("the lease's lane is named in more than one form: %v (each with where it first showed)", first)
		}
	}}
}

// tokenStepsNamedJS lists, in each figure, the steps of the storage's
// token line that the step has reached and the view shows (over 2 px in
// from its edges), each with whether its label ("wrote 33", drawn 3 px
// right of it) shows whole in the view.
const tokenStepsNamedJS = `(() => {
  const out = [];
  for (const fig of document.querySelectorAll(".run .timeline")) {` + figViewJS + `
    const veil = svg.querySelector("rect.veil");
    const end = Math.min(right, veil ? veil.getBoundingClientRect().left : Infinity);
    for (const t of svg.querySelectorAll("text:not([data-x]):not(.legend):not(.token-edge)")) {
      if (!/^(wrote )?\d+$/.test(t.textContent)) continue;
      const at = s.left + (+(t.dataset.tokenHome ?? t.getAttribute("x")) - 3) * k;
      if (at < left + 2 || at > end - 2) continue;
      const r = t.getBoundingClientRect();
      out.push({Text: t.textContent, Shown: getComputedStyle(t).visibility !== "hidden" && r.left >= left - 0.5 && r.right <= right + 0.5});
    }
  }
  return out;
})()`

// tokenStepsNamed: at every step of every preset's tour, where the
// storage's token line steps in view, its label shows whole: the default
// tour's phone summaries of the claim and the TTL showed the first
// figure's line drop to 33 at the view's right edge with "wrote 33" hidden
// as cut.
func tokenStepsNamed() stepCheck {
	return shownCheck("TokenStepsNamed", tokenStepsNamedJS, "the storage's token line steps in view and its label %q does not show whole",
		"no token step in view at any step", "%d token steps in view checked")
}

// quotedJS, called with a step's x and the phrases its text quotes
// ("read claims 34"), lists per figure each phrase that a label the step
// has reached reads, with whether one such label shows whole: in the
// figure's scrolled view (right of the lane names' strip), on screen and
// below the sticky bar.
const quotedJS = `((x, phrases) => {
  const sticky = document.getElementById("sticky").getBoundingClientRect().bottom;
  const out = [];
  for (const fig of document.querySelectorAll(".run .timeline")) {` + figViewJS + `
    const top = Math.max(f.top, sticky, 0), bottom = Math.min(f.bottom, innerHeight);
    for (const p of phrases) {
      const ls = [...svg.querySelectorAll("text:not(.legend):not(.lane-name):not(.hint)")].filter((t) => t.textContent === p &&
        (t.dataset.x !== undefined ? +t.dataset.x <= x + 0.5 : +(t.dataset.tokenHome ?? t.getBBox().x) < x + 3.5));
      if (!ls.length) continue;
      const boxes = ls.map((t) => [t, t.getBoundingClientRect()]);
      const whole = boxes.find(([t, r]) => getComputedStyle(t).visibility !== "hidden" && r.width > 0 &&
        r.left >= Math.max(left, 0) - 0.5 && r.right <= Math.min(right, innerWidth) + 0.5 && r.top >= top - 0.5 && r.bottom <= bottom + 0.5);
      const [t, r] = boxes[0];
      // Whether it fits the view beside the step's moment and its own labels (those LabelsWhole wants whole).
      const mx = s.left + x * k, own = [...svg.querySelectorAll("text[data-x]:not(.danger)")].filter((o) => +o.dataset.x <= x + 0.5 && +o.dataset.x >= x - 6 &&
        getComputedStyle(o).visibility !== "hidden").map((o) => o.getBoundingClientRect());
      const lo = Math.min(r.left, mx - 8, ...own.map((o) => o.left)), hi = Math.max(r.right, mx + 12, ...own.map((o) => o.right));
      out.push({Text: p, Whole: !!whole, Fits: hi - lo <= right - left + 1, Hidden: getComputedStyle(t).visibility === "hidden", Left: r.left, Right: r.right, Top: r.top, Bottom: r.bottom,
        VisL: Math.max(left, 0), VisR: Math.min(right, innerWidth), VisT: top, VisB: bottom});
    }
  }
  return out;
})`

// quotedLabelsShow: at every step of every preset's tour, each figure
// label the step's text quotes ("read claims 34") shows whole in the
// figure's view and on screen below the tour's bar, in each figure that
// has drawn it by then, where it fits the view beside the step's moment
// and its own labels (on a phone, "B still working"'s refusal of A1 is
// too far from B's read for both): the late write's step says where the
// storage saw token 34, and a phone's view left that label out.
func quotedLabelsShow() stepCheck {
	quote := regexp.MustCompile(`“([^”]+)”|"([^"]*)"`)
	n, apart := 0, 0
	return stepCheck{name: "QuotedLabelsShow", check: func(w walk, errorf func(string, ...any)) {
		var phrases []string
		for _, m := range quote.FindAllStringSubmatch(w.step().Text, -1) {
			if m[1]+m[2] != "" {
				phrases = append(phrases, m[1]+m[2])
			}
		}
		if len(phrases) == 0 {
			return
		}
		js, _ := json.Marshal(phrases)
		type quoted struct {
			Text                     string
			Whole, Hidden, Fits      bool
			Left, Right, Top, Bottom float64
			VisL, VisR, VisT, VisB   float64
		}
		for _, q := range eval[[]quoted](w.t, w.tab, fmt.Sprintf("%s(%f, %s)", quotedJS, w.step().X, js)) {
			n++
			if !q.Whole && !q.Fits {
				apart++
				continue
			}
			if !q.Whole {
				errorf("%s: the text quotes %q, whose label (hidden %v) spans x %.0f..%.0f, y %.0f..%.0f; the view shows x %.0f..%.0f, y %.0f..%.0f",
					w.where(), q.Text, q.Hidden, q.Left, q.Right, q.Top, q.Bottom, q.VisL, q.VisR, q.VisT, q.VisB)
			}
		}
	}, done: func(errorf func(string, ...any), logf func(string, ...any)) {
		if n == 0 {
			errorf("no step quotes a label the figures draw")
		}
		logf("%d quoted labels checked, %d of them too far from the step's moment and labels to show beside them", n, apart)
	}}
}

// pxPerSecondJS is, per figure, the screen pixels a second of its time
// axis spans, from its first and last tick labels.
const pxPerSecondJS = `[...document.querySelectorAll(".run .timeline svg")].map((svg) => {
  const ticks = [...svg.querySelectorAll('text[font-size="11"]')].map((t) => [+t.getAttribute("x"), parseFloat(t.textContent)]);
  const [[x0, t0], [x1, t1]] = [ticks[0], ticks[ticks.length - 1]];
  return (x1 - x0) / (t1 - t0) * svg.getScreenCTM().a;
})`

// openingSpread: a step in the runs' first second draws its moment 30
// px or more on screen from the previous step's (at another moment), in
// both figures: at the runs' scale A's grant (0.2 s) and read (0.3 s)
// lay 5 px apart, their arrows one on the other (student trial 7); the
// page draws the opening zoomed in.
func openingSpread() stepCheck {
	return stepCheck{name: "OpeningSpread", check: func(w walk, errorf func(string, ...any)) {
		secs := func(s playground.Step) float64 {
			f, err := strconv.ParseFloat(strings.TrimSuffix(s.At, "s"), 64)
			if err != nil {
				return -1
			}
			return f
		}
		at := secs(w.step())
		if w.j == 0 || at <= 0 || at >= 1 {
			return
		}
		prev := secs(w.tour[w.j-1])
		if prev < 0 || prev == at {
			return
		}
		for f, k := range eval[[]float64](w.t, w.tab, pxPerSecondJS) {
			if d := k * (at - prev); d < 30 {
				errorf("%s: figure %d draws %s and the previous step's %s %.1f px apart on screen, want 30 or more",
					w.where(), f+1, w.step().At, w.tour[w.j-1].At, d)
			}
		}
	}}
}

// cursorOnLabelsJS lists the labels a step shows (not under the veil)
// that the tour's cursor, where it is drawn, runs through: it is drawn
// but where its mask (if any) cuts it out.
const cursorOnLabelsJS = `[...document.querySelectorAll(".run .timeline svg")].flatMap((svg) => {
  const c = svg.querySelector("line.cursor");
  if (!c || getComputedStyle(c).visibility === "hidden") return [];
  const x = +c.getAttribute("x1"), half = parseFloat(getComputedStyle(c).strokeWidth) / 2;
  const veil = svg.querySelector("rect.veil");
  const id = (c.getAttribute("mask") || "").replace(/^url\(#(.*)\)$/, "$1");
  const gaps = id ? [...document.getElementById(id).querySelectorAll("rect[fill=black]")].map((r) => [+r.getAttribute("x"), +r.getAttribute("y"),
    +r.getAttribute("x") + +r.getAttribute("width"), +r.getAttribute("y") + +r.getAttribute("height")]) : [];
  return [...svg.querySelectorAll("text:not(.lane-name)")].filter((t) => {
    if (getComputedStyle(t).visibility === "hidden" || (t.compareDocumentPosition(veil) & Node.DOCUMENT_POSITION_FOLLOWING)) return false;
    const b = t.getBBox();
    if (b.width === 0 || b.x > x + half || b.x + b.width < x - half) return false;
    return !gaps.some(([x0, y0, x1, y1]) => x0 <= x - half && x1 >= x + half && y0 <= b.y && y1 >= b.y + b.height);
  }).map((t) => t.textContent);
})`

// cursorCrossesNoLabel: at every step, the tour's time line (its cursor)
// runs through no label the step shows: it stops short of each ("lease
// held by 33", crossed at its first letter, read "|ease held by 33":
// student trial 7).
func cursorCrossesNoLabel() stepCheck {
	return stepCheck{name: "CursorCrossesNoLabel", check: func(w walk, errorf func(string, ...any)) {
		for _, l := range eval[[]string](w.t, w.tab, cursorOnLabelsJS) {
			errorf("%s: the tour's cursor runs through the label %q", w.where(), l)
		}
	}}
}

// endMarksJS lists, for the marks of a lease bar's end of a class
// (released: grey, expired: red) at a step's moment x, how many of five
// points across the mark, at its middle, show the mark on top (not the
// veil, not the cursor), and the gap on screen between its right edge
// and the cursor's left.
const endMarksJS = `((cls, x) => [...document.querySelectorAll(".run .timeline svg")].flatMap((svg) => {
  const c = svg.querySelector("line.cursor"), k = svg.getScreenCTM().a;
  const pt = svg.createSVGPoint();
  return [...svg.querySelectorAll("line." + cls)].filter((m) => +m.getAttribute("x1") > x - 2 && +m.getAttribute("x1") <= x + 0.5).map((m) => {
    const mx = +m.getAttribute("x1"), half = parseFloat(getComputedStyle(m).strokeWidth) / 2;
    let shown = 0;
    for (const dx of [-0.8, -0.4, 0, 0.4, 0.8]) {
      pt.x = mx + dx * half;
      pt.y = (+m.getAttribute("y1") + +m.getAttribute("y2")) / 2;
      const at = pt.matrixTransform(svg.getScreenCTM());
      if (document.elementsFromPoint(at.x, at.y).find((el) => el.tagName !== "text") === m) shown++;
    }
    const gap = ((+c.getAttribute("x1") - parseFloat(getComputedStyle(c).strokeWidth) / 2) - (mx + half)) * k;
    return {X: mx, Shown: shown, Gap: gap};
  });
}))`

// releaseMarkClear: the step that tells a release shows its mark (the
// grey end of the lease's bar) whole, above the veil, and at least 4 px
// clear of the tour's cursor: at the default tour's step 12 (B's release) the veil hid
// half of it and the cursor stood 2 px from the rest (student trial 7).
func releaseMarkClear() stepCheck {
	return endMarkClear("ReleaseMarkClear", "releases the lease", "released", "release")
}

// expiryMarkClear: the step that tells a lease's expiry shows its mark
// (the red end of the lease's bar) as releaseMarkClear the release's:
// the default tour's step 7 showed half of it, the veil over the rest.
func expiryMarkClear() stepCheck {
	return endMarkClear("ExpiryMarkClear", "expires at the lease service", "expired", "expiry")
}

// endMarkClear checks that a step whose text says says shows the marks
// of class cls at its moment whole, above the veil, 4 px or more clear
// of the cursor.
func endMarkClear(name, says, cls, what string) stepCheck {
	return stepCheck{name: name, check: func(w walk, errorf func(string, ...any)) {
		if !strings.Contains(w.step().Text, says) {
			return
		}
		type mark struct {
			X, Gap float64
			Shown  int
		}
		ms := eval[[]mark](w.t, w.tab, fmt.Sprintf("%s(%q, %f)", endMarksJS, cls, w.step().X))
		if len(ms) == 0 {
			errorf("%s: tells a %s but no %s mark lies at its moment (x %.1f)", w.where(), what, what, w.step().X)
		}
		for _, m := range ms {
			if m.Shown < 5 || m.Gap < 4 {
				errorf("%s: the %s mark at x %.1f shows at %d of 5 points across it, %.1f px clear of the cursor; want 5, and 4 px or more",
					w.where(), what, m.X, m.Shown, m.Gap)
			}
		}
	}}
}

// summaryLabelsOffCursor: at a summary step, which marks earlier moments
// with lines of its own, no label shown lies on a visible tour cursor:
// the default tour's phone steps 18 and 20 drew "later LOST" across it
// and "B1 (token 34): ok" on it ("student trial 5").
func summaryLabelsOffCursor() stepCheck {
	return stepCheck{name: "SummaryLabelsOffCursor", check: func(w walk, errorf func(string, ...any)) {
		if len(w.step().Moments) == 0 {
			return
		}
		for _, l := range eval[[]string](w.t, w.tab, `[...document.querySelectorAll(".run .timeline svg")].flatMap((svg) => {
  const c = svg.querySelector("line.cursor");
  if (!c || getComputedStyle(c).visibility === "hidden" || getComputedStyle(c).display === "none") return [];
  const x = c.getBoundingClientRect().left + c.getBoundingClientRect().width / 2;
  return [...svg.querySelectorAll("text")].filter((t) => {
    const r = t.getBoundingClientRect();
    return getComputedStyle(t).visibility !== "hidden" && r.width > 0 && r.left < x && r.right > x;
  }).map((t) => t.textContent);
})`) {
			errorf("%s: the label %q lies on the tour's cursor", w.where(), l)
		}
	}}
}

// keyNamesTheMarks: at a summary step, which marks its moments (orange
// lines, highlighted labels, a pause's dotted box), the legend the tour
// shows (a phone's in the tour's bar) has an entry for those marks,
// whole on screen, in the same words at every size, and placed cleanly:
// among the legend's other entries, or against the right end of its row
// (beside the verdict); at any other step it has none. The entry once
// floated mid-way along the second figure's heading row at 1280 px
// ("what the step names") and sat on the verdict's badge on a phone
// ("marked").
func keyNamesTheMarks() stepCheck {
	return stepCheck{name: "KeyNamesTheMarks", check: func(w walk, errorf func(string, ...any)) {
		type entry struct {
			Shown, Whole, Placed bool
			Text                 string
		}
		e := eval[entry](w.t, w.tab, `(() => {
  const e = [...document.querySelectorAll(".key-marked")].find((e) => e.getClientRects().length > 0);
  if (!e) return {Shown: false, Whole: false, Placed: false, Text: ""};
  const r = e.getBoundingClientRect();
  const shown = (c) => c.getClientRects().length > 0 && getComputedStyle(c).visibility !== "hidden";
  const legend = [...e.parentElement.children].some((c) => c !== e && shown(c));
  // Else its box (the legend's copy holding it) against the next thing shown in its row, or the row's end.
  const box = e.parentElement.getBoundingClientRect(), row = e.parentElement.parentElement;
  let next = e.parentElement.nextElementSibling;
  while (next && !shown(next)) next = next.nextElementSibling;
  const end = next ? next.getBoundingClientRect().left : row.getBoundingClientRect().right;
  return {Shown: true, Whole: r.left >= 0 && r.right <= innerWidth && r.top >= 0 && r.bottom <= innerHeight,
    Placed: legend || (r.right <= end + 0.5 && end - r.right <= 24 && box.right - r.right <= 24), Text: e.textContent};
})()`)
		marks := len(w.step().Moments) > 0
		if e.Shown != marks || (marks && !e.Whole) {
			errorf("%s: the legend's entry for the step's marks shown %v (whole %v, %q), want %v", w.where(), e.Shown, e.Whole, e.Text, marks)
		}
		if marks && (!e.Placed || e.Text != "named by the step") {
			errorf("%s: the entry for the step's marks reads %q (want %q), placed among the legend's entries or at its row's end: %v", w.where(), e.Text, "named by the step", e.Placed)
		}
	}}
}

// barHoldsStill: the tour's bar keeps one height through each tour, so
// that the figures below it do not jump from step to step: it once ran
// from 41 to 65 px at 1280 x 800 and from 54 to 170 px on a phone.
func barHoldsStill() stepCheck {
	first := 0.0
	return stepCheck{name: "BarHoldsStill", check: func(w walk, errorf func(string, ...any)) {
		h := w.s.StickyBot - w.s.StickyTop
		if w.j == 0 {
			first = h
		}
		if math.Abs(h-first) > 0.5 {
			errorf("%s: the tour's bar is %.0f px tall, %.0f px at step 1", w.where(), h, first)
		}
	}}
}

// arrowsOnCursorJS lists the message arrows a step has drawn (ending at
// or before its moment, x) that the tour's cursor covers somewhere along
// their last half, where they reach the moment.
const arrowsOnCursorJS = `((x) => {
  const out = [];
  for (const svg of document.querySelectorAll(".run .timeline svg")) {
    const pt = svg.createSVGPoint();
    for (const l of svg.querySelectorAll("line[marker-end]")) {
      const [x1, y1, x2, y2] = ["x1", "y1", "x2", "y2"].map((a) => +l.getAttribute(a));
      if (x2 > x + 0.5 || x2 < x - 20 || getComputedStyle(l).visibility === "hidden") continue;
      for (let f = 0.5; f <= 0.951; f += 0.05) {
        pt.x = x1 + (x2 - x1) * f;
        pt.y = y1 + (y2 - y1) * f;
        const at = pt.matrixTransform(svg.getScreenCTM());
        const top = document.elementsFromPoint(at.x, at.y).find((el) => el.tagName !== "text");
        if (top && top.classList.contains("cursor")) {
          out.push(l.getAttribute("stroke") + " arrow " + x1 + "," + y1 + " -> " + x2 + "," + y2);
          break;
        }
      }
    }
  }
  return out;
})`

// arrowsClearOfCursor: at every step of the default tour, no arrow that
// reaches the step's moment lies under the tour's cursor: A's late write
// at 17.5 s, nearly vertical, lay on the blue dashed cursor and could
// not be seen ("student trial 5").
func arrowsClearOfCursor() stepCheck {
	return stepCheck{name: "ArrowsClearOfCursor", only: []string{kleppmann, claimPreset}, check: func(w walk, errorf func(string, ...any)) {
		for _, a := range eval[[]string](w.t, w.tab, fmt.Sprintf("%s(%f)", arrowsOnCursorJS, w.step().X)) {
			errorf("%s: the cursor covers the %s", w.where(), a)
		}
	}}
}

// figuresWhole: at every step of every preset's tour, both figures'
// frames (time axes included) and headings ("Fencing off") are wholly
// on screen, below the tour's bar and above the screen's bottom: the bar
// covers no heading, and no axis runs off the screen's bottom.
func figuresWhole() stepCheck {
	least := 1.0
	return stepCheck{name: "FiguresWhole", check: func(w walk, errorf func(string, ...any)) {
		s := eval[frameState](w.t, w.tab, frameStateJS)
		least = min(least, s.Scale)
		if len(s.Frames) != 2 || len(s.Titles) != 2 {
			errorf("%s: %d figures, %d headings", w.where(), len(s.Frames), len(s.Titles))
			return
		}
		for f := range s.Frames {
			for _, part := range []struct {
				what string
				r    [2]float64
			}{{"heading", s.Titles[f]}, {"frame", s.Frames[f]}} {
				if part.r[0] < s.Bar-0.5 || part.r[1] > s.Screen+0.5 {
					errorf("%s: figure %d's %s spans y %.0f..%.0f, not wholly between the tour's bar (%.0f) and the screen's bottom (%.0f)",
						w.where(), f+1, part.what, part.r[0], part.r[1], s.Bar, s.Screen)
				}
			}
		}
	}, done: func(_ func(string, ...any), logf func(string, ...any)) {
		logf("the figures drawn at %.3f of their size or more", least)
	}}
}

// nextHoldsStill: the tour's Next button has one box on screen at every
// step of every preset's tour (Finish at the last), however long the
// step's text: two taps in one place take two steps.
func nextHoldsStill() stepCheck {
	var first *[4]float64
	return stepCheck{name: "NextHoldsStill", check: func(w walk, errorf func(string, ...any)) {
		s := eval[frameState](w.t, w.tab, frameStateJS)
		if first == nil {
			first = &s.Next
		}
		if s.Next != *first {
			errorf("%s: Next spans x %.1f..%.1f, y %.1f..%.1f; at the first step x %.1f..%.1f, y %.1f..%.1f",
				w.where(), s.Next[0], s.Next[2], s.Next[1], s.Next[3], first[0], first[2], first[1], first[3])
		}
	}}
}

// readableJS lists the labels of both figures a step shows (not hidden,
// inside the screen) with their font size on screen: the size they are
// drawn at times the figure's scale.
const readableJS = `[...document.querySelectorAll(".run .timeline svg text")].filter((t) => {
  const r = t.getBoundingClientRect();
  return getComputedStyle(t).visibility !== "hidden" && r.width > 0 && r.right > 0 && r.left < innerWidth && r.bottom > 0 && r.top < innerHeight;
}).map((t) => ({Text: t.textContent, Px: parseFloat(getComputedStyle(t).fontSize) * t.getScreenCTM().a}))`

// labelsReadable: at every step of every preset's tour, every label the
// figures show renders at 11 px or more: on a phone, the summary steps
// scaled the figures down to fit every moment they mark, to 7 px labels
// ("student trial 4"); the page keeps 11 px and shows the latest moments
// that fit (momentsInView).
func labelsReadable() stepCheck {
	least := math.Inf(1)
	return stepCheck{name: "LabelsReadable", check: func(w walk, errorf func(string, ...any)) {
		type label struct {
			Text string
			Px   float64
		}
		small := 0
		for _, l := range eval[[]label](w.t, w.tab, readableJS) {
			least = min(least, l.Px)
			if l.Px < 10.99 {
				if small++; small <= 3 {
					errorf("%s: the label %q renders at %.1f px, under 11", w.where(), l.Text, l.Px)
				}
			}
		}
	}, done: func(_ func(string, ...any), logf func(string, ...any)) {
		logf("the smallest label shown: %.1f px", least)
	}}
}

const kleppmann, checkThenWrite = "scenario=kleppmann", "scenario=check-then-write"
const claimPreset = "scenario=kleppmann&work=8s&base=writes&storage=claim"

// desktopChecks are checked at 1280 x 800.
func desktopChecks() []stepCheck {
	return []stepCheck{marksEachSummary(), drawsUpToTheStep(), showsBothRuns(), revealsInOrder(), lineUnderLabels(),
		keepsTheLegend(), drawsTheStorageToken(), tokenStepShows(), tokenNoLeak(), drawsThePause()}
}

// marksEachSummary: in every preset's tour, each summary step draws a
// line at each moment it names and highlights those moments' labels
// (their halo unlike other labels') or pause, in both figures or, for a
// step about one (Fig), in that one only, and never the lease service's
// "renewal of 33 refused" (a step about the storage's refusal once lit
// it, as if the lease service refused the write); no other step marks
// anything; and no two consecutive summary steps mark the same, so the
// page shows what each sentence is about (they all once showed one
// figure).
func marksEachSummary() stepCheck {
	var prev string
	return stepCheck{name: "MarksEachSummary", check: func(w walk, errorf func(string, ...any)) {
		s := w.step()
		m := eval[marks](w.t, w.tab, marksJS)
		where := fmt.Sprintf("%s (%.40q)", w.where(), s.Text)
		for f := range m.Lines {
			got := slices.Sorted(slices.Values(m.Lines[f]))
			want := slices.Sorted(slices.Values(s.Moments))
			if fmt.Sprint(got) != fmt.Sprint(want) {
				errorf("%s: figure %d marks moments at x %v, want %v", where, f+1, got, want)
			}
		}
		if len(s.Moments) > 0 && len(m.Named[0])+len(m.Named[1]) == 0 {
			errorf("%s: names moments %v but highlights nothing", where, s.Moments)
		}
		for f, names := range m.Named {
			for _, n := range names {
				if strings.HasPrefix(n, "renewal of") {
					errorf("%s: highlights the lease service's %q in figure %d", where, n, f+1)
				}
			}
			if s.Fig != 0 && s.Fig != f+1 && len(names) > 0 {
				errorf("%s: is about figure %d but highlights %q in figure %d", where, s.Fig, names, f+1)
			}
		}
		if s.At != "summary" {
			return
		}
		sig := fmt.Sprint(m)
		if strings.HasPrefix(w.tour[w.j-1].Text, "Summary, ") && sig == prev {
			errorf("%s marks the same as the step before: %s", where, sig)
		}
		prev = sig
		if w.p.Query == kleppmann && strings.HasPrefix(s.Text, "Summary, the claim.") {
			shot(w.t, w.tab, "tour-summary-claim")
		}
	}}
}

// drawsUpToTheStep: at each step of the tour, both figures are drawn up
// to the step's moment and veiled after it, so the outcome does not show
// before the tour reaches it.
func drawsUpToTheStep() stepCheck {
	return stepCheck{name: "DrawsUpToTheStep", only: []string{kleppmann}, check: func(w walk, errorf func(string, ...any)) {
		if len(w.s.Veils) != 2 {
			errorf("%s: %d figures", w.where(), len(w.s.Veils))
		}
		x := w.step().X
		for f, v := range w.s.Veils {
			if v.X < x-1 || v.X > x+1 || v.Right < v.Width || v.Opacity < 0.85 {
				errorf("%s (at x %.0f), figure %d: veil %+v, want x at the step, to the right edge, opaque", w.where(), x, f, v)
			}
		}
	}}
}

// showsBothRuns: every step of the tour scrolls so that both figures,
// from the first client's lane to the labels of the time axis, are on
// screen below the tour's bar.
func showsBothRuns() stepCheck {
	return stepCheck{name: "ShowsBothRuns", only: []string{kleppmann}, check: func(w walk, errorf func(string, ...any)) {
		s := w.s
		for f, l := range s.Lanes {
			if l[0] < s.StickyBot || l[1] > s.Screen {
				errorf("%s: figure %d's lanes span y %.0f..%.0f, not all between the bar (%.0f) and the screen's bottom (%.0f)",
					w.where(), f, l[0], l[1], s.StickyBot, s.Screen)
			}
		}
		for f, a := range s.Axes {
			if a > s.Screen {
				errorf("%s: figure %d's time axis ends at y %.0f, below the screen's bottom (%.0f)", w.where(), f, a, s.Screen)
			}
		}
		if w.j == len(w.tour)/2 {
			shot(w.t, w.tab, "tour-1280")
		}
	}}
}

// revealsInOrder: the tour shows no outcome before its narration reaches
// it: the verdict badges stay hidden until the step that tells the end,
// the lost-write mark until the step that tells the loss, and the veil
// hides the future entirely; and every label of an event the cursor has
// reached is drawn above the veil, at full strength.
func revealsInOrder() stepCheck {
	return stepCheck{name: "RevealsInOrder", only: []string{kleppmann}, check: func(w walk, errorf func(string, ...any)) {
		end, loss := -1, -1
		for i, s := range w.tour {
			if end < 0 && strings.Contains(s.Text, "the end.") {
				end = i
			}
			if loss < 0 && strings.Contains(s.Text, "is now lost") {
				loss = i
			}
		}
		if end < 0 || loss < 0 {
			errorf("no step tells the end (%d) or the loss (%d)", end, loss)
			return
		}
		i := w.j
		s := eval[revealState](w.t, w.tab, fmt.Sprintf("%s(%f)", revealStateJS, w.step().X))
		for f, v := range s.Verdicts {
			if v != (i >= end) {
				errorf("step %d: verdict badge %d shown %v; the end is told at step %d", i+1, f, v, end+1)
			}
		}
		for _, m := range s.LostMark {
			if m != (i >= loss) {
				errorf("step %d: the lost-write mark shown %v; the loss is told at step %d", i+1, m, loss+1)
			}
		}
		for f, o := range s.Opacity {
			if o < 0.999 {
				errorf("step %d: figure %d's veil has opacity %.2f: the future shows through", i+1, f, o)
			}
		}
		if len(s.Future) > 0 {
			errorf("step %d: labels of events after the cursor are shown (a part may stick out left of the veil): %q", i+1, s.Future)
		}
		if len(s.Covered) > 0 {
			errorf("step %d: labels of events the cursor has reached lie under the veil: %q", i+1, s.Covered)
		}
		if i == len(w.tour)-1 {
			shot(w.t, w.tab, "tour-last-1280")
		}
	}}
}

// lineUnderLabelsJS lists the labels the tour's time line runs through
// that are drawn before it (under it) or without a halo.
const lineUnderLabelsJS = `(() => {
  const out = [];
  for (const svg of document.querySelectorAll(".run .timeline svg")) {
    const line = svg.querySelector("line.cursor");
    const x = line.getBoundingClientRect().left;
    for (const t of svg.querySelectorAll("text")) {
      const r = t.getBoundingClientRect();
      if (getComputedStyle(t).visibility === "hidden" || r.left > x || r.right < x) continue;
      const under = line.compareDocumentPosition(t) & Node.DOCUMENT_POSITION_FOLLOWING;
      const halo = getComputedStyle(t).paintOrder.startsWith("stroke") && getComputedStyle(t).stroke !== "none";
      if (!under || !halo) out.push(t.textContent);
    }
  }
  return out;
})()`

// lineUnderLabels: at every step, the tour's time line is drawn before
// (under) every label it runs through, and each such label has a halo
// that keeps it readable over the line.
func lineUnderLabels() stepCheck {
	return stepCheck{name: "LineUnderLabels", only: []string{kleppmann}, check: func(w walk, errorf func(string, ...any)) {
		for _, l := range eval[[]string](w.t, w.tab, lineUnderLabelsJS) {
			errorf("%s: the time line runs over the label %q", w.where(), l)
		}
	}}
}

// keepsTheLegend: at every step of the tour, every entry of the figures'
// legend (what the marks mean) shows whole on screen, below the tour's
// bar, while both runs stay on screen (showsBothRuns), for the default
// run and the preset whose first heading is the longest.
func keepsTheLegend() stepCheck {
	return stepCheck{name: "KeepsTheLegend", only: []string{kleppmann, checkThenWrite}, check: func(w walk, errorf func(string, ...any)) {
		legendMissing(w, legendStateJS, errorf)
		for f, a := range w.s.Axes {
			if a > w.s.Screen {
				errorf("%s: figure %d's time axis ends at y %.0f, below the screen's bottom (%.0f)", w.where(), f+1, a, w.s.Screen)
			}
		}
	}}
}

// legendMissing fails for each entry of the legend js finds missing.
func legendMissing(w walk, js string, errorf func(string, ...any)) {
	l := eval[legendState](w.t, w.tab, js)
	if len(l.Entries) < 4 {
		errorf("%s: the figure's legend has %d entries: %q", w.where(), len(l.Entries), l.Entries)
	}
	for _, m := range l.Missing {
		errorf("%s: the legend's %q is not shown whole on screen", w.where(), m)
	}
}

// storageTokensJS lists the storages' token labels ("wrote 34", "34")
// with where their token steps (the label's start less 3 px) and
// whether each is drawn (above the veil, or left of it).
const storageTokensJS = `[...document.querySelectorAll(".run .timeline svg")].flatMap((svg) => {
  const veil = svg.querySelector("rect.veil"), vx = Number(veil.getAttribute("x"));
  return [...svg.querySelectorAll("text:not([data-x])")].filter((t) => /^(wrote )?\d+$/.test(t.textContent)).map((t) => {
    const b = t.getBBox();
    return {Text: t.textContent, X: Number(t.getAttribute("x")) - 3,
      Drawn: b.x + b.width <= vx || !!(veil.compareDocumentPosition(t) & Node.DOCUMENT_POSITION_FOLLOWING)};
  });
})`

// drawsTheStorageToken: a step draws what happens at its moment: the
// storage's token line steps up where a write or a claim lands, and its
// label ("wrote 34", "34", 3 px right of that moment) shows at the step
// that tells it (B's write, B's read), not one step later; a label of a
// later moment stays under the veil.
func drawsTheStorageToken() stepCheck {
	return stepCheck{name: "DrawsTheStorageToken", only: []string{kleppmann}, check: func(w walk, errorf func(string, ...any)) {
		type label struct {
			Text  string
			X     float64
			Drawn bool
		}
		labels := eval[[]label](w.t, w.tab, storageTokensJS)
		if len(labels) == 0 {
			errorf("%s: no storage token labels", w.where())
		}
		s := w.step()
		for _, l := range labels {
			if want := l.X <= s.X+0.5; l.Drawn != want {
				errorf("%s (%q): the storage's %q (at x %.1f, the cursor at %.1f) drawn %v, want %v", w.where(), s.Text, l.Text, l.X, s.X, l.Drawn, want)
			}
		}
	}}
}

// tokenStepsJS is a JS function that calls f(ps, i, top) at each step of
// the storages' token lines (ps[i-1] to ps[i], one x), top(x, y) being
// the topmost element but text the screen shows at the figure's x, y.
const tokenStepsJS = `((f) => {
  for (const svg of document.querySelectorAll(".run .timeline svg")) {
    const pt = svg.createSVGPoint();
    const top = (x, y) => {
      pt.x = x;
      pt.y = y;
      const at = pt.matrixTransform(svg.getScreenCTM());
      return document.elementsFromPoint(at.x, at.y).find((el) => el.tagName !== "text");
    };
    for (const p of svg.querySelectorAll('polyline[stroke="#555"]:not(.legend):not(.peek)')) {
      const ps = p.getAttribute("points").trim().split(/\s+/).map((s) => s.split(",").map(Number));
      for (let i = 1; i < ps.length; i++) if (ps[i][0] === ps[i - 1][0]) f(ps, i, top);
    }
  }
})`

// tokenStepJS, called with a step's x, lists the storages' token steps
// (where a token line changes level) at the step's moment, each with
// what the screen shows 2 px right of it at its new level: the token
// line, or what covers it.
const tokenStepJS = `((x) => {
  const out = [];
  ` + tokenStepsJS + `((ps, i, top) => {
    if (Math.abs(ps[i][0] - x) > 0.5) return;
    const t = top(ps[i][0] + 2, ps[i][1]);
    out.push({At: ps[i][0] + "," + ps[i - 1][1] + "->" + ps[i][1], Shown: t.tagName === "polyline" && t.getAttribute("stroke") === "#555",
      Top: t.tagName + "." + (t.getAttribute("class") || "")});
  });
  return out;
})`

// tokenLeakJS, called with a step's x, lists the storages' token steps
// just after the step's moment (within 8 px) whose rise or drop the
// screen shows, over the veil.
const tokenLeakJS = `((x) => {
  const out = [];
  ` + tokenStepsJS + `((ps, i, top) => {
    if (ps[i][0] <= x + 0.5 || ps[i][0] > x + 8) return;
    const t = top(ps[i][0], (ps[i][1] + ps[i - 1][1]) / 2);
    if (t.tagName === "polyline" && t.getAttribute("stroke") === "#555") out.push(ps[i][0] + "," + ps[i - 1][1] + "->" + ps[i][1]);
  });
  return out;
})`

// tokenNoLeak: a step draws no token change of a later moment: the
// default tour's step 13 (A sends its late write) showed, a few px past
// its cursor, the token line's drop that A's write makes when it lands,
// one step later ("student trial 5").
func tokenNoLeak() stepCheck {
	return stepCheck{name: "TokenNoLeak", only: []string{kleppmann}, check: func(w walk, errorf func(string, ...any)) {
		for _, at := range eval[[]string](w.t, w.tab, fmt.Sprintf("%s(%f)", tokenLeakJS, w.step().X)) {
			errorf("%s: the storage's token steps at %s, after the step's moment (x %.1f), and the step shows it", w.where(), at, w.step().X)
		}
	}}
}

// tokenStepShows: where a storage's token steps at a step's moment (A's
// late write landing: 34 down to 33), the step shows the token line's
// new level just past its cursor, as it shows that level's label ("wrote
// 33"): the line's drop was drawn under the veil, so the page told
// "tokens went backwards" with a token line that never dropped.
func tokenStepShows() stepCheck {
	n := 0
	return stepCheck{name: "TokenStepShows", only: []string{kleppmann}, check: func(w walk, errorf func(string, ...any)) {
		type step struct {
			At    string
			Shown bool
			Top   string
		}
		for _, st := range eval[[]step](w.t, w.tab, fmt.Sprintf("%s(%f)", tokenStepJS, w.step().X)) {
			n++
			if !st.Shown {
				errorf("%s: the storage's token steps at %s at the step's moment, but 2 px past it the screen shows %s, not the token line", w.where(), st.At, st.Top)
			}
		}
	}, done: func(errorf func(string, ...any), _ func(string, ...any)) {
		if n == 0 {
			errorf("no token step lies at a step's moment")
		}
	}}
}

// pauseDrawnJS tells, for each run, how far its pause's box is drawn
// past the cursor (px) and whether "paused 15s" is drawn above the veil.
const pauseDrawnJS = `(() => {
  const out = {Past: [], Label: []};
  for (const svg of document.querySelectorAll(".run .timeline svg")) {
    const veil = svg.querySelector("rect.veil"), vx = Number(veil.getAttribute("x"));
    const above = (el) => !!(veil.compareDocumentPosition(el) & Node.DOCUMENT_POSITION_FOLLOWING) && el.style.visibility !== "hidden";
    let past = 0;
    for (const r of svg.querySelectorAll("rect.pause")) {
      const x = Number(r.getAttribute("x")), w = Number(r.getAttribute("width"));
      if (above(r)) past = Math.max(past, x + w - vx);
    }
    out.Past.push(past);
    out.Label.push([...svg.querySelectorAll("text")].some((t) => t.textContent === "paused 15s" && above(t)));
  }
  return out;
})()`

// drawsThePause: the step that says "A is paused for 15s" draws A's
// pause's label "paused 15s" (the text gives its length), the step
// before does not; and no step draws the pause's box past its moment,
// as the rest of the figure is drawn (it was drawn out to 17.4 s from
// the pause's first step on).
func drawsThePause() stepCheck {
	return stepCheck{name: "DrawsThePause", only: []string{kleppmann}, check: func(w walk, errorf func(string, ...any)) {
		pause := slices.IndexFunc(w.tour, func(s playground.Step) bool { return strings.Contains(s.Text, "A is paused for 15s") })
		if pause < 1 {
			errorf("no step tells A's pause: %+v", w.tour)
			return
		}
		i := w.j
		if i < pause-1 || i > pause+3 {
			return
		}
		d := eval[struct {
			Past  []float64
			Label []bool
		}](w.t, w.tab, pauseDrawnJS)
		for run := range d.Past {
			if want := i >= pause; d.Label[run] != want || d.Past[run] > 0.5 {
				errorf("step %d (%q), run %d: pause box drawn %.0f px past the cursor, label drawn %v; want 0 px, label drawn %v",
					i+1, w.tour[i].Text, run+1, d.Past[run], d.Label[run], want)
			}
		}
	}}
}

// phoneFirstView: on a 400 x 860 phone, no label of either figure is cut
// by the figure's scrolled view, the lane names' strip or the screen's
// edges in every preset's first view (each figure brought on screen),
// and the danger's labels show whole there.
func phoneFirstView(t *testing.T, tab context.Context, p playground.Preset, errorf func(string, ...any)) {
	for _, id := range []string{"run-off", "run-on"} {
		eval[bool](t, tab, fmt.Sprintf(`(document.querySelector("#%s .timeline").scrollIntoView({block: "end"}), true)`, id))
		reportCutTo(errorf, fmt.Sprintf("%s, first view of %s", p.Title, id), eval[[]cutLabel](t, tab, fmt.Sprintf("%s(-1, %q)", cutLabelsJS, id)))
	}
}

// citedTokenStep: on a phone, a step of the default tour that quotes the
// read that brought the second storage its token ("read claims 34")
// shows where its token line steps up to it, over 2 px in from the
// view's edges: at the late write's step it lay on the view's edge, a
// "34" drawn there in its place (#29 trial 11). (The rule's step, "having
// seen 34", still leaves it 3 px out: not yet checked.)
func citedTokenStep() stepCheck {
	return stepCheck{name: "CitedTokenStep", only: []string{kleppmann}, check: func(w walk, errorf func(string, ...any)) {
		if !strings.Contains(w.step().Text, `"read claims 34"`) {
			return
		}
		got := eval[[]float64](w.t, w.tab, `(() => {
  const fig = document.querySelectorAll(".run .timeline")[1];`+figViewJS+`
  const t = [...svg.querySelectorAll("text[data-x]")].find((t) => t.textContent === "read claims 34");
  return t ? [s.left + +t.dataset.x * k, left, right] : [];
})()`)
		if len(got) == 0 {
			errorf("%s: the second figure has no label \"read claims 34\"", w.where())
		} else if got[0] < got[1]+2 || got[0] > got[2]-2 {
			errorf("%s: the text cites token 34, but the second figure's token line steps up to it at x %.0f, out of the view %.0f..%.0f", w.where(), got[0], got[1], got[2])
		}
	}}
}

// phoneChecks are checked on a 400 x 860 phone.
func phoneChecks() []stepCheck {
	return []stepCheck{labelsWhole(), dangerNamed(), showsNamedWrites(), momentsInView(), primaryInView(), fatesInView(), barNames(),
		oneWindow(), tourBar(), tourNames(), phoneKeepsTheLegend(), verdictsWhole(), tokenInView(),
		pauseNamed(), legendLegible(), citedTokenStep(), momentHints()} // last: its tap scrolls the figures
}

// unnamedDangerJS lists, per figure, the danger bands (their label's
// text) of which 40 px or more show in the view, left of the tour's veil,
// while their label is not drawn whole in the view, though no label shown
// lies at the view's edge where it would go.
const unnamedDangerJS = `[...document.querySelectorAll(".run .timeline")].flatMap((fig) => {
  const svg = fig.querySelector("svg"), [from, to] = inView(fig);
  const veil = svg.querySelector("rect.veil"), end = Math.min(to, veil ? +veil.getAttribute("x") : Infinity);
  return [...svg.querySelectorAll("rect.danger")].flatMap((r) => {
    const x0 = +r.getAttribute("x"), x1 = x0 + +r.getAttribute("width");
    if (Math.min(x1, end) - Math.max(x0, from) < 40) return [];
    const t = [...svg.querySelectorAll("text.danger[data-x]")].find((t) => Math.abs(+t.dataset.x - x0) < 0.5);
    if (!t) return ["(no label)"];
    const b = t.getBBox();
    // Hidden as cut, or not drawn whole in the view (under the sticky bar is another check's).
    if (!t.classList.contains("cut") && t.style.visibility !== "hidden" && b.x >= from - 0.5 && b.x + b.width <= to + 0.5) return [];
    // Unless another label shown lies where it would go, at the view's edge.
    const left = b.x < from ? from + 2 : to - 2 - b.width;
    const taken = [...svg.querySelectorAll("text:not(.lane-name):not(.hint):not(.legend):not(.cut)")].some((o) => {
      const d = o.getBBox();
      return o !== t && o.style.visibility !== "hidden" && d.width > 0 && d.x < left + b.width && left < d.x + d.width && d.y < b.y + b.height && b.y < d.y + d.height;
    });
    return taken ? [] : [t.textContent];
  });
})`

// dangerNamed: at every step on a phone, a danger band that shows (40 px
// of it or more) shows its label whole: at "A shorter TTL"'s step 19 the
// view began past the band's start, and its label, cut there, was hidden
// (student trial 7); the page slides it to the view's left edge.
func dangerNamed() stepCheck {
	return stepCheck{name: "DangerNamed", check: func(w walk, errorf func(string, ...any)) {
		for _, l := range eval[[]string](w.t, w.tab, unnamedDangerJS) {
			errorf("%s: a danger band shows without its label %q", w.where(), l)
		}
	}}
}

// labelsWhole: at every step of every preset's tour, no label of either
// figure is cut by the figure's scrolled view, the lane names' strip or
// the screen's edges, and the step's own labels show whole.
func labelsWhole() stepCheck {
	return stepCheck{name: "LabelsWhole", check: func(w walk, errorf func(string, ...any)) {
		moments, _ := json.Marshal(w.step().Moments) // the last steps': the moments they name
		js := fmt.Sprintf("%s(%f, '', %s)", cutLabelsJS, w.step().X, moments)
		reportCutTo(errorf, w.where(), eval[[]cutLabel](w.t, w.tab, js))
	}}
}

// showsNamedWrites: at every step of every preset's tour, the labels of
// the fates of the writes the step names (A1, B1, ...), in both figures,
// show whole at once where side by side they fit the view (else one of
// them at least): the summary steps show A1's and B1's side by side.
func showsNamedWrites() stepCheck {
	name := regexp.MustCompile(`\b[A-Z]\d+\b`)
	checked := 0
	return stepCheck{name: "ShowsNamedWrites", check: func(w walk, errorf func(string, ...any)) {
		names := name.FindAllString(w.step().Text, -1)
		if len(names) == 0 {
			return
		}
		js, _ := json.Marshal(names)
		first := -1.0
		if len(w.step().Moments) > 0 {
			first = w.step().Moments[w.step().Focus]
		}
		s := eval[struct {
			All     []string
			Missing []string
			Fit     bool
		}](w.t, w.tab, fmt.Sprintf("%s(%f, %s, %f)", namedFatesJS, w.step().X, js, first))
		checked += len(s.All)
		if !s.Fit && len(s.Missing) < len(s.All) {
			return // not all fit the view at a readable scale: one at least shows
		}
		for _, m := range s.Missing {
			errorf("%s (names %v): %q is not shown whole with the others", w.where(), names, m)
		}
	}, done: func(errorf func(string, ...any), logf func(string, ...any)) {
		if checked < 20 {
			errorf("only %d labels of named writes checked", checked)
		}
		logf("%d labels of named writes checked", checked)
	}}
}

// momentsInView: at every step of every preset's tour, the moment the
// step talks about lies inside the part of both figures in view; a
// summary step's marked moments (B's read and write, A's pause and its
// lease's expiry) all do where side by side they fit the view at a
// readable scale (labelsReadable), else its focus (primaryInView) and
// those that fit with it, nearest it first (momentOrder); and of the marked labels of the moments in view ("33
// expired", "read claims 34"), all show whole if side by side they fit
// the view with those moments, in both figures together, else the
// storages' if they fit, and one at least.
func momentsInView() stepCheck {
	return stepCheck{name: "MomentsInView", check: func(w walk, errorf func(string, ...any)) {
		marked := momentOrder(w.step())
		moments := marked
		if len(moments) == 0 {
			moments = []float64{w.step().X}
		}
		js, _ := json.Marshal(moments)
		s := eval[momentState](w.t, w.tab, fmt.Sprintf("%s(%s)", momentStateJS, js))
		// Both figures are scrolled to one position (oneWindow): the
		// labels of the moments in view count in both together.
		var labels, stores, missing []momentLabel
		var shownX []float64
		// The moments that fit the view with the focus, nearest it first,
		// with the storages' labels of each in both figures: the page
		// shows both at one position.
		fits := make([]bool, len(moments))
		var ends []float64
		for i := range moments {
			xs := slices.Clone(ends)
			view := math.Inf(1)
			for f := range s.From {
				x := s.Moments[f][i]
				xs = append(xs, x-8, x+12)
				for _, l := range s.Labels[f] {
					if l.M == i && l.Store {
						xs = append(xs, l.X0, l.X1)
					}
				}
				view = min(view, s.To[f]-s.From[f])
			}
			fits[i] = i == 0 || slices.Max(xs)-slices.Min(xs) <= view-8
			if fits[i] {
				ends = xs
			}
		}
		for f := range s.From {
			in := func(x float64) bool { return x >= s.From[f]-0.5 && x <= s.To[f]+0.5 }
			shown := make([]bool, len(moments))
			for i, x := range s.Moments[f] {
				fits := fits[i]
				shown[i] = in(x)
				if shown[i] {
					shownX = append(shownX, x, x+12) // the latest 12 px clear of the view's edge, as the page keeps it
				}
				if !shown[i] && fits {
					errorf("%s, figure %d: the step's moment at x %.0f (on screen %.0f) is outside the view, %.0f..%.0f",
						w.where(), f+1, moments[i], x, s.From[f], s.To[f])
				}
			}
			if len(marked) == 0 {
				continue
			}
			for _, l := range s.Labels[f] {
				if !shown[l.M] {
					continue
				}
				l.Text = fmt.Sprintf("%q in figure %d", l.Text, f+1)
				labels = append(labels, l)
				if l.Store {
					stores = append(stores, l)
				}
				if !l.Whole {
					missing = append(missing, l)
				}
			}
		}
		if len(labels) == 0 {
			return
		}
		// The span of labels ls with the moments in view.
		span := func(ls []momentLabel) float64 {
			lo, hi := slices.Min(shownX), slices.Max(shownX)
			for _, l := range ls {
				lo, hi = min(lo, l.X0), max(hi, l.X1)
			}
			return hi - lo
		}
		view := s.To[0] - s.From[0]
		switch {
		case span(labels) <= view+1, len(missing) == len(labels):
		case span(stores) <= view+1:
			missing = slices.DeleteFunc(missing, func(l momentLabel) bool { return !l.Store })
		default:
			missing = nil
		}
		for _, l := range missing {
			errorf("%s: the label %s of a moment the step marks does not show whole: it spans %.0f..%.0f, the view %.0f..%.0f",
				w.where(), l.Text, l.X0, l.X1, s.From[0], s.To[0])
		}
	}}
}

// momentOrder is the moments summary step st marks in the order a
// phone's view takes them: its focus, then the others, nearest the
// focus first.
func momentOrder(st playground.Step) []float64 {
	if len(st.Moments) == 0 {
		return nil
	}
	focus := st.Moments[st.Focus]
	rest := slices.Delete(slices.Clone(st.Moments), st.Focus, st.Focus+1)
	slices.SortStableFunc(rest, func(a, b float64) int { return cmp.Compare(math.Abs(a-focus), math.Abs(b-focus)) })
	return append([]float64{focus}, rest...)
}

// primaryInView: on a phone, at every summary step, the moment it is
// about (its Focus: A1 landing unchecked at 17.6 s, A's write at 7.5 s,
// B's read that claims 34) lies in the view of both figures, and its
// highlighted labels and the storages' there (the write's fate in both
// figures: "ok", "REJECTED") show whole, as long as they fit the view
// beside it: where not all marked moments fit a readable scale, the page
// showed other ones, and only a small "\u25c0 10.5s" hint for the
// moment the step is about ("student trial 5"), or "17.6s \u25b6" for
// the write it is about ("student trial 6").
func primaryInView() stepCheck {
	n := 0
	return stepCheck{name: "PrimaryInView", check: func(w walk, errorf func(string, ...any)) {
		moments := w.step().Moments
		if len(moments) == 0 {
			return
		}
		n++
		js, _ := json.Marshal(moments[w.step().Focus : w.step().Focus+1])
		s := eval[momentState](w.t, w.tab, fmt.Sprintf("%s(%s)", momentStateJS, js))
		for f := range s.From {
			x := s.Moments[f][0]
			if x < s.From[f]-0.5 || x > s.To[f]+0.5 {
				errorf("%s, figure %d: the moment the step is about (x %.0f) is outside the view, %.0f..%.0f", w.where(), f+1, x, s.From[f], s.To[f])
				continue
			}
			lo, hi := x, x
			var named []momentLabel
			for _, l := range s.Labels[f] {
				if l.Named || l.Store {
					named = append(named, l)
					lo, hi = min(lo, l.X0), max(hi, l.X1)
				}
			}
			if hi-lo > s.To[f]-s.From[f] {
				continue
			}
			for _, l := range named {
				if !l.Whole {
					errorf("%s, figure %d: the label %q of the moment the step is about does not show whole: it spans %.0f..%.0f, the view %.0f..%.0f",
						w.where(), f+1, l.Text, l.X0, l.X1, s.From[f], s.To[f])
				}
			}
		}
	}, done: func(errorf func(string, ...any), logf func(string, ...any)) {
		logf("%d summary steps checked", n)
	}}
}

// pauseNamedJS lists, in each figure, the pauses whose box is drawn
// (up to the veil) in view over 17 px at least, with room for its label
// ("paused 15s") from there to the view's edge, with whether that label
// shows whole in view (drawn above the veil, it may run past it).
const pauseNamedJS = `(() => {
  const out = [];
  for (const fig of document.querySelectorAll(".run .timeline")) {` + figViewJS + `
    const veil = svg.querySelector("rect.veil");
    const to = Math.min(right, veil ? veil.getBoundingClientRect().left : Infinity);
    for (const r of svg.querySelectorAll("rect.pause")) {
      const b = r.getBoundingClientRect();
      const label = [...svg.querySelectorAll("text[data-x]")].find((t) => t.textContent.startsWith("paused ") && Math.abs(+t.dataset.x - +r.getAttribute("x")) < 0.5);
      if (!label || label.style.visibility === "hidden") continue; // not reached yet
      const w = label.getBBox().width * k;
      if (Math.min(b.right, to) - Math.max(b.left, left) < 17 || Math.max(b.left, left) + w + 9 > right) continue;
      const l = label.getBoundingClientRect();
      out.push({Text: label.textContent, Shown: getComputedStyle(label).visibility !== "hidden" && l.left >= left - 0.5 && l.right <= right + 0.5});
    }
  }
  return out;
})()`

// pauseNamed: on a phone, at every step, a pause whose box shows in view
// wide enough for its label ("paused 15s") shows that label whole: the
// view 7.5..10.5 s showed A's row as a grey box only ("student trial 6").
func pauseNamed() stepCheck {
	return shownCheck("PauseNamed", pauseNamedJS, "a pause's box shows in view, and its label %q does not",
		"no pause's box shows in view at any step", "%d pauses in view checked")
}

// legendLegible: on a phone, the legend in the tour's bar reads at the
// figures' own 12 px, each mark drawn in its own proportions (within
// 10%), no entry over another or over the bar's buttons: it was 11 px,
// its marks squeezed, three entries a line beside the buttons.
func legendLegible() stepCheck {
	return stepCheck{name: "LegendLegible", only: []string{kleppmann}, check: func(w walk, errorf func(string, ...any)) {
		for _, p := range eval[[]string](w.t, w.tab, `(() => {
  const out = [];
  const boxes = [];
  for (const e of document.querySelectorAll("#phone-key > span")) {
    if (e.getClientRects().length === 0) continue;
    const size = parseFloat(getComputedStyle(e).fontSize);
    if (size < 11.99) out.push(e.textContent + ": " + size + " px");
    const m = e.querySelector("svg"), vb = m.viewBox.baseVal, r = m.getBoundingClientRect();
    if (Math.abs((r.width / r.height) / (vb.width / vb.height) - 1) > 0.1) out.push(e.textContent + ": its mark drawn " + r.width.toFixed(0) + "x" + r.height.toFixed(0) + " for " + vb.width.toFixed(0) + "x" + vb.height.toFixed(0));
    boxes.push([e.textContent, e.getBoundingClientRect()]);
  }
  for (const b of document.querySelectorAll("#tour button")) if (b.getClientRects().length > 0) boxes.push([b.id, b.getBoundingClientRect()]);
  for (const [i, [n, a]] of boxes.entries()) for (const [m, b] of boxes.slice(i + 1)) {
    if (a.left < b.right - 0.5 && b.left < a.right - 0.5 && a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5) out.push(n + " overlaps " + m);
  }
  return out;
})()`) {
			errorf("%s: the legend: %s", w.where(), p)
		}
	}}
}

// shownCheck is a check, named name, that at every step each item js
// lists ({Text, Shown}) shows (fails: the error, of the step's place and
// Text), and that some step lists one (none: the error if not; counted:
// the log of how many).
func shownCheck(name, js, fails, none, counted string) stepCheck {
	n := 0
	return stepCheck{name: name, check: func(w walk, errorf func(string, ...any)) {
		type item struct {
			Text  string
			Shown bool
		}
		for _, it := range eval[[]item](w.t, w.tab, js) {
			n++
			if !it.Shown {
				errorf("%s: "+fails, w.where(), it.Text)
			}
		}
	}, done: func(errorf func(string, ...any), logf func(string, ...any)) {
		if n == 0 {
			errorf("%s", none)
		}
		logf(counted, n)
	}}
}

// tokenInViewJS lists, in each figure, the storage's token where its
// line enters the part in view (right of the lane names' strip, left of
// the veil) and holds for 30 px at least, with whether a label of that
// token ("34", "wrote 33") shows whole there.
const tokenInViewJS = `(() => {
  const out = [];
  for (const fig of document.querySelectorAll(".run .timeline")) {` + figViewJS + `
    const veil = svg.querySelector("rect.veil");
    const to = Math.min(right, veil ? veil.getBoundingClientRect().left : Infinity);
    const from = (left - s.left) / k;
    const labels = [...svg.querySelectorAll("text:not([data-x]):not(.legend)")].filter((t) => /^(wrote )?\d+$/.test(t.textContent));
    for (const p of svg.querySelectorAll('polyline[stroke="#555"]:not(.legend):not(.peek)')) {
      const ps = p.getAttribute("points").trim().split(/\s+/).map((xy) => xy.split(",").map(Number));
      const before = ps.filter(([x]) => x <= from), after = ps.find(([x]) => x > from);
      // A level that shows as a sliver before the next step (under 30 px) needs no label.
      if (!before.length || left + 40 > to || (after && (after[0] - from) * k < 30)) continue;
      const y = before[before.length - 1][1];
      const own = labels.filter((t) => Math.abs(+t.getAttribute("y") - (y - 3)) < 0.5);
      const last = own.filter((t) => +t.getAttribute("x") - 3 <= from).pop();
      if (!last) continue;
      const text = last.textContent.replace(/^wrote /, "");
      const shown = [...svg.querySelectorAll("text")].some((t) => t.textContent.replace(/^wrote /, "") === text && /^(wrote )?\d+$/.test(t.textContent) &&
        !t.classList.contains("legend") && getComputedStyle(t).visibility !== "hidden" && Math.abs(+t.getAttribute("y") - (y - 3)) < 0.5 &&
        t.getBoundingClientRect().left >= left - 0.5 && t.getBoundingClientRect().right <= to + 0.5);
      out.push({Text: last.textContent, Shown: shown});
    }
  }
  return out;
})()`

// tokenInView: on a phone, at every step, where the storage's token line
// runs into the view from its left edge, a label shows its token in
// view: a step said "it has seen token 34" while the claim storage's
// line, its "34" slid out of view, showed no number ("student trial 5").
func tokenInView() stepCheck {
	return shownCheck("TokenInView", tokenInViewJS, "the storage's token line enters the view at token %q, and no label in view says so",
		"no token line enters a view from its left", "%d token lines entering the view checked")
}

// figViewJS, in a loop over the figures' columns (fig), reads the
// figure's view on screen: its svg, the column's box f and the svg's s,
// its scale k (screen px per unit), and from left to right the part it
// shows, right of the lane names' strip.
const figViewJS = `
    const svg = fig.querySelector("svg");
    const f = fig.getBoundingClientRect(), s = svg.getBoundingClientRect();
    const k = s.width / +svg.getAttribute("width");
    const strip = svg.querySelector("rect.name-strip");
    const left = strip && getComputedStyle(strip).visibility !== "hidden" ? strip.getBoundingClientRect().right : f.left + fig.clientLeft;
    const right = f.left + fig.clientLeft + fig.clientWidth;
`

// fatesJS lists, in both figures, the storages' labels of the writes'
// fates ("B1 (token 34): ok, later LOST") that a step at x has reached
// whose write lies in the part of the figure in view, whether each shows
// whole there, and the span (Lo..Hi) it makes with the step's moments in
// view and their marked labels.
const fatesJS = `((x, moments) => {
  const out = [];
  for (const fig of document.querySelectorAll(".run .timeline")) {` + figViewJS + `
    const storeY = Math.max(...[...svg.querySelectorAll("text.lane-name")].map((n) => +n.getAttribute("y")));
    // The moments in view and their marked labels, which the page keeps first.
    let lo = Infinity, hi = -Infinity;
    for (const m of moments) {
      const mx = s.left + m * k;
      if (mx < left || mx > right) continue;
      lo = Math.min(lo, mx);
      hi = Math.max(hi, mx + 12);
      for (const t of svg.querySelectorAll("text[data-x]:not(.danger)")) {
        if (+t.dataset.x > m + 0.5 || +t.dataset.x < m - 6) continue;
        const b = t.getBoundingClientRect();
        lo = Math.min(lo, b.left);
        hi = Math.max(hi, b.right);
      }
    }
    for (const t of svg.querySelectorAll("text[data-x]")) {
      const at = s.left + +t.dataset.x * k;
      if (+t.dataset.y <= storeY || +t.dataset.x > x + 0.5 || !/token \d+\)/.test(t.textContent) || at < left || at > right) continue;
      const b = t.getBoundingClientRect();
      out.push({Text: t.textContent, X0: b.left, X1: b.right, From: left, To: right, Lo: Math.min(lo, b.left), Hi: Math.max(hi, b.right),
        K: k, Column: fig.clientWidth, Strip: (left - f.left - fig.clientLeft) / k,
        Whole: getComputedStyle(t).visibility !== "hidden" && b.left >= left - 0.5 && b.right <= right + 0.5,
        Later: [...t.querySelectorAll("tspan[data-from]")].some((s) => +s.dataset.from > x + 0.5)});
    }
  }
  return out;
})`

// fatesInView: at the summary steps, which name earlier moments, and at
// other steps for a label with a part told later (whose hidden ", later
// LOST" took room and had the phone's view hide "B1 (token 34): ok" at
// the default tour's step 12, "student trial 5"), each
// storage's label of a write's fate whose write lies in view shows whole
// where it fits the view with the step's moments in view and their
// marked labels, as shown or at the least scale (labelsReadable): the
// first figure's "B1 (token 34): ok, later LOST" was hidden at the
// default tour's summaries of atomicity and the TTL, cut by the view's
// right edge, though the steps are about that write.
func fatesInView() stepCheck {
	return stepCheck{name: "FatesInView", check: func(w walk, errorf func(string, ...any)) {
		marked := w.step().Moments
		if len(marked) == 0 {
			marked = []float64{w.step().X} // any other step: its own moment
		}
		type fate struct {
			Text                     string
			X0, X1, From, To, Lo, Hi float64
			K, Column, Strip         float64 // the scale, the column's width (px), the strip's (units)
			Whole                    bool
			Later                    bool // it has a part told at a later step (", later LOST")
		}
		moments, _ := json.Marshal(marked)
		for _, l := range eval[[]fate](w.t, w.tab, fmt.Sprintf("%s(%f, %s)", fatesJS, w.step().X, moments)) {
			if len(w.step().Moments) == 0 && !l.Later {
				continue // at other steps: a label whose untold part took room
			}
			// It fits the view as shown, or at the least scale (11/12).
			if !l.Whole && (l.Hi-l.Lo <= l.To-l.From+0.5 || (l.Hi-l.Lo)/l.K <= l.Column*12/11-l.Strip-4) {
				errorf("%s: the storage's %q, whose write is in view, does not show whole: it spans %.0f..%.0f, the view %.0f..%.0f",
					w.where(), l.Text, l.X0, l.X1, l.From, l.To)
			}
		}
	}}
}

// barNamesJS lists each lease bar (a rect of rx 3, 14 high) whose part
// in view (right of the lane names' strip, left of the figure's edge and
// of the tour's veil) is wider than its short name ("lease 33", without
// the holder) and 8 px, with whether a label inside the bar's part in
// view names it ("lease 33 (A)" or "lease 33").
const barNamesJS = `(() => {
  const out = [];
  for (const fig of document.querySelectorAll(".run .timeline")) {
    const svg = fig.querySelector("svg");
    const f = fig.getBoundingClientRect();
    const strip = svg.querySelector("rect.name-strip");
    const left = strip && getComputedStyle(strip).visibility !== "hidden" ? strip.getBoundingClientRect().right : f.left + fig.clientLeft;
    const veil = svg.querySelector("rect.veil");
    const right = Math.min(f.left + fig.clientLeft + fig.clientWidth, veil ? veil.getBoundingClientRect().left : Infinity);
    const texts = [...svg.querySelectorAll("text:not([data-x])")].filter((t) => /^lease \d+/.test(t.textContent));
    for (const bar of svg.querySelectorAll('rect[rx="3"][height="14"]')) {
      const r = bar.getBoundingClientRect(), lo = Math.max(r.left, left), hi = Math.min(r.right, right);
      const own = texts.filter((t) => { const b = t.getBoundingClientRect(); return b.top < r.bottom && b.bottom > r.top && b.left >= r.left - 0.5 && b.right <= r.right + 0.5; });
      const probe = own[0] || texts[0];
      if (!probe) continue;
      const k = r.height / 14;
      const short = probe.textContent.replace(/ \(.*\)$/, "").length * 7.2 * k; // the short name's width, about
      if (hi - lo < short + 8) continue;
      const named = own.some((t) => { const b = t.getBoundingClientRect(); return getComputedStyle(t).visibility !== "hidden" && b.left >= lo - 0.5 && b.right <= hi + 0.5; });
      out.push({Bar: Math.round(lo) + ".." + Math.round(hi), Names: own.map((t) => t.textContent), Named: named});
    }
  }
  return out;
})()`

// barNames: on a phone, at every step of every preset's tour, a lease
// bar whose part in view has room for its name shows a name there: the
// lane names' strip ("Lease") covered "lease 33 (A)", centred in its
// bar, while the bar's end showed beside the strip.
func barNames() stepCheck {
	return stepCheck{name: "BarNames", check: func(w walk, errorf func(string, ...any)) {
		type bar struct {
			Bar   string
			Names []string
			Named bool
		}
		for _, b := range eval[[]bar](w.t, w.tab, barNamesJS) {
			if !b.Named {
				errorf("%s: the lease bar in view at x %s shows no name (its label: %q)", w.where(), b.Bar, b.Names)
			}
		}
	}}
}

// oneWindow: at every step of the tour both figures are scrolled to one
// position, so that an instant sits at one place in both; the fenced
// storage keeps its rule in its short name ("(claim)"); and from the
// step that tells the outcome on, each figure shows whole A's late write
// and its fate, and the fenced one B's read that claimed 34 before it
// (but at the last steps that name earlier moments): the phone's figures
// are drawn on the most compressed time axis that keeps labels apart.
func oneWindow() stepCheck {
	return stepCheck{name: "OneWindow", only: []string{kleppmann}, check: func(w walk, errorf func(string, ...any)) {
		i := w.j
		s := eval[windowState](w.t, w.tab, windowStateJS)
		if len(s.Scroll) != 2 || s.Scroll[0] != s.Scroll[1] {
			errorf("step %d: the figures are scrolled to %v, want one position", i+1, s.Scroll)
		}
		if len(s.Names) == 2 && !strings.Contains(s.Names[1], "(claim)") {
			errorf("step %d: the fenced storage is named %q, want its rule, (claim)", i+1, s.Names[1])
		}
		if !w.step().Outcome || len(w.step().Moments) > 0 {
			return // a last step that names earlier moments shows them (momentsInView)
		}
		for f, fates := range s.Fates {
			for _, want := range []string{"write A1, token 33", "A1 (token 33)"} {
				if !strings.Contains(strings.Join(fates, "|"), want) {
					errorf("step %d (outcome), figure %d: %q is not shown whole; the view shows %q", i+1, f, want, fates)
				}
			}
		}
		if len(s.Fates) == 2 && !strings.Contains(strings.Join(s.Fates[1], "|"), "read claims 34") {
			errorf("step %d (outcome): the fenced run's \"read claims 34\" is not shown whole with A1's refusal; the view shows %q", i+1, s.Fates[1])
		}
	}}
}

// tourBar: the sticky bar with the tour stays within a quarter of the
// screen at every step.
func tourBar() stepCheck {
	tallest := 0.0
	return stepCheck{name: "TourBar", only: []string{kleppmann}, check: func(w walk, errorf func(string, ...any)) {
		h := w.s.StickyBot - w.s.StickyTop
		tallest = max(tallest, h)
		if h > 860/4 {
			errorf("step %d: the tour's bar is %.0f px tall, over a quarter of 860 px", w.j+1, h)
		}
		if w.j == 11 { // B's release, whose text the bar once held in 345 px
			shot(w.t, w.tab, "tour-400")
		}
	}, done: func(_ func(string, ...any), logf func(string, ...any)) {
		logf("the tallest bar: %.0f px", tallest)
	}}
}

// tourNames: at every step, each figure's lane names sit on an opaque
// strip that nothing is drawn over but them (and momentHints' hints), so no data shows under a
// name; and from the step that tells A's late write on, the fenced run's
// REJECTED label is on screen (but at the last steps that name earlier
// moments).
func tourNames() stepCheck {
	return stepCheck{name: "TourNames", only: []string{kleppmann}, check: func(w walk, errorf func(string, ...any)) {
		late := slices.IndexFunc(w.tour, func(s playground.Step) bool { return strings.Contains(s.Text, "late write") })
		i := w.j
		s := eval[phoneState](w.t, w.tab, phoneStateJS)
		for f, problem := range s.Strips {
			if problem != "" {
				errorf("step %d, figure %d: the lane names' strip: %s", i+1, f, problem)
			}
		}
		if i >= late && len(w.step().Moments) == 0 && (s.Rejected[0] < s.StickyBot || s.Rejected[1] > s.Screen) {
			errorf("step %d: the fenced run's REJECTED label spans y %.0f..%.0f, not between the bar (%.0f) and the screen's bottom (%.0f)",
				i+1, s.Rejected[0], s.Rejected[1], s.StickyBot, s.Screen)
		}
		if i == late+2 {
			shot(w.t, w.tab, "tour-phone-late")
		}
	}}
}

// phoneKeepsTheLegend: at every step of the tour, every entry of the
// figures' legend (what the marks mean) shows whole on screen, its mark
// beside its name, while the tour's bar stays within a quarter of the
// screen, for the default run and the preset whose tour has the longest
// step.
func phoneKeepsTheLegend() stepCheck {
	return stepCheck{name: "KeepsTheLegend", only: []string{kleppmann, checkThenWrite}, check: func(w walk, errorf func(string, ...any)) {
		legendMissing(w, phoneLegendJS, errorf)
		if h := w.s.StickyBot - w.s.StickyTop; h > 860/4 {
			errorf("%s: the tour's bar is %.0f px tall, over a quarter of 860 px", w.where(), h)
		}
	}}
}

// verdictsWhole: from the tour's step that tells the outcome on, each
// run's verdict shows whole in its frame: "Tokens went backwards" beside
// "Check, then write: two steps" was cut to "Tokens went backw".
func verdictsWhole() stepCheck {
	seen := 0
	return stepCheck{name: "VerdictsWhole", only: []string{checkThenWrite}, check: func(w walk, errorf func(string, ...any)) {
		type verdict struct {
			Text                  string
			Shown                 bool
			Left, Right, RunRight float64
		}
		vs := eval[[]verdict](w.t, w.tab, `[...document.querySelectorAll(".run .verdict")].map((v) => {
  const r = v.getBoundingClientRect(), run = v.closest(".run").getBoundingClientRect();
  return {Text: v.textContent, Shown: getComputedStyle(v).visibility !== "hidden", Left: r.left, Right: r.right, RunRight: run.right};
})`)
		for _, v := range vs {
			if !v.Shown {
				continue
			}
			seen++
			if v.Left < 0 || v.Right > v.RunRight+0.5 || v.Right > 400 {
				errorf("step %d: the verdict %q spans x %.0f..%.0f, past its run's frame (%.0f) or the screen", w.j+1, v.Text, v.Left, v.Right, v.RunRight)
			}
		}
	}, done: func(errorf func(string, ...any), _ func(string, ...any)) {
		if seen == 0 {
			errorf("no step shows a verdict")
		}
	}}
}

// hintsJS lists per figure the moments a step marks (x) that lie outside
// the part of the figure in view, and the texts of the hints (text.hint)
// shown whole on screen.
const hintsJS = `((moments) => {
  const bar = document.getElementById("sticky").getBoundingClientRect().bottom;
  return [...document.querySelectorAll(".run .timeline")].map((fig) => {` + figViewJS + `
    const outside = moments.filter((m) => s.left + m * k < left - 0.5 || s.left + m * k > right + 0.5);
    const hints = [...svg.querySelectorAll("text.hint")].filter((t) => {
      const r = t.getBoundingClientRect();
      return getComputedStyle(t).visibility !== "hidden" && r.width > 0 && r.left >= f.left - 0.5 && r.right <= right + 0.5 &&
        r.top >= bar - 0.5 && r.bottom <= innerHeight + 0.5 && parseFloat(getComputedStyle(t).fontSize) * t.getScreenCTM().a >= 10.99;
    }).map((t) => t.textContent);
    return {Outside: outside, Hints: hints};
  });
})`

// momentHints: on a phone, at every summary step whose marked moments do
// not all fit the view at a readable scale, each figure names the
// moments outside its view at the view's edge ("\u25c0 2.4s"), and a tap
// on that hint brings them into view: the reader knows that the step
// talks about more than the screen shows, and where.
func momentHints() stepCheck {
	n := 0
	return stepCheck{name: "MomentHints", check: func(w walk, errorf func(string, ...any)) {
		if len(w.step().Moments) == 0 {
			return
		}
		type state struct {
			Outside []float64
			Hints   []string
		}
		js, _ := json.Marshal(w.step().Moments)
		read := func() []state { return eval[[]state](w.t, w.tab, fmt.Sprintf("%s(%s)", hintsJS, js)) }
		before := read()
		if len(before[0].Outside) == 0 {
			return
		}
		n++
		for f, s := range before {
			if len(s.Outside) > 0 && len(s.Hints) == 0 {
				errorf("%s, figure %d: the marked moments at x %v lie outside the view, and no hint says so", w.where(), f+1, s.Outside)
			}
		}
		if !eval[bool](w.t, w.tab, `((h) => !!h && (h.dispatchEvent(new MouseEvent("click", {bubbles: true})), true))(document.querySelector(".run .timeline svg text.hint"))`) {
			return
		}
		for f, s := range read() {
			for _, m := range before[f].Outside {
				if slices.Contains(s.Outside, m) {
					errorf("%s, figure %d: a tap on the hint %q leaves the moment at x %.1f outside the view", w.where(), f+1, before[0].Hints, m)
				}
			}
		}
	}, done: func(errorf func(string, ...any), logf func(string, ...any)) {
		if n == 0 {
			errorf("no summary step has moments outside the view")
		}
		logf("%d summary steps with moments outside the view", n)
	}}
}
