package browser

import (
	"encoding/json"
	"fmt"
	"regexp"
	"testing"

	"github.com/fencekit/fencekit/internal/playground"
)

// frameState is where the figures' frames (each figure's visible box,
// its outline) are on screen, and the bottom of the tour's bar.
type frameState struct {
	Frames [][2]float64 // per figure: top and bottom on screen
	Bar    float64
	Screen float64
}

const frameStateJS = `(() => ({
  Frames: [...document.querySelectorAll(".run .timeline")].map((f) => {
    const r = f.getBoundingClientRect();
    return [r.top, r.bottom];
  }),
  Bar: document.getElementById("sticky").getBoundingClientRect().bottom,
  Screen: innerHeight,
}))()`

// TestBrowserTourFiguresWhole: at 1280 x 800, at every step of every
// preset's tour, both figures' frames are wholly on screen, below the
// tour's bar and above the screen's bottom, not cut by either.
func TestBrowserTourFiguresWhole(t *testing.T) {
	tab := openPage(t, 1280, 800, "")
	def, err := playground.Run("", 0)
	if err != nil {
		t.Fatal(err)
	}
	steps := 0
	for i, p := range def.Presets {
		q, _ := clickPreset(t, tab, i)
		tourShown(t, tab, q, func(tour []playground.Step, j int) {
			steps++
			s := eval[frameState](t, tab, frameStateJS)
			if len(s.Frames) != 2 {
				t.Fatalf("%s: %d figures", p.Title, len(s.Frames))
			}
			for f, r := range s.Frames {
				if r[0] < s.Bar-0.5 || r[1] > s.Screen+0.5 {
					t.Errorf("%s, step %d: figure %d's frame spans y %.0f..%.0f, not wholly between the tour's bar (%.0f) and the screen's bottom (%.0f)",
						p.Title, j+1, f+1, r[0], r[1], s.Bar, s.Screen)
				}
			}
		})
	}
	t.Logf("%d presets, %d tour steps checked", len(def.Presets), steps)
}

// namedFatesJS, called with a tour step's x and the writes its text
// names, lists the storages' labels of those writes' fates ("A1 (token
// 33): ok") that the step has reached, in both figures, and those of them
// not shown whole: out of the figure's view (left of the lane names'
// strip, right of its edge), under the tour's bar or below the screen.
const namedFatesJS = `((x, names) => {
  const bar = document.getElementById("sticky").getBoundingClientRect().bottom;
  const out = {All: [], Missing: []};
  for (const fig of document.querySelectorAll(".run .timeline")) {
    const svg = fig.querySelector("svg");
    const f = fig.getBoundingClientRect();
    const strip = svg.querySelector("rect.name-strip");
    const left = strip && getComputedStyle(strip).visibility !== "hidden" ? strip.getBoundingClientRect().right : f.left;
    const right = f.left + fig.clientLeft + fig.clientWidth;
    const storeY = Math.max(...[...svg.querySelectorAll("text.lane-name")].map((n) => +n.getAttribute("y")));
    for (const t of svg.querySelectorAll("text[data-x]")) {
      if (+t.dataset.y <= storeY || +t.dataset.x > x + 0.5) continue;
      if (!names.some((n) => t.textContent.startsWith(n + " (token"))) continue;
      out.All.push(t.textContent);
      const r = t.getBoundingClientRect();
      const whole = getComputedStyle(t).visibility !== "hidden" && r.left >= left - 0.5 && r.right <= right + 0.5 &&
        r.top >= bar - 0.5 && r.bottom <= innerHeight + 0.5;
      if (!whole) out.Missing.push(t.textContent + " at x " + Math.round(r.left) + ".." + Math.round(r.right) +
        ", view " + Math.round(left) + ".." + Math.round(right));
    }
  }
  return out;
})`

// TestBrowserPhoneTourShowsNamedWrites: on a 400 x 860 phone, at every
// step of every preset's tour, the labels of the fates of the writes the
// step names (A1, B1, ...), in both figures, show whole at once: the
// summary steps show A1's and B1's side by side.
func TestBrowserPhoneTourShowsNamedWrites(t *testing.T) {
	tab := openPage(t, 400, 860, "")
	def, err := playground.Run("", 0)
	if err != nil {
		t.Fatal(err)
	}
	name := regexp.MustCompile(`\b[A-Z]\d+\b`)
	checked := 0
	for i, p := range def.Presets {
		q, _ := clickPreset(t, tab, i)
		tourShown(t, tab, q, func(tour []playground.Step, j int) {
			names := name.FindAllString(tour[j].Text, -1)
			if len(names) == 0 {
				return
			}
			js, _ := json.Marshal(names)
			s := eval[struct{ All, Missing []string }](t, tab, fmt.Sprintf("%s(%f, %s)", namedFatesJS, tour[j].X, js))
			checked += len(s.All)
			for _, m := range s.Missing {
				t.Errorf("%s, step %d (names %v): %q is not shown whole with the others", p.Title, j+1, names, m)
			}
		})
	}
	if checked < 20 {
		t.Fatalf("only %d labels of named writes checked", checked)
	}
	t.Logf("%d labels of named writes checked", checked)
}
