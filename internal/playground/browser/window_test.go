package browser

import (
	"strings"
	"testing"
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
// B's read that claimed 34 before it: the phone's figures are drawn on
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
		if !steps[i].Outcome {
			return
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
