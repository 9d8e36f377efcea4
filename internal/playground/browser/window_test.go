package browser

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/fencekit/fencekit/internal/playground"
)

// windowState is what a phone shows of both figures at a tour step: each
// figure's sideways scroll, its storage lane's short name, and the
// storage labels (a write's fate) that its view shows whole.
type windowState struct {
	Scroll []float64
	Names  []string
	Fates  [][]string
}

const windowStateJS = `(() => {
  const figs = [...document.querySelectorAll(".run .timeline")];
  return {
    Scroll: figs.map((f) => f.scrollLeft),
    Names: figs.map((f) => [...f.querySelectorAll("svg text.lane-name")].pop().textContent),
    Fates: figs.map((f) => {
      const r = f.getBoundingClientRect();
      const strip = f.querySelector("svg rect.name-strip");
      const left = strip && getComputedStyle(strip).visibility !== "hidden" ? strip.getBoundingClientRect().right : r.left;
      return [...f.querySelectorAll("svg text[data-x]")].filter((t) => /token \d+\)|claims|write A1/.test(t.textContent) &&
        getComputedStyle(t).visibility !== "hidden").filter((t) => {
        const b = t.getBoundingClientRect();
        return b.left >= left - 0.5 && b.right <= r.left + f.clientWidth + 0.5;
      }).map((t) => t.textContent);
    }),
  };
})()`

// TestBrowserPhoneTourOneWindow: on a 400 x 860 phone, at every step of
// the tour both figures are scrolled to one position, so that an instant
// sits at one place in both; the fenced storage keeps its rule in its
// short name ("(claim)"); and from the step that tells the outcome on,
// each figure shows whole A's late write and its fate, and the fenced one
// B's read that claimed 34 before it (but at the last steps that name
// earlier moments): the phone's figures are drawn on
// the most compressed time axis that keeps labels apart.
func TestBrowserPhoneTourOneWindow(t *testing.T) {
	tab, steps := startTour(t, 400, 860, "scenario=kleppmann")
	eachStep(t, tab, steps, func(i int, _ tourState) {
		s := eval[windowState](t, tab, windowStateJS)
		if len(s.Scroll) != 2 || s.Scroll[0] != s.Scroll[1] {
			t.Errorf("step %d: the figures are scrolled to %v, want one position", i+1, s.Scroll)
		}
		if len(s.Names) == 2 && !strings.Contains(s.Names[1], "(claim)") {
			t.Errorf("step %d: the fenced storage is named %q, want its rule, (claim)", i+1, s.Names[1])
		}
		if !steps[i].Outcome || len(steps[i].Moments) > 0 {
			return // a last step that names earlier moments shows them (TestBrowserPhoneTourMomentsInView)
		}
		for f, fates := range s.Fates {
			for _, want := range []string{"write A1, token 33", "A1 (token 33)"} {
				if !strings.Contains(strings.Join(fates, "|"), want) {
					t.Errorf("step %d (outcome), figure %d: %q is not shown whole; the view shows %q", i+1, f, want, fates)
				}
			}
		}
		// The rule's evidence, in one view: B's read claimed 34 before A's
		// write came.
		if len(s.Fates) == 2 && !strings.Contains(strings.Join(s.Fates[1], "|"), "read claims 34") {
			t.Errorf("step %d (outcome): the fenced run's \"read claims 34\" is not shown whole with A1's refusal; the view shows %q", i+1, s.Fates[1])
		}
	})
}

// TestBrowserTourLineUnderLabels: at 1280 x 800, at every step, the
// tour's time line is drawn before (under) every label it runs through,
// and each such label has a halo that keeps it readable over the line.
func TestBrowserTourLineUnderLabels(t *testing.T) {
	tab, steps := startTour(t, 1280, 800, "scenario=kleppmann")
	eachStep(t, tab, steps, func(i int, _ tourState) {
		over := eval[[]string](t, tab, `(() => {
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
})()`)
		for _, l := range over {
			t.Errorf("step %d: the time line runs over the label %q", i+1, l)
		}
	})
}

// momentState is what a phone's figures show of the moments a tour step
// talks about: per figure, the part of the drawing in view (right of the
// lane names' strip) and the labels of those moments (but the danger's
// banner), each with its event's x and whether it shows whole there.
type momentState struct {
	From, To []float64
	Labels   [][]momentLabel
}

type momentLabel struct {
	Text   string
	At     float64
	X0, X1 float64
	Whole  bool
}

const momentStateJS = `((moments) => {
  const out = {From: [], To: [], Labels: []};
  for (const fig of document.querySelectorAll(".run .timeline")) {
    const svg = fig.querySelector("svg");
    const strip = svg.querySelector("rect.name-strip");
    const left = fig.scrollLeft + (strip && getComputedStyle(strip).visibility !== "hidden" ? +strip.getAttribute("width") : 0);
    const right = fig.scrollLeft + fig.clientWidth;
    out.From.push(left);
    out.To.push(right);
    out.Labels.push([...svg.querySelectorAll("text[data-x]:not(.danger)")].filter((t) =>
      moments.some((m) => Math.abs(+t.dataset.x - m) <= 0.5)).map((t) => {
      const b = t.getBBox();
      return {Text: t.textContent, At: +t.dataset.x, X0: b.x, X1: b.x + b.width,
        Whole: getComputedStyle(t).visibility !== "hidden" && b.x >= left - 0.5 && b.x + b.width <= right + 0.5};
    }));
  }
  return out;
})`

// TestBrowserPhoneTourMomentsInView: on a 400 x 860 phone, at every step
// of every preset's tour, the moments the step talks about (its own, or
// for the last steps the earlier moments they name: B's read and write,
// A's pause and its lease's expiry) lie inside the part of both figures
// in view, as many as fit there (the latest first); at the last steps
// the labels of those moments ("33 expired", "read claims 34") show
// whole where side by side they fit the view.
func TestBrowserPhoneTourMomentsInView(t *testing.T) {
	presetTours(t, 400, 860, func(tab context.Context, p playground.Preset, tour []playground.Step, j int) {
		moments := tour[j].Moments
		if len(moments) == 0 {
			moments = []float64{tour[j].X}
		}
		js, _ := json.Marshal(moments)
		s := eval[momentState](t, tab, fmt.Sprintf("%s(%s)", momentStateJS, js))
		for f := range s.From {
			// The latest moments first, as many as fit the view.
			sorted := slices.Clone(moments)
			slices.Sort(sorted)
			slices.Reverse(sorted)
			var want []float64
			for _, m := range sorted {
				if len(want) == 0 || want[0]-m <= s.To[f]-s.From[f]-20 {
					want = append(want, m)
				}
			}
			for _, m := range want {
				if m < s.From[f]-0.5 || m > s.To[f]+0.5 {
					t.Errorf("%s, step %d, figure %d: the step's moment at x %.0f is outside the view, x %.0f..%.0f",
						p.Title, j+1, f, m, s.From[f], s.To[f])
				}
			}
			if len(tour[j].Moments) == 0 {
				continue
			}
			// Their labels whole, if side by side they fit the view.
			var labels []momentLabel
			lo, hi := want[0], want[0]
			for _, l := range s.Labels[f] {
				if slices.ContainsFunc(want, func(m float64) bool { return m > l.At-0.5 && m < l.At+0.5 }) {
					labels = append(labels, l)
					lo, hi = min(lo, l.X0), max(hi, l.X1)
				}
			}
			if hi-lo > s.To[f]-s.From[f] {
				continue
			}
			for _, l := range labels {
				if !l.Whole {
					t.Errorf("%s, step %d, figure %d: the label %q of a moment the step talks about does not show whole",
						p.Title, j+1, f, l.Text)
				}
			}
		}
	})
}
