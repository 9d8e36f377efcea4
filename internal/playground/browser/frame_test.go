package browser

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"testing"

	"github.com/fencekit/fencekit/internal/playground"
)

// frameState is where the figures' frames (each figure's visible box,
// its outline, time axis included) and their headings are on screen,
// the bottom of the tour's bar, and the box of its Next button.
type frameState struct {
	Frames [][2]float64 // per figure: top and bottom on screen
	Titles [][2]float64 // per figure: its heading's top and bottom
	Bar    float64
	Screen float64
	Next   [4]float64 // left, top, right, bottom
	Scale  float64    // the first figure's: screen pixels per unit of its own
}

const frameStateJS = `(() => {
  const ys = (el) => {
    const r = el.getBoundingClientRect();
    return [r.top, r.bottom];
  };
  const n = document.getElementById("tour-next").getBoundingClientRect();
  return {
    Frames: [...document.querySelectorAll(".run .timeline")].map(ys),
    Titles: [...document.querySelectorAll(".run > header h2")].map(ys),
    Bar: document.getElementById("sticky").getBoundingClientRect().bottom,
    Screen: innerHeight,
    Next: [n.left, n.top, n.right, n.bottom],
    Scale: (() => { const svg = document.querySelector(".run .timeline svg"); return svg.getBoundingClientRect().width / +svg.getAttribute("width"); })(),
  };
})()`

// TestBrowserTourFiguresWhole: at 1280 x 800, at every step of every
// preset's tour, both figures' frames and headings are wholly on screen,
// below the tour's bar and above the screen's bottom, not cut by either.
func TestBrowserTourFiguresWhole(t *testing.T) {
	figuresWhole(t, 1280, 800)
}

// TestBrowserPhoneTourFiguresWhole: on a 400 x 860 phone too, at every
// step of every preset's tour, each figure's heading ("Fencing off") and
// frame, time axis included, are wholly on screen below the tour's bar:
// the bar covers no heading, and no axis runs off the screen's bottom.
func TestBrowserPhoneTourFiguresWhole(t *testing.T) {
	figuresWhole(t, 400, 860)
}

// figuresWhole fails t at every step of every preset's tour on a w x h
// screen where a figure's heading or frame is not wholly between the
// tour's bar and the screen's bottom.
func figuresWhole(t *testing.T, w, h int) {
	steps, least := 0, 1.0
	presetTours(t, w, h, func(tab context.Context, p playground.Preset, tour []playground.Step, j int) {
		steps++
		s := eval[frameState](t, tab, frameStateJS)
		least = min(least, s.Scale)
		if len(s.Frames) != 2 || len(s.Titles) != 2 {
			t.Fatalf("%s: %d figures, %d headings", p.Title, len(s.Frames), len(s.Titles))
		}
		for f := range s.Frames {
			for _, part := range []struct {
				what string
				r    [2]float64
			}{{"heading", s.Titles[f]}, {"frame", s.Frames[f]}} {
				if part.r[0] < s.Bar-0.5 || part.r[1] > s.Screen+0.5 {
					t.Errorf("%s, step %d: figure %d's %s spans y %.0f..%.0f, not wholly between the tour's bar (%.0f) and the screen's bottom (%.0f)",
						p.Title, j+1, f+1, part.what, part.r[0], part.r[1], s.Bar, s.Screen)
				}
			}
		}
	})
	t.Logf("%d tour steps checked; the figures drawn at %.2f of their size or more", steps, least)
}

// TestBrowserTourNextHoldsStill: at 1280 x 800 and on a 400 x 860 phone,
// the tour's Next button has one box on screen at every step of every
// preset's tour (Finish at the last), however long the step's text: two
// taps in one place take two steps.
func TestBrowserTourNextHoldsStill(t *testing.T) {
	for _, size := range [][2]int{{1280, 800}, {400, 860}} {
		t.Run(fmt.Sprintf("%dpx", size[0]), func(t *testing.T) {
			var first [4]float64
			steps := 0
			presetTours(t, size[0], size[1], func(tab context.Context, p playground.Preset, tour []playground.Step, j int) {
				s := eval[frameState](t, tab, frameStateJS)
				if steps == 0 {
					first = s.Next
				}
				steps++
				if s.Next != first {
					t.Errorf("%s, step %d: Next spans x %.1f..%.1f, y %.1f..%.1f; at the first step x %.1f..%.1f, y %.1f..%.1f",
						p.Title, j+1, s.Next[0], s.Next[2], s.Next[1], s.Next[3], first[0], first[2], first[1], first[3])
				}
			})
			t.Logf("%d tour steps checked", steps)
		})
	}
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
