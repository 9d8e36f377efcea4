package browser

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/fencekit/fencekit/internal/playground"
)

// marks is what a tour step highlights in each figure: the x of each
// moment line and the text of each highlighted label ("pause" for a
// pause's bar).
type marks struct {
	Lines [][]float64
	Named [][]string
}

const marksJS = `(() => {
  const svgs = [...document.querySelectorAll(".run .timeline svg")];
  return {
    Lines: svgs.map((svg) => [...svg.querySelectorAll("line.moment")].map((l) => +l.getAttribute("x1"))),
    Named: svgs.map((svg) => [...svg.querySelectorAll(".named")].filter((t) => getComputedStyle(t).visibility !== "hidden" &&
      getComputedStyle(t).stroke !== getComputedStyle(svg.querySelector("text:not(.named):not(.lane-name)")).stroke).map((t) => t.tagName === "rect" ? "pause" : t.textContent)),
  };
})()`

// TestBrowserTourMarksEachSummary: at 1280 x 800, in every preset's tour,
// each summary step draws a line at each moment it names and highlights
// those moments' labels (their halo unlike other labels') or pause, in
// both figures or, for a step about one (Fig), in that one only, and
// never the lease service's "renewal of 33 refused" (a step about the
// storage's refusal once lit it, as if the lease service refused the
// write); no other step marks anything;
// and no two consecutive summary steps mark the same, so the page shows
// what each sentence is about (they all once showed one figure).
func TestBrowserTourMarksEachSummary(t *testing.T) {
	var prev string
	presetTours(t, 1280, 800, func(tab context.Context, p playground.Preset, tour []playground.Step, j int) {
		s := tour[j]
		m := eval[marks](t, tab, marksJS)
		where := fmt.Sprintf("%s, step %d (%.40q)", p.Title, j+1, s.Text)
		for f := range m.Lines {
			got := slices.Sorted(slices.Values(m.Lines[f]))
			want := slices.Sorted(slices.Values(s.Moments))
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%s: figure %d marks moments at x %v, want %v", where, f+1, got, want)
			}
		}
		if len(s.Moments) > 0 && len(m.Named[0])+len(m.Named[1]) == 0 {
			t.Errorf("%s: names moments %v but highlights nothing", where, s.Moments)
		}
		for f, names := range m.Named {
			for _, n := range names {
				if strings.HasPrefix(n, "renewal of") {
					t.Errorf("%s: highlights the lease service's %q in figure %d", where, n, f+1)
				}
			}
			if s.Fig != 0 && s.Fig != f+1 && len(names) > 0 {
				t.Errorf("%s: is about figure %d but highlights %q in figure %d", where, s.Fig, names, f+1)
			}
		}
		if s.At != "summary" {
			return
		}
		sig := fmt.Sprint(m)
		if strings.HasPrefix(tour[j-1].Text, "Summary, ") && sig == prev {
			t.Errorf("%s marks the same as the step before: %s", where, sig)
		}
		prev = sig
		if p.Query == "scenario=kleppmann" && strings.HasPrefix(s.Text, "Summary, the claim.") {
			shot(t, tab, "tour-summary-claim")
		}
	})
}

// presetTours opens the page at w x h and, for each preset, presses it
// and takes its tour, calling f at each step with the tour as Run gives
// it.
func presetTours(t *testing.T, w, h int, f func(tab context.Context, p playground.Preset, tour []playground.Step, j int)) {
	t.Helper()
	tab := openPage(t, w, h, "")
	def, err := playground.Run("", 0)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range def.Presets {
		q, _ := clickPreset(t, tab, i)
		tourShown(t, tab, q, func(tour []playground.Step, j int) { f(tab, p, tour, j) })
	}
}
