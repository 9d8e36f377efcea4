package playground

import (
	"html"
	"regexp"
	"strconv"
	"testing"
)

// TestLabelsClearOfLines: in every preset's figures, at a phone's width,
// a desktop column's and the default, no label is crossed by a client's
// belief line (the thick line along its lane, 5 px wide) nor overlaps
// another label: "paused 15s" is not drawn across A's belief.
func TestLabelsClearOfLines(t *testing.T) {
	label := regexp.MustCompile(`<text x="([-\d.]+)" y="([-\d.]+)" fill="[^"]+" text-anchor="(\w+)" font-size="12"[^>]*>(.*?)</text>`)
	belief := regexp.MustCompile(`<line x1="([-\d.]+)" y1="([-\d.]+)" x2="([-\d.]+)" y2="[-\d.]+" stroke="[^"]+" stroke-width="5"`)
	tag := regexp.MustCompile(`<[^>]*>`)
	num := func(s string) float64 {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	type box struct {
		text           string
		x0, y0, x1, y1 float64
	}
	checked := 0
	for _, width := range []int{400, 1190, 0} {
		for _, p := range presets {
			resp, err := Run(p.Query, width)
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range resp.Runs {
				var boxes []box
				for _, m := range label.FindAllStringSubmatch(o.SVG, -1) {
					x, y := num(m[1]), num(m[2])
					text := html.UnescapeString(tag.ReplaceAllString(m[4], ""))
					w := float64(len([]rune(text))) * 7
					switch m[3] {
					case "middle":
						x -= w / 2
					case "end":
						x -= w
					}
					boxes = append(boxes, box{text, x, y - 11, x + w, y + 3})
				}
				var lines []box
				for _, m := range belief.FindAllStringSubmatch(o.SVG, -1) {
					if m[1] == m[3] {
						continue
					}
					y := num(m[2])
					lines = append(lines, box{"belief", num(m[1]), y - 2.5, num(m[3]), y + 2.5})
				}
				// The legend's sample line is one of them: it must find some.
				if len(lines) < 2 || len(boxes) < 5 {
					t.Fatalf("preset %q: %d belief lines, %d labels parsed", p.Title, len(lines), len(boxes))
				}
				overlap := func(a, b box) bool { return a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1 }
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
			}
		}
	}
	t.Logf("%d labels checked", checked)
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
