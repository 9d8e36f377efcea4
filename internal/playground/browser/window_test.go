package browser

import (
	"context"
	"encoding/json"
	"fmt"
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
// talks about, on screen: per figure, the part of the drawing in view
// (right of the lane names' strip), where each moment lies, and the
// labels the step marks at those moments (its events' up to 6 px before
// each, but the danger's banner), each with whether it shows whole there.
type momentState struct {
	From, To []float64
	Moments  [][]float64
	Labels   [][]momentLabel
}

type momentLabel struct {
	Text   string
	X0, X1 float64
	Whole  bool
}

const momentStateJS = `((moments) => {
  const out = {From: [], To: [], Moments: [], Labels: []};
  for (const fig of document.querySelectorAll(".run .timeline")) {
    const svg = fig.querySelector("svg");
    const f = fig.getBoundingClientRect(), s = svg.getBoundingClientRect();
    const k = s.width / +svg.getAttribute("width"); // a step may scale the figure down
    const strip = svg.querySelector("rect.name-strip");
    const left = strip && getComputedStyle(strip).visibility !== "hidden" ? strip.getBoundingClientRect().right : f.left + fig.clientLeft;
    const right = f.left + fig.clientLeft + fig.clientWidth;
    out.From.push(left);
    out.To.push(right);
    out.Moments.push(moments.map((m) => s.left + m * k));
    out.Labels.push([...svg.querySelectorAll("text[data-x]:not(.danger)")].filter((t) =>
      moments.some((m) => +t.dataset.x <= m + 0.5 && +t.dataset.x >= m - 6)).map((t) => {
      const b = t.getBoundingClientRect();
      return {Text: t.textContent, X0: b.left, X1: b.right,
        Whole: getComputedStyle(t).visibility !== "hidden" && b.left >= left - 0.5 && b.right <= right + 0.5};
    }));
  }
  return out;
})`

// TestBrowserPhoneTourMomentsInView: on a 400 x 860 phone, at every step
// of every preset's tour, the moments the step talks about (its own, or
// for the summary steps every earlier moment they mark: B's read and
// write, A's pause and its lease's expiry) all lie inside the part of
// both figures in view, and at the summary steps every label they mark
// at those moments ("33 expired", "read claims 34") shows whole there:
// where they do not fit side by side at the figure's own size, the step
// scales the figures down.
func TestBrowserPhoneTourMomentsInView(t *testing.T) {
	presetTours(t, 400, 860, func(tab context.Context, p playground.Preset, tour []playground.Step, j int) {
		moments := tour[j].Moments
		if len(moments) == 0 {
			moments = []float64{tour[j].X}
		}
		js, _ := json.Marshal(moments)
		s := eval[momentState](t, tab, fmt.Sprintf("%s(%s)", momentStateJS, js))
		for f := range s.From {
			for i, x := range s.Moments[f] {
				if x < s.From[f]-0.5 || x > s.To[f]+0.5 {
					t.Errorf("%s, step %d, figure %d: the step's moment at x %.0f (on screen %.0f) is outside the view, %.0f..%.0f",
						p.Title, j+1, f+1, moments[i], x, s.From[f], s.To[f])
				}
			}
			if len(tour[j].Moments) == 0 {
				continue
			}
			for _, l := range s.Labels[f] {
				if !l.Whole {
					t.Errorf("%s, step %d, figure %d: the label %q of a moment the step marks does not show whole: it spans %.0f..%.0f, the view %.0f..%.0f",
						p.Title, j+1, f+1, l.Text, l.X0, l.X1, s.From[f], s.To[f])
				}
			}
		}
	})
}
