package browser

import (
	"context"
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/fencekit/fencekit/internal/playground"
)

// cutLabel is a label of a figure that shows only in part, or one that
// must show and does not: its box on screen, and the part of the screen
// the figure shows.
type cutLabel struct {
	Text, Why                string
	Left, Right, Top, Bottom float64
	VisL, VisR, VisT, VisB   float64
}

// cutLabelsJS, called with a tour step's x (or -1 for the page as it
// opens, and the id of the run brought on screen, whose figure alone is
// then checked), lists the labels of both figures that are partly visible: part
// of the box shows, part is clipped by the figure's scrolled view, hidden
// under the lane names' strip, off the screen's sides, or under the
// sticky bar or below the screen's bottom. A label wholly out of view is
// not cut (a scroll brings it whole), nor is one the tour's veil covers
// whole; one it covers in part is. It lists too the labels that must show whole and do not:
// at a step, those of its moment's events (or of the earlier moments one
// of the last steps names), up to 6 px before, in both
// figures together (all if side by side they fit the view, else the
// storages' if they fit, and one at least); as the page opens, the
// danger's of the run on screen.
const cutLabelsJS = `((x, id, moments) => {
  const sticky = document.getElementById("sticky").getBoundingClientRect().bottom;
  const out = [], musts = [];
  for (const fig of document.querySelectorAll(".run .timeline")) {
    if (x < 0 && !fig.closest("#" + id)) continue; // the other run may lie partly under the sticky bar, as on any scrolled page
    const svg = fig.querySelector("svg");
    const f = fig.getBoundingClientRect();
    const strip = svg.querySelector("rect.name-strip");
    const stripRight = strip && getComputedStyle(strip).visibility !== "hidden" ? strip.getBoundingClientRect().right : -Infinity;
    const veil = svg.querySelector("rect.veil");
    const veilLeft = veil ? veil.getBoundingClientRect().left : Infinity;
    const storeY = Math.max(...[...svg.querySelectorAll("text.lane-name")].map((n) => +n.getAttribute("y")));
    for (const t of svg.querySelectorAll("text")) {
      const r = t.getBoundingClientRect();
      const name = t.classList.contains("lane-name");
      const v = {
        l: Math.max(f.left + fig.clientLeft, 0, name ? -Infinity : stripRight),
        r: Math.min(f.left + fig.clientLeft + fig.clientWidth, innerWidth),
        t: Math.max(f.top, sticky), b: Math.min(f.bottom, innerHeight),
      };
      const at = t.dataset.x === undefined ? NaN : +t.dataset.x;
      const later = t.dataset.from !== undefined && +t.dataset.from > x + 0.5; // told at a later step
      // At a last step, the danger's banner, which labels a span, is no label of a moment it names.
      // A last step's moments in view (primaryInView: the first and those
      // that fit with it, which the page keeps 12 px clear of the right edge).
      const sv = svg.getBoundingClientRect(), seenAt = (m) => sv.left + m * sv.width / +svg.getAttribute("width") >= v.l - 0.5 &&
        sv.left + m * sv.width / +svg.getAttribute("width") <= v.r - 11.5;
      const must = x >= 0 ? (moments ? !t.classList.contains("danger") && moments.some((m) => at <= m + 0.5 && at >= m - 6 && seenAt(m)) : at <= x + 0.5 && at >= x - 6) && !later
        : t.classList.contains("danger") && !!fig.closest("#" + id);
      const shown = getComputedStyle(t).visibility !== "hidden" && t.getClientRects().length > 0 && r.width > 0;
      const under = veil && (t.compareDocumentPosition(veil) & Node.DOCUMENT_POSITION_FOLLOWING);
      const b = {left: r.left, right: r.right, top: r.top, bottom: r.bottom};
      const veiled = under && r.left >= veilLeft - 0.5;
      const seen = shown && !veiled && b.right > b.left && b.right > v.l && b.left < v.r && b.bottom > v.t && b.top < v.b;
      const whole = b.left >= v.l - 0.5 && b.right <= v.r + 0.5 && b.top >= v.t - 0.5 && b.bottom <= v.b + 0.5;
      const found = {Text: t.textContent, Why: "", Left: b.left, Right: b.right, Top: b.top, Bottom: b.bottom,
        VisL: v.l, VisR: v.r, VisT: v.t, VisB: v.b};
      if (seen && !whole) out.push({...found, Why: "cut"});
      if (seen && under && r.right > veilLeft + 0.5) out.push({...found, Why: "cut by the tour's veil"});
      if (must) musts.push({...found, Why: "not shown whole", ok: seen && whole, width: v.r - v.l, store: +t.dataset.y > storeY});
    }
  }
  // Those that must show, in both figures (scrolled to one position):
  // all whole if side by side they fit the view, else the storages' (a
  // write's fate) if they fit, and one at least.
  if (musts.length) {
    const span = Math.max(...musts.map((m) => m.Right)) - Math.min(...musts.map((m) => m.Left));
    const missing = musts.filter((m) => !m.ok);
    const stores = musts.filter((m) => m.store);
    const storeSpan = Math.max(...stores.map((m) => m.Right)) - Math.min(...stores.map((m) => m.Left));
    if (span <= musts[0].width + 1) out.push(...missing);
    else if (missing.length === musts.length) out.push(...missing);
    else if (storeSpan <= musts[0].width + 1) out.push(...missing.filter((m) => m.store));
  }
  return out;
})`

// reportCutTo reports with errorf every label in cut, saying where.
func reportCutTo(errorf func(string, ...any), where string, cut []cutLabel) {
	for _, c := range cut {
		errorf("%s: label %q %s: it spans x %.0f..%.0f, y %.0f..%.0f; the view shows x %.0f..%.0f, y %.0f..%.0f",
			where, c.Text, c.Why, c.Left, c.Right, c.Top, c.Bottom, c.VisL, c.VisR, c.VisT, c.VisB)
	}
}

// clickPreset presses the page's preset i and returns what readPage
// reads then.
func clickPreset(t *testing.T, tab context.Context, i int) (string, [2]shown) {
	t.Helper()
	if err := chromedp.Do(tab, chromedp.Click(chromedp.CSS(fmt.Sprintf(`#presets button:nth-child(%d)`, i+1)))); err != nil {
		t.Fatal(err)
	}
	return readPage(t, tab)
}

// tourShown starts the tour of the run q the page shows, calls f at
// each step with the tour as Run gives it at the page's width and what
// the page shows of the tour, then closes the tour and scrolls back to
// the top.
func tourShown(t *testing.T, tab context.Context, q string, f func(tour []playground.Step, j int, s tourState)) {
	t.Helper()
	resp, err := playground.Run(q, pageWidth)
	if err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(tab, chromedp.Click(chromedp.ID("tour-start"))); err != nil {
		t.Fatal(err)
	}
	eachStep(t, tab, resp.Tour, func(j int, s tourState) { f(resp.Tour, j, s) })
	if err := chromedp.Do(tab, chromedp.Click(chromedp.ID("tour-close"))); err != nil {
		t.Fatal(err)
	}
	eval[bool](t, tab, `(scrollTo(0, 0), true)`)
}
