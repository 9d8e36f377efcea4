package sweep

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"
)

// The plot: one panel per storage mode, two side by side, each with the
// rate of every outcome (y, 0 to 100% of runs on a square-root scale, so
// that a few percent still shows) against pause/TTL (x).
const (
	panelW     = 420
	panelH     = 260
	plotLeft   = 58
	plotTop    = 108
	panelGap   = 56
	plotBottom = 58
	rowGap     = 96 // from one row of panels' x axis to the next row's top
	plotFont   = "DejaVu Sans, Helvetica, Arial, sans-serif"
)

// series is one outcome line.
type series struct {
	name  string
	color string
	dash  string
	count func(Row) int
}

var outcomes = []series{
	{"safe (nothing lost, tokens in order)", "#1b7a1b", "", func(r Row) int { return r.Safe }},
	{"late write accepted (expired lease)", "#c77700", "6 4", func(r Row) int { return r.Late }},
	{"lost update", "#b00020", "", func(r Row) int { return r.Lost }},
	{"tokens went backwards", "#6a3fb5", "2 3", func(r Row) int { return r.Backwards }},
}

// storageTitle names a storage mode on the plot.
func storageTitle(s string) string {
	switch s {
	case "off":
		return "Fencing off: leases alone"
	case "writes":
		return "Write check only (Kleppmann's rule)"
	case "claim":
		return "Write check + claim at read (fencekit)"
	case "check-then-write":
		return "Check, then write: not atomic"
	}
	return "Storage " + s
}

// WriteSVG draws the rows of the first heartbeat ratio and drift present
// as a self-contained SVG: one panel per storage mode, two per row, the rate of each
// outcome against pause/TTL, with the pause lengths that reach past a
// heartbeat and past the whole TTL marked. Rows of other heartbeat ratios
// and drifts are left out (the subtitle names the ones drawn).
func WriteSVG(w io.Writer, rows []Row) error {
	if len(rows) == 0 {
		return fmt.Errorf("sweep: no rows to plot")
	}
	hb, drift := rows[0].HeartbeatRatio, rows[0].Drift
	var storages []string
	byStorage := map[string][]Row{}
	xMax := 0.0
	runs := rows[0].Runs
	for _, r := range rows {
		if r.HeartbeatRatio != hb || r.Drift != drift {
			continue
		}
		if _, ok := byStorage[r.Storage]; !ok {
			storages = append(storages, r.Storage)
		}
		byStorage[r.Storage] = append(byStorage[r.Storage], r)
		xMax = math.Max(xMax, r.PauseRatio)
		runs = min(runs, r.Runs)
	}
	xMax = math.Max(math.Ceil(xMax*2)/2, 0.5)

	cols := min(len(storages), 2)
	nrows := (len(storages) + 1) / 2
	width := plotLeft + cols*(panelW+panelGap) - panelGap + 24
	height := plotTop + nrows*panelH + (nrows-1)*rowGap + plotBottom
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="%s" font-size="12" role="img">`+"\n",
		width, height, width, height, plotFont)
	b.WriteString("<title>Violation map: outcome rates against pause/TTL, by storage mode</title>\n")
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#fff"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="%d" y="24" font-size="16" font-weight="bold" fill="#1d2330">When do leases alone lose data? Share of random schedules, by pause length (square-root scale)</text>`+"\n", plotLeft)
	hbText := "no heartbeat"
	if hb > 0 {
		hbText = fmt.Sprintf("heartbeat every %s TTL", ratioText(hb))
	}
	fmt.Fprintf(&b, `<text x="%d" y="42" fill="#5b6475">%d schedules per point (3 clients, each pausing once), %s, clock drift up to ±%g%%. fencesim sweep</text>`+"\n",
		plotLeft, runs, esc(hbText), drift*100)
	legend(&b, plotLeft, 66)
	for i, s := range storages {
		x0 := float64(plotLeft + i%2*(panelW+panelGap))
		y0 := float64(plotTop + i/2*(panelH+rowGap))
		panel(&b, x0, y0, storageTitle(s), byStorage[s], xMax, hb)
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func legend(b *strings.Builder, x, y int) {
	for _, s := range outcomes {
		fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2.5" stroke-dasharray="%s"/>`,
			x, y-4, x+26, y-4, s.color, s.dash)
		fmt.Fprintf(b, `<text x="%d" y="%d" fill="#1d2330">%s</text>`+"\n", x+32, y, esc(s.name))
		x += 52 + int(float64(len([]rune(s.name)))*6.4)
	}
}

// panel draws one storage mode's lines in the box whose top left corner is (x0, y0).
func panel(b *strings.Builder, x0, y0 float64, title string, rows []Row, xMax, hb float64) {
	px := func(v float64) float64 { return x0 + v/xMax*panelW }
	py := func(rate float64) float64 { return y0 + (1-math.Sqrt(rate))*panelH } // rare outcomes stay visible
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-size="13" font-weight="bold" fill="#1d2330">%s</text>`+"\n", x0, y0-10, esc(title))
	// The plot area, for a page that marks a run on it (the playground's "this run").
	fmt.Fprintf(b, `<rect class="plot" x="%.1f" y="%.1f" width="%d" height="%d" fill="none" data-xmax="%g"/>`+"\n", x0, y0, panelW, panelH, xMax)
	// grid and y axis
	for _, pct := range []int{0, 1, 5, 10, 25, 50, 75, 100} {
		y := py(float64(pct) / 100)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e3e6eb"/>`, x0, y, x0+panelW, y)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="end" fill="#5b6475">%d%%</text>`+"\n", x0-6, y+4, pct)
	}
	// x axis ticks every 0.25 TTL, labelled every 0.5
	for v := 0.0; v <= xMax+1e-9; v += 0.25 {
		x := px(v)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#9aa1ad"/>`, x, y0+panelH, x, y0+panelH+4)
		if math.Mod(v+1e-9, 0.5) < 1e-6 {
			fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle" fill="#5b6475">%g</text>`+"\n", x, y0+panelH+18, v)
		}
	}
	fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#9aa1ad"/>`+"\n", x0, y0+panelH, x0+panelW, y0+panelH)
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle" fill="#1d2330">pause / TTL</text>`+"\n", x0+panelW/2, y0+panelH+38)
	// markers: the pause that outlasts the lease after the last renewal, and the TTL
	mark := func(v float64, text, anchor string) {
		if v <= 0 || v > xMax {
			return
		}
		x, dx := px(v), 4.0
		if anchor == "end" {
			dx = -4
		}
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#9aa1ad" stroke-dasharray="3 3"/>`, x, y0, x, y0+panelH)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-size="11" text-anchor="%s" fill="#5b6475">%s</text>`+"\n", x+dx, py(0.3), anchor, esc(text))
	}
	mark(1, "pause = TTL", "start")
	if hb > 0 && hb < 1 {
		mark(1-hb, "TTL − heartbeat", "end")
	}
	var zero []string
	for _, s := range outcomes[2:] {
		all := true
		for _, r := range rows {
			all = all && s.count(r) == 0
		}
		if all {
			zero = append(zero, s.name)
		}
	}
	if len(zero) > 0 {
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-size="11" text-anchor="end" fill="#1b7a1b">%s: 0 at every point</text>`+"\n",
			x0+panelW-6, py(0.45), esc(strings.Join(zero, " and ")))
	}
	for _, s := range outcomes {
		var pts []string
		for _, r := range rows {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(r.PauseRatio), py(r.Rate(s.count(r)))))
		}
		fmt.Fprintf(b, `<polyline fill="none" stroke="%s" stroke-width="2.5" stroke-linejoin="round" stroke-dasharray="%s" points="%s"><title>%s</title></polyline>`+"\n",
			s.color, s.dash, strings.Join(pts, " "), esc(s.name))
	}
}

// ratioText writes a ratio as a short fraction where one fits: "1/3".
func ratioText(v float64) string {
	for den := 2; den <= 10; den++ {
		num := math.Round(v * float64(den))
		if num >= 1 && math.Abs(num/float64(den)-v) < 1e-9 {
			return fmt.Sprintf("%g/%d", num, den)
		}
	}
	return fmt.Sprintf("%g ×", v)
}

func esc(s string) string { return html.EscapeString(s) }
