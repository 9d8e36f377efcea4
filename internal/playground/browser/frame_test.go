package browser

import (
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
