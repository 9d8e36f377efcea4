package playground

import (
	"fmt"
	"html"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/fencekit/fencekit/sim"
)

// TestLabelsClearOfLines: in every preset's figures, at a phone's width,
// a desktop column's and the default, no label is crossed by a client's
// belief line (the thick line along its lane, 5 px wide) nor overlaps
// another label: "paused 15s" is not drawn across A's belief.
func TestLabelsClearOfLines(t *testing.T) {
	belief := regexp.MustCompile(`<line x1="([-\d.]+)" y1="([-\d.]+)" x2="([-\d.]+)" y2="[-\d.]+" stroke="[^"]+" stroke-width="5"`)
	checked := 0
	eachRun(t, []int{400, 1190, 0}, func(p Preset, width int, o Outcome) {
		boxes := labelBoxes(t, o.SVG)
		var lines []box
		for _, m := range belief.FindAllStringSubmatch(o.SVG, -1) {
			if m[1] == m[3] {
				continue
			}
			y := num(t, m[2])
			lines = append(lines, box{"belief", num(t, m[1]), y - 2.5, num(t, m[3]), y + 2.5})
		}
		// The legend's sample line is one of them: it must find some.
		if len(lines) < 2 || len(boxes) < 5 {
			t.Fatalf("preset %q: %d belief lines, %d labels parsed", p.Title, len(lines), len(boxes))
		}
		for i, a := range boxes {
			checked++
			for _, l := range lines {
				if overlap(a, l) {
					t.Errorf("preset %q at width %d, %s: label %q (x %.0f..%.0f, y %.0f..%.0f) is crossed by a belief line at y %.0f",
						p.Title, width, o.Heading, a.text, a.x0, a.x1, a.y0, a.y1, l.y0+2.5)
				}
			}
			for _, b := range boxes[i+1:] {
				if overlap(a, b) {
					t.Errorf("preset %q at width %d, %s: labels %q and %q overlap", p.Title, width, o.Heading, a.text, b.text)
				}
			}
		}
	})
	t.Logf("%d labels checked", checked)
}

// eachRun calls f with each run of every preset drawn at each width.
func eachRun(t *testing.T, widths []int, f func(p Preset, width int, o Outcome)) {
	t.Helper()
	for _, width := range widths {
		for _, p := range presets {
			resp, err := Run(p.Query, width)
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range resp.Runs {
				f(p, width, o)
			}
		}
	}
}

// box is a label's box in a figure, its size estimated as the renderer
// does: 7 px a character of a 12px label.
type box struct {
	text           string
	x0, y0, x1, y1 float64
}

func overlap(a, b box) bool { return a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1 }

func num(t *testing.T, s string) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

var (
	labelRE = regexp.MustCompile(`<text x="([-\d.]+)" y="([-\d.]+)" fill="[^"]+" text-anchor="(\w+)" font-size="12"[^>]*>(.*?)</text>`)
	tagRE   = regexp.MustCompile(`<[^>]*>`)
)

// labelBoxes are the boxes of svg's 12px labels (not the lane names).
func labelBoxes(t *testing.T, svg string) []box {
	var boxes []box
	for _, m := range labelRE.FindAllStringSubmatch(svg, -1) {
		y, text := num(t, m[2]), html.UnescapeString(tagRE.ReplaceAllString(m[4], ""))
		x0, x1 := labelSpan(num(t, m[1]), m[3], text)
		boxes = append(boxes, box{text, x0, y - 11, x1, y + 3})
	}
	return boxes
}

// labelSpan is the x extent of a 12px label of text drawn at x with
// text-anchor anchor, its width estimated as the renderer does: 7 px a
// character.
func labelSpan(x float64, anchor, text string) (x0, x1 float64) {
	w := float64(len([]rune(text))) * 7
	switch anchor {
	case "middle":
		x -= w / 2
	case "end":
		x -= w
	}
	return x, x + w
}

// TestLabelsInThePlot: in every preset's figures, at a phone's width, a
// desktop column's and the default, every label lies in the plot: right
// of the lane names' gutter (where the lanes' lines start) and above the
// time axis' line (its tick labels below it); each line of a lane's name
// ends in the gutter, 4 px before the plot (14px bold, 8.5 px a
// character); and every lease bar at least 30 px wide holds one label, a
// lease's label lying in its bar ("lease 34 (B)" beside a short bar reads
// as the next bar's).
func TestLabelsInThePlot(t *testing.T) {
	laneLine := regexp.MustCompile(`<line x1="([\d.]+)" y1="[\d.]+" x2="[\d.]+" y2="[\d.]+" stroke="#bbb"`)
	axis := regexp.MustCompile(`<line x1="[\d.]+" y1="([\d.]+)" x2="[\d.]+" y2="([\d.]+)" stroke="#444"/>`)
	laneName := regexp.MustCompile(`<text class="lane-name" x="([\d.]+)"[^>]*>(.*?)</text>`)
	leaseLabel := regexp.MustCompile(`^lease \d+ \(\w+\)$`)
	bar := regexp.MustCompile(`<rect x="([\d.]+)" y="([\d.]+)" width="([\d.]+)" height="14" rx="3"`)
	checked := 0
	eachRun(t, []int{400, 1190, 0}, func(p Preset, width int, o Outcome) {
		where := fmt.Sprintf("preset %q at width %d, %s", p.Title, width, o.Heading)
		lm := laneLine.FindStringSubmatch(o.SVG)
		var axisY float64
		for _, m := range axis.FindAllStringSubmatch(o.SVG, -1) {
			if m[1] == m[2] {
				axisY = num(t, m[1])
			}
		}
		if lm == nil || axisY == 0 {
			t.Fatalf("%s: no lane line or no axis found", where)
		}
		plotX := num(t, lm[1])
		boxes := labelBoxes(t, o.SVG)
		for _, b := range boxes {
			checked++
			if b.x0 < plotX || b.y1 > axisY {
				t.Errorf("%s: label %q (x %.0f..%.0f, y %.0f..%.0f) leaves the plot (x from %.0f, y up to the axis at %.0f)",
					where, b.text, b.x0, b.x1, b.y0, b.y1, plotX, axisY)
			}
		}
		for _, m := range laneName.FindAllStringSubmatch(o.SVG, -1) {
			for _, line := range regexp.MustCompile(`<tspan[^>]*>`).Split(strings.ReplaceAll(m[2], "</tspan>", ""), -1) {
				line = html.UnescapeString(line)
				if end := num(t, m[1]) + 8.5*float64(len([]rune(line))); end > plotX-4 {
					t.Errorf("%s: lane name %q ends at x %.0f, in the plot (from %.0f)", where, line, end, plotX)
				}
			}
		}
		var bars []box
		for _, m := range bar.FindAllStringSubmatch(o.SVG, -1) {
			x, y := num(t, m[1]), num(t, m[2])
			bars = append(bars, box{"bar", x, y, x + num(t, m[3]), y + 14})
		}
		if len(bars) == 0 {
			t.Fatalf("%s: %d lease bars", where, len(bars))
		}
		in := func(b, bar box) bool { return b.x0 >= bar.x0 && b.x1 <= bar.x1 && b.y1-3 > bar.y0 && b.y1-3 < bar.y1 }
		for _, br := range bars {
			n := 0
			for _, b := range boxes {
				if in(b, br) {
					n++
				}
			}
			if br.x1-br.x0 >= 30 && n != 1 {
				t.Errorf("%s: the lease bar at x %.0f..%.0f holds %d labels, want 1", where, br.x0, br.x1, n)
			}
		}
		for _, b := range boxes {
			if leaseLabel.MatchString(b.text) && !slices.ContainsFunc(bars, func(br box) bool { return in(b, br) }) {
				t.Errorf("%s: %q (x %.0f..%.0f) is drawn outside its lease bar", where, b.text, b.x0, b.x1)
			}
		}
	})
	t.Logf("%d labels checked", checked)
}

// TestAtomicStorageDrawsNoCheck: a storage that checks a write in the
// same step as it applies it draws no separate token check ("check A1,
// token 33", "check B1 (token 34): ok"), as fencesim's text leaves it
// out; the check-then-write storage draws them.
func TestAtomicStorageDrawsNoCheck(t *testing.T) {
	check := regexp.MustCompile(`>check [A-Z]\d+[ ,]`)
	twoStep := 0
	eachRun(t, []int{400, 0}, func(p Preset, width int, o Outcome) {
		n := len(check.FindAllString(o.SVG, -1))
		if o.Storage == sim.StorageCheckThenWrite.String() {
			twoStep += n
			return
		}
		if n > 0 {
			t.Errorf("preset %q at width %d, %s: the %s storage draws %d token checks apart from its writes",
				p.Title, width, o.Heading, o.Storage, n)
		}
	})
	if twoStep == 0 {
		t.Error("no check-then-write figure draws a token check: the test's pattern is stale")
	}
}

// TestLegendNamesEveryMark: every kind of mark a preset's figure draws
// that no label of its own names (a client's belief, a lease bar, the
// danger band, the storage's token line, the dashed ring round a lost
// write) has an entry in the figure's legend, drawn with the same shape;
// the page copies that legend for a desktop's and a phone's tour.
func TestLegendNamesEveryMark(t *testing.T) {
	kinds := []struct{ name, drawn, legend string }{
		{"client's belief", `<line x1="[^"]*" y1="[^"]*" x2="[^"]*" y2="[^"]*" stroke="[^"]*" stroke-width="5"`, `<line class="legend"[^>]* stroke-width="5"`},
		{"lease bar", `<rect x="[^"]*" y="[^"]*" width="[^"]*" height="14" rx="3"`, `<rect class="legend"[^>]* rx="3"`},
		{"danger band", `<rect class="danger"`, `<rect class="legend"[^>]* fill="#b00020"`},
		{"storage's token", `<polyline points=`, `<polyline class="legend"`},
		{"lost write's ring", `<g class="lost"[^>]*><circle [^>]*stroke-dasharray`, `<circle class="legend"[^>]*stroke-dasharray`},
	}
	seen := map[string]bool{}
	for _, p := range presets {
		resp, err := Run(p.Query, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range resp.Runs {
			for _, k := range kinds {
				if !regexp.MustCompile(k.drawn).MatchString(o.SVG) {
					continue
				}
				seen[k.name] = true
				if !regexp.MustCompile(k.legend).MatchString(o.SVG) {
					t.Errorf("preset %q, %s: the figure draws a %s but its legend has no entry for it", p.Title, o.Heading, k.name)
				}
			}
		}
	}
	for _, k := range kinds {
		if !seen[k.name] {
			t.Errorf("no preset's figure draws a %s: the test's pattern %q is stale", k.name, k.drawn)
		}
	}
}
