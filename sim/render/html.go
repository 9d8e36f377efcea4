package render

import (
	"fmt"
	"html"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/fencekit/fencekit/sim"
)

// The drawing follows Kleppmann's figure: time runs left to right; the
// first client's lane is on top, then the lease service, the other
// clients, and the storage at the bottom. Messages are arrows between
// lanes; the lease's validity is a bar on the lease lane.
const (
	svgWidth   = 1100
	svgLeft    = 140
	svgRight   = 40
	svgTop     = 85
	laneGap    = 95
	labelRowH  = 15
	charWidth  = 6.6 // average width of a 12px sans-serif character
	fontFamily = "DejaVu Sans, Helvetica, Arial, sans-serif"
)

var clientColors = []string{"#1f5fbf", "#d9730d", "#2e8b57", "#8e44ad", "#b03a2e", "#117a8b"}

func clientColor(c int) string { return clientColors[c%len(clientColors)] }

// HTML writes one self-contained HTML page (inline CSS and SVG, no
// scripts, no external assets) with title, and for each run an SVG timeline
// drawn like Kleppmann's figure followed by the run's [sim.Result.Summary]. The
// page is well-formed XML as well as HTML.
func HTML(w io.Writer, title string, runs ...*sim.Result) error {
	var b strings.Builder
	esc := html.EscapeString
	b.WriteString("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n")
	b.WriteString("<title>" + esc(title) + "</title>\n<style>\n")
	b.WriteString("body { font-family: " + fontFamily + "; margin: 24px; color: #222; background: #fff; }\n")
	b.WriteString("h1 { font-size: 22px; } h2 { font-size: 18px; margin-top: 28px; }\n")
	b.WriteString("li { margin: 4px 0; } .bad { color: #b00020; } .good { color: #1b7a1b; }\n")
	b.WriteString("svg { border: 1px solid #ddd; background: #fcfcfc; }\n</style>\n</head>\n<body>\n")
	b.WriteString("<h1>" + esc(title) + "</h1>\n")
	if len(runs) > 0 {
		clock := "virtual seconds"
		if runs[0].Recorded {
			clock = "real seconds since the start"
		}
		fmt.Fprintf(&b, "<p>TTL %s, heartbeat %s. Time runs left to right in %s; arrows are messages. "+
			"Coloured bars on the lease lane show which token the lease service considers valid.</p>\n",
			esc(sim.FormatTime(runs[0].TTL)), esc(heartbeatText(runs[0].Heartbeat)), clock)
	}
	for i, r := range runs {
		fmt.Fprintf(&b, "<h2>%s%s</h2>\n", esc(heading(r.Storage)), origin(r))
		writeSVG(&b, r, "run"+strconv.Itoa(i))
		b.WriteString("<ul>\n")
		for _, s := range r.Summary() {
			class := ""
			switch {
			case strings.HasPrefix(s, "UNSAFE") || strings.Contains(s, "LOST") || strings.Contains(s, "expired."):
				class = " class=\"bad\""
			case strings.HasPrefix(s, "Safe") || strings.Contains(s, "REJECTED"):
				class = " class=\"good\""
			}
			b.WriteString("<li" + class + ">" + esc(s) + "</li>\n")
		}
		b.WriteString("</ul>\n")
	}
	b.WriteString("</body>\n</html>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// origin says, after a run's heading, that it was recorded on real servers.
func origin(r *sim.Result) string {
	if r.Recorded {
		return " (recorded on real servers)"
	}
	return ""
}

// SVG writes one run's timeline as a standalone SVG element drawn like
// Kleppmann's figure. id prefixes the element ids inside it, so that
// several SVGs can share a page; it must be a valid XML name, such as
// "run0". SVG uses no scripts, no external assets and no system calls, so
// it runs in a js/wasm build too.
func SVG(w io.Writer, r *sim.Result, id string) error {
	var b strings.Builder
	writeSVG(&b, r, id)
	_, err := io.WriteString(w, b.String())
	return err
}

// svgPlot holds the geometry of one run's drawing.
type svgPlot struct {
	b      *strings.Builder
	r      *sim.Result
	id     string // prefix of the element ids
	tEnd   time.Duration
	laneY  []float64 // per client
	leaseY float64
	storeY float64
	height float64
	// labels placed so far per lane key, for simple overlap avoidance
	placed map[string][]span
}

func (p *svgPlot) x(t time.Duration) float64 {
	return svgLeft + float64(t)/float64(p.tEnd)*(svgWidth-svgLeft-svgRight)
}

func (p *svgPlot) clientY(c int) float64 { return p.laneY[c] }

// label places text near (x, y), moving it down (dir=+1) or up (dir=-1)
// by whole rows until it overlaps no earlier label of the same lane key.
func (p *svgPlot) label(lane string, x, y float64, dir int, text, color, anchor string) {
	w := float64(len([]rune(text))) * charWidth
	x0 := x
	switch anchor {
	case "middle":
		x0 = x - w/2
	case "end":
		x0 = x - w
	}
	row := p.claim(lane, x0, x0+w)
	ty := y + float64(dir*row*labelRowH)
	fmt.Fprintf(p.b, `<text x="%.1f" y="%.1f" fill="%s" text-anchor="%s" font-size="12">%s</text>`+"\n",
		x, ty, color, anchor, html.EscapeString(text))
}

type span struct {
	row    int
	x0, x1 float64
}

// claim reserves and returns the first row of lane (at most 5) where
// [x0, x1] is free.
func (p *svgPlot) claim(lane string, x0, x1 float64) int {
	spans := p.placed[lane]
	row := 0
	for ; row < 5; row++ {
		free := true
		for _, s := range spans {
			if s.row == row && x0 < s.x1+6 && x1+6 > s.x0 {
				free = false
				break
			}
		}
		if free {
			break
		}
	}
	p.placed[lane] = append(spans, span{row, x0, x1})
	return row
}

func writeSVG(b *strings.Builder, r *sim.Result, id string) {
	p := &svgPlot{b: b, r: r, id: id, placed: map[string][]span{}}
	p.tEnd = niceEnd(r.End + r.End/20 + time.Second)
	n := len(r.Clients)
	p.laneY = make([]float64, n)
	y := float64(svgTop)
	p.laneY[0] = y
	y += laneGap
	p.leaseY = y
	for c := 1; c < n; c++ {
		y += laneGap
		p.laneY[c] = y
	}
	y += laneGap
	p.storeY = y
	p.height = y + 120
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%.0f" viewBox="0 0 %d %.0f" font-family="%s" role="img">`+"\n",
		svgWidth, p.height, svgWidth, p.height, fontFamily)
	fmt.Fprintf(b, `<title>Timeline, %s%s</title>`+"\n", html.EscapeString(heading(r.Storage)), origin(r))
	b.WriteString(`<defs>`)
	for i, col := range append([]string{"#777", "#1b7a1b", "#b00020"}, clientColors...) {
		fmt.Fprintf(b, `<marker id="%s-arrow%d" viewBox="0 0 10 10" refX="9" refY="5" markerUnits="userSpaceOnUse" markerWidth="10" markerHeight="10" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="%s"/></marker>`,
			id, i, col)
	}
	b.WriteString("</defs>\n")
	p.axis()
	p.lanes()
	p.leaseBars()
	p.clientBars()
	p.messages()
	b.WriteString("</svg>\n")
}

// marker returns the id of the arrowhead for a colour index: 0 grey,
// 1 green, 2 red, 3+ client colours. Ids include the run's index so that
// the SVGs of one page do not share ids.
func (p *svgPlot) marker(i int) string { return fmt.Sprintf("%s-arrow%d", p.id, i) }

func niceEnd(d time.Duration) time.Duration {
	s := math.Ceil(d.Seconds())
	for _, step := range []float64{1, 2, 5, 10, 20, 30, 60} {
		if s/step <= 12 {
			return time.Duration(math.Ceil(s/step)*step) * time.Second
		}
	}
	return time.Duration(math.Ceil(s/120)*120) * time.Second
}

func tickStep(end time.Duration) time.Duration {
	s := end.Seconds()
	for _, step := range []float64{1, 2, 5, 10, 15, 30, 60, 120, 300} {
		if s/step <= 16 {
			return time.Duration(step) * time.Second
		}
	}
	return 600 * time.Second
}

func (p *svgPlot) axis() {
	y := p.height - 30
	fmt.Fprintf(p.b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#444"/>`+"\n", svgLeft, y, svgWidth-svgRight, y)
	step := tickStep(p.tEnd)
	for t := time.Duration(0); t <= p.tEnd; t += step {
		x := p.x(t)
		fmt.Fprintf(p.b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#444"/>`, x, y, x, y+5)
		fmt.Fprintf(p.b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%.1f" stroke="#eee"/>`, x, svgTop-25, x, y)
		fmt.Fprintf(p.b, `<text x="%.1f" y="%.1f" text-anchor="middle" font-size="11" fill="#444">%s</text>`+"\n", x, y+18, sim.FormatTime(t))
	}
}

func (p *svgPlot) lanes() {
	lane := func(y float64, name, color string) {
		fmt.Fprintf(p.b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#bbb" stroke-width="1"/>`, svgLeft, y, svgWidth-svgRight, y)
		fmt.Fprintf(p.b, `<text x="%d" y="%.1f" font-size="14" font-weight="bold" fill="%s">%s</text>`+"\n", 12, y+5, color, html.EscapeString(name))
	}
	for c, name := range p.r.Clients {
		lane(p.clientY(c), "Client "+name, clientColor(c))
	}
	lane(p.leaseY, "Lease service", "#333")
	storage := "Storage"
	if p.r.Storage.Fenced() {
		storage += " (fenced)"
	}
	lane(p.storeY, storage, "#333")
}

// leaseBars draws, on the lease lane, each token's validity as the lease
// service saw it: from the grant to its expiry or release.
func (p *svgPlot) leaseBars() {
	type bar struct {
		c        int
		tok      uint64
		from, to time.Duration
		how      string
	}
	var bars []bar
	open := -1
	for _, e := range p.r.Events {
		switch e.Kind {
		case sim.KindGranted:
			bars = append(bars, bar{c: e.Client, tok: uint64(e.Token), from: e.At, to: -1})
			open = len(bars) - 1
		case sim.KindExpired, sim.KindReleased:
			if open >= 0 && bars[open].tok == uint64(e.Token) {
				bars[open].to = e.At
				bars[open].how = e.Kind.String()
				open = -1
			}
		}
	}
	for _, br := range bars {
		to := br.to
		if to < 0 {
			to = p.r.End
		}
		x0, x1 := p.x(br.from), p.x(to)
		col := clientColor(br.c)
		fmt.Fprintf(p.b, `<rect x="%.1f" y="%.1f" width="%.1f" height="14" rx="3" fill="%s" fill-opacity="0.25" stroke="%s"/>`+"\n",
			x0, p.leaseY-7, math.Max(x1-x0, 1), col, col)
		p.label("lease-in", (x0+x1)/2, p.leaseY+4, 0, fmt.Sprintf("lease %d (%s)", br.tok, p.r.Clients[br.c]), col, "middle")
		if br.how == "expired" {
			fmt.Fprintf(p.b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#b00020" stroke-width="2"/>`, x1, p.leaseY-14, x1, p.leaseY+14)
			p.label("lease-below", x1, p.leaseY+28, 1, fmt.Sprintf("%d expired", br.tok), "#b00020", "middle")
		}
	}
}

// clientBars draws pauses (grey boxes), crashes (a red cross) and the
// span in which each client believes it holds the lease (a thick line).
func (p *svgPlot) clientBars() {
	holding := make([]time.Duration, len(p.r.Clients))
	for i := range holding {
		holding[i] = -1
	}
	endHold := func(c int, at time.Duration) {
		if holding[c] < 0 {
			return
		}
		fmt.Fprintf(p.b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="5" stroke-opacity="0.45"/>`+"\n",
			p.x(holding[c]), p.clientY(c), p.x(at), p.clientY(c), clientColor(c))
		holding[c] = -1
	}
	for _, e := range p.r.Events {
		c := e.Client
		switch e.Kind {
		case sim.KindAcquired:
			holding[c] = e.At
		case sim.KindDone, sim.KindLost, sim.KindCheckFailed, sim.KindCrashed:
			endHold(c, e.At)
		}
		switch e.Kind {
		case sim.KindPaused:
			x0, x1 := p.x(e.At), p.x(e.At+e.Dur)
			y := p.clientY(c)
			fmt.Fprintf(p.b, `<rect x="%.1f" y="%.1f" width="%.1f" height="26" fill="#999" fill-opacity="0.35" stroke="#666" stroke-dasharray="4 3"/>`+"\n",
				x0, y-13, x1-x0)
			p.label(fmt.Sprintf("c%d-in", c), (x0+x1)/2, y+4, 0, "process paused ("+sim.FormatTime(e.Dur)+")", "#333", "middle")
		case sim.KindCrashed:
			x, y := p.x(e.At), p.clientY(c)
			fmt.Fprintf(p.b, `<path d="M%.1f,%.1f l12,12 m0,-12 l-12,12" stroke="#b00020" stroke-width="3"/>`, x-6, y-6)
			p.label(fmt.Sprintf("c%d-above", c), x, y-16, -1, "crashed", "#b00020", "middle")
		case sim.KindCheckFailed:
			p.label(fmt.Sprintf("c%d-above", c), p.x(e.At), p.clientY(c)-16, -1, "own clock: lease over, stop", "#555", "start")
		case sim.KindLost:
			p.label(fmt.Sprintf("c%d-above", c), p.x(e.At), p.clientY(c)-16, -1, "heartbeat refused: lost", "#b00020", "start")
		}
	}
	for c := range holding {
		endHold(c, p.r.End)
	}
}

// messages draws every message as an arrow from sender to receiver.
func (p *svgPlot) messages() {
	labels := p.r.WriteLabels()
	arrow := func(t0, t1 time.Duration, y0, y1 float64, color string, mk int, width float64, dash bool) {
		d := ""
		if dash {
			d = ` stroke-dasharray="4 3"`
		}
		fmt.Fprintf(p.b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="%.1f"%s marker-end="url(#%s)"/>`+"\n",
			p.x(t0), y0, p.x(t1), y1, color, width, d, p.marker(mk))
	}
	// edge returns a lane's y shifted toward the other lane, so arrows
	// start and end at the lane's edge rather than its centre.
	toward := func(y, other float64) float64 {
		if other > y {
			return y + 8
		}
		return y - 8
	}
	for _, e := range p.r.Events {
		c := e.Client
		if c < 0 {
			continue
		}
		cy := p.clientY(c)
		col := clientColor(c)
		above := fmt.Sprintf("c%d-above", c)
		if cy > p.leaseY {
			above = fmt.Sprintf("c%d-below", c)
		}
		dir := -1
		if cy > p.leaseY {
			dir = 1
		}
		switch e.Kind {
		case sim.KindGranted, sim.KindDenied:
			arrow(e.Sent, e.At, toward(cy, p.leaseY), toward(p.leaseY, cy), "#777", 0, 1, false)
		case sim.KindAcquired:
			arrow(e.Sent, e.At, toward(p.leaseY, cy), toward(cy, p.leaseY), col, 3+c%len(clientColors), 1.6, false)
			p.label(above, p.x(e.At), cy+float64(dir)*16+4*float64(dir+1), dir, fmt.Sprintf("acquired: token %d", e.Token), col, "start")
		case sim.KindRefused:
			arrow(e.Sent, e.At, toward(p.leaseY, cy), toward(cy, p.leaseY), "#777", 0, 1, true)
			p.label(above, p.x(e.At), cy+float64(dir)*16+4*float64(dir+1), dir, fmt.Sprintf("refused (%d held)", e.Other), "#777", "start")
		case sim.KindRenewed, sim.KindRenewDenied:
			stroke := "#9ab"
			if e.Kind == sim.KindRenewDenied {
				stroke = "#b00020"
			}
			fmt.Fprintf(p.b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="1" stroke-dasharray="2 2"/>`+"\n",
				p.x(e.Sent), toward(cy, p.leaseY), p.x(e.At), toward(p.leaseY, cy), stroke)
		case sim.KindRead, sim.KindReadRejected:
			arrow(e.Sent, e.At, toward(cy, p.storeY), p.storeY-8, "#999", 0, 1, true)
			if claims(p.r.Storage) && e.Kind == sim.KindRead {
				p.label("store-below", p.x(e.At), p.storeY+22, 1, fmt.Sprintf("read claims %d", e.Token), "#777", "start")
			}
		case sim.KindWriteAccepted, sim.KindWriteRejected:
			ok := e.Kind == sim.KindWriteAccepted
			mk, res, rc := 1, "ok", "#1b7a1b"
			if !ok {
				mk, res, rc = 2, "REJECTED", "#b00020"
			}
			arrow(e.Sent, e.At, toward(cy, p.storeY), p.storeY-8, col, mk, 2.2, false)
			p.label(above, p.x(e.Sent), cy+float64(dir)*16+4*float64(dir+1), dir,
				fmt.Sprintf("write %s, token %d", labels[e.Write], e.Token), col, "start")
			text := fmt.Sprintf("%s (token %d): %s", labels[e.Write], e.Token, res)
			if ok && !p.r.Writes[e.Write].Live {
				text, rc = fmt.Sprintf("%s (token %d): ok, but lease %d had expired!", labels[e.Write], e.Token, e.Token), "#b00020"
			}
			if !ok {
				text = fmt.Sprintf("%s (token %d) REJECTED: %d seen", labels[e.Write], e.Token, e.Other)
			}
			p.label("store-below", p.x(e.At), p.storeY+22, 1, text, rc, "middle")
		}
	}
}
