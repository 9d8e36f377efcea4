package render

import (
	"fmt"
	"html"
	"math"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/sim"
)

// The drawing follows Kleppmann's figure: time runs left to right; the
// first client's lane is on top, then the lease service, the other
// clients, and the storage at the bottom. Messages are arrows between
// lanes; the lease's validity is a bar on the lease lane.
//
// Shapes are drawn first and every arrow and bar is remembered; labels are
// placed last, each at the first of a few candidate spots where it crosses
// no arrow, bar or earlier label (TestSVGLabelsClear checks the result).
const (
	svgWidth  = 1100 // the default width (Layout.Width 0)
	svgMinW   = 800  // the narrowest drawing Layout allows
	svgMaxW   = 2400 // the widest
	svgLeft   = 140
	svgRight  = 40
	rowH      = 15  // one row of labels
	charWidth = 7.0 // width of a 12px DejaVu Sans character, generously
	// laneCharWidth is a lane name's (14px bold) character width,
	// generously.
	laneCharWidth = 8.5
	fontFamily    = "DejaVu Sans, Helvetica, Arial, sans-serif"
	red           = "#b00020"
	green         = "#1b7a1b"
	grey          = "#777"
)

var clientColors = []string{"#1f5fbf", "#d9730d", "#2e8b57", "#8e44ad", "#b03a2e", "#117a8b"}

func clientColor(c int) string { return clientColors[c%len(clientColors)] }

// rect is a box in SVG coordinates; seg a line segment.
type rect struct{ x0, y0, x1, y1 float64 }
type seg struct{ x0, y0, x1, y1 float64 }

func (a rect) overlaps(b rect) bool { return a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1 }

// crosses reports whether segment s passes through r.
func (r rect) crosses(s seg) bool {
	// Liang-Barsky clipping: does any part of s lie inside r?
	t0, t1 := 0.0, 1.0
	dx, dy := s.x1-s.x0, s.y1-s.y0
	for _, pq := range [4][2]float64{{-dx, s.x0 - r.x0}, {dx, r.x1 - s.x0}, {-dy, s.y0 - r.y0}, {dy, r.y1 - s.y0}} {
		p, q := pq[0], pq[1]
		if p == 0 {
			if q < 0 {
				return false
			}
			continue
		}
		t := q / p
		if p < 0 {
			t0 = math.Max(t0, t)
		} else {
			t1 = math.Min(t1, t)
		}
		if t0 > t1 {
			return false
		}
	}
	return true
}

// textBox is the box a 12px label covers, its baseline at y.
func textBox(x, y float64, text, anchor string) rect {
	w := float64(len([]rune(text))) * charWidth
	switch anchor {
	case "middle":
		x -= w / 2
	case "end":
		x -= w
	}
	return rect{x, y - 11, x + w, y + 3}
}

// Layout sets the size of a drawing: Width in pixels (0: 1100; clamped to
// 800..2400), and End, the time at the right end of the axis (0: a round
// time just past the run's end). Labels are 12px at that width: show the
// SVG at its own width (scroll it sideways on a narrow screen) to keep
// them readable.
type Layout struct {
	Width int
	End   time.Duration
	// Compact draws the lanes closer together (60 px apart, not 105), the
	// figure 374 px tall for two clients, not 625, so that two figures fit
	// one screen; labels move at most 2 rows from their events, not 4.
	Compact bool
}

// geometry is where a drawing puts its lanes and the marks about them.
type geometry struct {
	top      float64 // the first lane; the legend and the danger label are above it
	gap      float64 // between lanes
	below    float64 // from the storage lane to the bottom
	dangerY  float64 // the danger label's baseline
	tokens   float64 // the storage's token line, below the storage lane (lowest token)
	tokenH   float64 // the token line's rise from the lowest token to the highest
	tokenOne float64 // the token line when the storage saw one token only
	storeLbl float64 // the storage's labels, below the storage lane
	rows     int     // a label stays within this many rows of its event, inside its lane's band
}

var (
	roomy   = geometry{top: 150, gap: 105, below: 160, dangerY: 52, tokens: 36, tokenH: 16, tokenOne: 30, storeLbl: 62, rows: 4}
	compact = geometry{top: 90, gap: 60, below: 104, dangerY: 44, tokens: 26, tokenH: 12, tokenOne: 22, storeLbl: 40, rows: 2}
)

func (l Layout) width() float64 {
	if l.Width == 0 {
		return svgWidth
	}
	return float64(min(max(l.Width, svgMinW), svgMaxW))
}

// X returns the x coordinate of time t in a drawing of this Layout (End
// must be set).
func (l Layout) X(t time.Duration) float64 {
	return svgLeft + float64(t)/float64(l.End)*(l.width()-svgLeft-svgRight)
}

// StableEnd returns a time at least d, and at least 10 s, rounded up to a
// coarse step (2.5 s up to 30 s, 5 s up to 60 s, 15 s up to 3 min, then
// whole minutes), so that the axis of a figure redrawn as a parameter
// moves stays put until the run outgrows it, and ends close to the run.
func StableEnd(d time.Duration) time.Duration {
	step := time.Minute
	switch {
	case d <= 30*time.Second:
		step = 2500 * time.Millisecond
	case d <= time.Minute:
		step = 5 * time.Second
	case d <= 3*time.Minute:
		step = 15 * time.Second
	}
	return max(10*time.Second, (d+step-1)/step*step)
}

// svgPlot holds the geometry of one run's drawing.
type svgPlot struct {
	b      *strings.Builder // shapes
	labels strings.Builder  // labels, written after the shapes
	r      *sim.Result
	id     string // prefix of the element ids
	layout Layout
	geometry
	width  float64
	tEnd   time.Duration
	laneY  []float64 // per client
	leaseY float64
	storeY float64
	height float64
	segs   []seg  // arrows and lines labels must not cross
	taken  []rect // bars and placed labels
	queued []queued
	placed []placed
	texts  []rect // every label's box
	// ordered keeps a lane's stacked labels in their events' order.
	ordered bool
}

// placed is a label placed near its event: the event's x and lane y, and
// the label's box.
type placed struct {
	at, y float64
	box   rect
}

// misordered counts the labels of the lane y whose order would differ
// from their events' order if box, labelling an event at x, went there:
// in the same row as box, left to right (row); in other rows (stack), a
// later label above an earlier one unless it starts right of where the
// earlier one ends, or below it if it ends left of where the later one
// starts (4 px of slack: the boxes are estimated generously, at charWidth
// a character).
func (p *svgPlot) misordered(box rect, x, y float64) (row, stack int) {
	for _, o := range p.placed {
		if o.y != y || o.at == x {
			continue
		}
		earlier := o.at < x
		if o.box.y0 < box.y1 && box.y0 < o.box.y1 {
			if (earlier && box.x0 < o.box.x0) || (!earlier && box.x0 > o.box.x0) {
				row++
			}
			continue
		}
		// A later label above an earlier one must start right of its end.
		above := box.y1 <= o.box.y0
		if (earlier && above && box.x0 < o.box.x1-4) || (!earlier && !above && o.box.x0 < box.x1-4) {
			stack++
		}
	}
	return row, stack
}

func (p *svgPlot) x(t time.Duration) float64 { return p.layout.X(t) }

// conflicts counts the remembered lines, bars and labels that box
// crosses, except the rect own (a label's own bar); a box outside the
// drawing counts as many.
func (p *svgPlot) conflicts(box, own rect) int {
	pad := rect{box.x0 - 2, box.y0 - 1, box.x1 + 2, box.y1 + 1}
	if p.outside(pad) {
		return 1000
	}
	n := 0
	for _, t := range p.taken {
		if t != own && pad.overlaps(t) {
			n++
		}
	}
	for _, s := range p.segs {
		if pad.crosses(s) {
			n++
		}
	}
	return n
}

// outside reports whether box leaves the plot: the drawing, less the
// lane names' gutter on the left (x below svgLeft) and the time axis at
// the bottom (its line and tick labels).
func (p *svgPlot) outside(box rect) bool {
	return box.x0 < svgLeft || box.x1 > p.width-2 || box.y0 < 2 || box.y1 > p.axisY()
}

// axisY is the time axis' line.
func (p *svgPlot) axisY() float64 { return p.height - 30 }

// queued is a label waiting for every shape to be drawn: first a
// preferred spot (centred in its own bar, own), then spots near (x, y).
type queued struct {
	x, y        float64
	dir         int
	altY        float64 // where to try next, on the lane's other side (0: nowhere)
	altDir      int
	text, color string
	bold        bool
	class       string  // the label's class, if any
	later       string  // said after text from x from on (the tour hides it before)
	from        float64 // where later becomes true, or (no later) from where the tour shows the label
	centre      bool    // try centred in own first
	cx          float64
	own         rect
	shorter     []string // texts to try centred in own next, before any spot near (x, y)
	event       bool     // the label names the event at x (data-x) even centred in own
}

// label queues text to be placed, once every shape is drawn, near (x, y)
// (see place).
func (p *svgPlot) label(x, y float64, dir int, text, color string, bold bool) {
	p.queued = append(p.queued, queued{x: x, y: y, dir: dir, text: text, color: color, bold: bold})
}

// inside queues text centred in the bar or box own, or, if it does not fit
// or something crosses it there, near (x, y) in direction dir.
func (p *svgPlot) inside(own rect, x, y float64, dir int, text, color string) {
	p.queued = append(p.queued, queued{x: x, y: y, dir: dir, text: text, color: color,
		centre: true, cx: (own.x0 + own.x1) / 2, own: own})
}

// spot is a place for a label, and its text if not the queued one.
type spot struct {
	x, y   float64
	anchor string
	text   string
}

// place places the queued labels in order. Each goes to the first free
// spot among: its centre (for inside); then, row by row up to p.rows away
// from its anchor in its direction, just right or just left of the
// anchor, then centred at growing distances from it (up to 40 px before
// it and 100 px after, starting at most 66 px after it); when no spot is free, to the one that crosses
// least, counting a spot that puts labels of one lane and row out of
// their events' order as ten crossings, and one that puts a label above
// an earlier event's and not right of its end (or below a later one's
// and not left of its start) as half a crossing; labels that stack
// upward are placed latest first, so that an earlier one goes above. A label
// so stays at its event, inside its lane's band, in the order of the
// events: left to right, and top to bottom.
func (p *svgPlot) place() {
	if p.ordered {
		// A label that stacks upward from its event takes the spot nearest
		// it before the labels of earlier events, which stack above it:
		// the upward labels are placed latest first, in the slots of the
		// queue they hold.
		var up []int
		for i, q := range p.queued {
			if q.dir < 0 {
				up = append(up, i)
			}
		}
		for i, j := 0, len(up)-1; i < j; i, j = i+1, j-1 {
			p.queued[up[i]], p.queued[up[j]] = p.queued[up[j]], p.queued[up[i]]
		}
	}
	for _, q := range p.queued {
		var spots []spot
		inOwn := 0 // the spots in own
		if q.centre {
			// Centred, then anywhere along own (of a bar, not a box),
			// then as much for each shorter text.
			cy := (q.own.y0+q.own.y1)/2 + 4
			for i, text := range append([]string{q.text}, q.shorter...) {
				spots = append(spots, spot{q.cx, cy, "middle", text})
				if i == 0 && q.shorter == nil {
					continue
				}
				for x := q.own.x0 + 4; x < q.own.x1-4; x += 10 {
					spots = append(spots, spot{x, cy, "start", text})
				}
			}
			inOwn = len(spots)
		}
		whole := q.text + q.later // the part the tour shows later takes its room now
		w := float64(utf8.RuneCountInString(whole)) * charWidth
		rows := func(y float64, dir int) {
			for row := 0; row <= p.rows; row++ {
				ty := y + float64(dir*row*rowH)
				spots = append(spots, spot{q.x + 4, ty, "start", ""}, spot{q.x - 4, ty, "end", ""})
				for d := 10.0; d <= 100 && d-w/2 <= 66; d += 10 {
					spots = append(spots, spot{q.x + d, ty, "middle", ""})
					if d <= 40 {
						spots = append(spots, spot{q.x - d, ty, "middle", ""})
					}
				}
				spots = append(spots, spot{q.x + 40 + w/2, ty, "middle", ""}) // starting 40 px after it
			}
		}
		rows(q.y, q.dir)
		if q.altY != 0 {
			rows(q.altY, q.altDir)
		}
		best, bestI, least := spots[0], 0, -1.0
		for i, s := range spots {
			text := whole
			if s.text != "" {
				text = s.text
			}
			own := rect{}
			if i < inOwn {
				own = q.own
				if b := textBox(s.x, s.y, text, s.anchor); b.x0 < q.own.x0 || b.x1 > q.own.x1 {
					continue // does not fit in its bar
				}
			}
			box := textBox(s.x, s.y, text, s.anchor)
			row, stack := p.misordered(box, q.x, q.y)
			if !p.ordered {
				stack = 0
			}
			if n := float64(p.conflicts(box, own)+10*row) + 0.5*float64(stack); least < 0 || n < least {
				best, bestI, least = s, i, n
				if n == 0 {
					break
				}
			}
		}
		if best.text != "" {
			q.text, whole = best.text, best.text
		}
		attrs := ""
		if q.event || bestI >= inOwn {
			attrs = fmt.Sprintf(` data-x="%.1f" data-y="%.1f"`, q.x, q.y) // the event it labels
		}
		if q.class != "" {
			attrs += ` class="` + q.class + `"`
		}
		if q.later == "" && q.from > 0 {
			attrs += fmt.Sprintf(` data-from="%.1f"`, q.from)
		}
		if q.later != "" {
			p.putLater(best.x, best.y, best.anchor, q, attrs)
		} else {
			p.putAttrs(best.x, best.y, best.anchor, q.text, q.color, q.bold, attrs)
		}
		p.placed = append(p.placed, placed{q.x, q.y, textBox(best.x, best.y, whole, best.anchor)})
	}
}

// put writes a label at exactly (x, y) and marks its box taken.
func (p *svgPlot) put(x, y float64, anchor, text, color string, bold bool) {
	p.putAttrs(x, y, anchor, text, color, bold, "")
}

func (p *svgPlot) putAttrs(x, y float64, anchor, text, color string, bold bool, attrs string) {
	p.taken = append(p.taken, textBox(x, y, text, anchor))
	p.texts = append(p.texts, textBox(x, y, text, anchor))
	weight := ""
	if bold {
		weight = ` font-weight="bold"`
	}
	fmt.Fprintf(&p.labels, `<text x="%.1f" y="%.1f" fill="%s" text-anchor="%s" font-size="12"%s%s>%s</text>`+"\n",
		x, y, color, anchor, weight, attrs, html.EscapeString(text))
}

// putLater writes q's text then, in red, q.later marked with the x from
// which it holds (data-from), so that the tour can hide it until then.
func (p *svgPlot) putLater(x, y float64, anchor string, q queued, attrs string) {
	p.taken = append(p.taken, textBox(x, y, q.text+q.later, anchor))
	p.texts = append(p.texts, textBox(x, y, q.text+q.later, anchor))
	fmt.Fprintf(&p.labels, `<text x="%.1f" y="%.1f" fill="%s" text-anchor="%s" font-size="12"%s>%s<tspan fill="%s" data-from="%.1f">%s</tspan></text>`+"\n",
		x, y, q.color, anchor, attrs, html.EscapeString(q.text), red, q.from, html.EscapeString(q.later))
}

// line draws a segment that labels must avoid; marker is an arrowhead
// colour index (see marker) or -1 for none.
func (p *svgPlot) line(s seg, color string, width float64, dash string, marker int) {
	p.segs = append(p.segs, s)
	extra := ""
	if dash != "" {
		extra = ` stroke-dasharray="` + dash + `"`
	}
	if marker >= 0 {
		extra += ` marker-end="url(#` + p.marker(marker) + `)"`
	}
	fmt.Fprintf(p.b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="%.1f"%s/>`+"\n",
		s.x0, s.y0, s.x1, s.y1, color, width, extra)
}

// marker returns the id of the arrowhead for a colour index: 0 grey,
// 1 green, 2 red, 3+ client colours.
func (p *svgPlot) marker(i int) string { return fmt.Sprintf("%s-arrow%d", p.id, i) }

// writeSVG draws r and returns how many labels clash: overlap another,
// are crossed by an arrow, or leave the drawing. It keeps each lane's
// labels stacked in their events' order (see place) unless that makes
// more labels clash than without.
func writeSVG(b *strings.Builder, r *sim.Result, id string, l Layout) int {
	var ordered strings.Builder
	n := drawSVG(&ordered, r, id, l, true)
	if n > 0 {
		var free strings.Builder
		if m := drawSVG(&free, r, id, l, false); m < n {
			b.WriteString(free.String())
			return m
		}
	}
	b.WriteString(ordered.String())
	return n
}

// drawSVG is writeSVG, stacking labels in their events' order if ordered.
func drawSVG(b *strings.Builder, r *sim.Result, id string, l Layout, ordered bool) int {
	if l.End <= 0 {
		l.End = niceEnd(r.End + r.End/20 + time.Second)
	}
	p := &svgPlot{b: b, r: r, id: id, layout: l, geometry: roomy, width: l.width(), tEnd: l.End, ordered: ordered}
	if l.Compact {
		p.geometry = compact
	}
	n := len(r.Clients)
	p.laneY = make([]float64, n)
	y := p.top
	p.laneY[0] = y
	y += p.gap
	p.leaseY = y
	for c := 1; c < n; c++ {
		y += p.gap
		p.laneY[c] = y
	}
	y += p.gap
	p.storeY = y
	p.height = y + p.below
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="%s" role="img">`+"\n",
		p.width, p.height, p.width, p.height, fontFamily)
	fmt.Fprintf(b, `<title>Timeline, %s%s</title>`+"\n", html.EscapeString(heading(r.Storage)), origin(r))
	b.WriteString(`<defs>`)
	for i, col := range append([]string{grey, green, red}, clientColors...) {
		fmt.Fprintf(b, `<marker id="%s-arrow%d" viewBox="0 0 10 10" refX="9" refY="5" markerUnits="userSpaceOnUse" markerWidth="10" markerHeight="10" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="%s"/></marker>`,
			id, i, col)
	}
	b.WriteString("</defs>\n")
	p.axis()
	p.danger()
	p.lanes()
	p.legend()
	p.leaseBars()
	p.storageTokens()
	p.clientBars()
	p.messages()
	p.place()
	b.WriteString(p.labels.String())
	b.WriteString("</svg>\n")
	return p.clashes()
}

// clashes counts the labels that overlap another, are crossed by an
// arrow (lines along a lane run through labels on purpose), or leave the
// drawing.
func (p *svgPlot) clashes() int {
	n := 0
	for i, a := range p.texts {
		if p.outside(a) {
			n++
		}
		for _, c := range p.texts[i+1:] {
			if a.overlaps(c) {
				n++
			}
		}
		for _, s := range p.segs {
			if s.y0 != s.y1 && a.crosses(s) {
				n++
			}
		}
	}
	return n
}

// Narrowest returns l at the fewest pixels, from 800 up to its own width
// in steps of 40, at which no label of any of the runs clashes (see
// clashes), or l itself if none is narrower: on a narrow screen, the
// most compressed time axis that keeps the labels apart.
func (l Layout) Narrowest(runs ...*sim.Result) Layout {
	for w := svgMinW; w < int(l.width()); w += 40 {
		n, try := 0, l
		try.Width = w
		for _, r := range runs {
			n += writeSVG(&strings.Builder{}, r, "x", try)
		}
		if n == 0 {
			return try
		}
	}
	return l
}

func niceEnd(d time.Duration) time.Duration {
	s := math.Ceil(d.Seconds())
	for _, step := range []float64{1, 2, 5, 10, 20, 30, 60} {
		if s/step <= 12 {
			return time.Duration(math.Ceil(s/step)*step) * time.Second
		}
	}
	return time.Duration(math.Ceil(s/120)*120) * time.Second
}

// tickStep is the time axis' step, for at most 16 ticks: whole seconds,
// or tenths in a drawing under 2 s (the playground tour's opening).
func tickStep(end time.Duration) time.Duration {
	s := end.Seconds()
	steps := []float64{1, 2, 5, 10, 15, 30, 60, 120, 300}
	if s < 2 {
		steps = []float64{0.1, 0.2, 0.5}
	}
	for _, step := range steps {
		if s/step <= 16 {
			return time.Duration(step * float64(time.Second))
		}
	}
	return 600 * time.Second
}

func (p *svgPlot) axis() {
	y := p.axisY()
	fmt.Fprintf(p.b, `<line x1="%d" y1="%.1f" x2="%.0f" y2="%.1f" stroke="#444"/>`+"\n", svgLeft, y, p.width-svgRight, y)
	step := tickStep(p.tEnd)
	for t := time.Duration(0); t <= p.tEnd; t += step {
		x := p.x(t)
		fmt.Fprintf(p.b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#444"/>`, x, y, x, y+5)
		fmt.Fprintf(p.b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#eee"/>`, x, p.top-30, x, y)
		fmt.Fprintf(p.b, `<text x="%.1f" y="%.1f" text-anchor="middle" font-size="11" fill="#444">%s</text>`+"\n", x, y+18, sim.FormatTime(t))
	}
}

// legend explains the marks above the lanes, in one row, or two on a
// narrow drawing.
func (p *svgPlot) legend() {
	// A page may hide the legend (the playground's tour does), or show its
	// entries by their short names (data-short), as a phone's tour does.
	legend := func(short string) string { return ` class="legend" data-short="` + short + `"` }
	y := 22.0
	x := float64(svgLeft)
	// item starts an entry of width w, moving to the next row when it
	// would not fit.
	item := func(w float64) {
		if x+w > p.width-svgRight && x > svgLeft {
			x, y = svgLeft, y+18
		}
	}
	item(205)
	fmt.Fprintf(p.b, `<line class="legend" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="5" stroke-opacity="0.45"/>`, x, y-4, x+26, y-4, clientColor(0))
	p.putAttrs(x+30, y, "start", "client's belief in its lease", "#444", false, legend("belief"))
	x += 205
	item(195)
	fmt.Fprintf(p.b, `<rect class="legend" x="%.1f" y="%.1f" width="26" height="10" rx="3" fill="%s" fill-opacity="0.25" stroke="%s"/>`, x, y-9, clientColor(0), clientColor(0))
	p.putAttrs(x+30, y, "start", "lease at the lease service", "#444", false, legend("lease"))
	x += 195
	item(80)
	fmt.Fprintf(p.b, `<rect class="legend" x="%.1f" y="%.1f" width="26" height="12" fill="%s" fill-opacity="0.12"/>`, x, y-10, red)
	p.putAttrs(x+30, y, "start", "danger", "#444", false, legend("danger"))
	x += 80
	item(128)
	fmt.Fprintf(p.b, `<polyline class="legend" points="%.1f,%.1f %.1f,%.1f %.1f,%.1f" fill="none" stroke="#555" stroke-width="1.5"/>`, x, y, x+13, y, x+13, y-8)
	fmt.Fprintf(p.b, `<line class="legend" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#555" stroke-width="1.5"/>`+"\n", x+13, y-8, x+26, y-8)
	p.putAttrs(x+30, y, "start", "storage's token", "#444", false, legend("token"))
	x += 128
	item(100)
	fmt.Fprintf(p.b, `<circle class="legend" cx="%.1f" cy="%.1f" r="6" fill="none" stroke="%s" stroke-width="2" stroke-dasharray="3 2"/>`+"\n", x+13, y-4, red)
	p.putAttrs(x+30, y, "start", "lost write", "#444", false, legend("lost"))
	x += 100
	// A pause's grey dashed box, where the run has one.
	if slices.ContainsFunc(p.r.Events, func(e sim.Event) bool { return e.Kind == sim.KindPaused }) {
		item(90)
		fmt.Fprintf(p.b, `<rect class="legend" x="%.1f" y="%.1f" width="26" height="12" fill="#999" fill-opacity="0.3" stroke="#666" stroke-dasharray="4 3"/>`+"\n", x, y-10)
		p.putAttrs(x+30, y, "start", "paused", "#444", false, legend("paused"))
	}
}

func (p *svgPlot) lanes() {
	// short is the name a page shows on a narrow screen (data-short). A
	// name wider than the gutter left of the lanes goes in two lines, its
	// parenthesis (a storage's rule) on the second, so that it does not
	// run into the plot (data-wrap: a page keeps the two lines).
	lane := func(y float64, name, short, color string) {
		fmt.Fprintf(p.b, `<line x1="%d" y1="%.1f" x2="%.0f" y2="%.1f" stroke="#bbb" stroke-width="1"/>`, svgLeft, y, p.width-svgRight, y)
		text, wrap := html.EscapeString(name), ""
		if i := strings.Index(name, " ("); i >= 0 && 12+float64(utf8.RuneCountInString(name))*laneCharWidth > svgLeft-6 {
			text = fmt.Sprintf(`%s<tspan x="12" dy="15">%s</tspan>`, html.EscapeString(name[:i]), html.EscapeString(name[i+1:]))
			wrap = fmt.Sprintf(` data-wrap="" data-full="%s"`, html.EscapeString(name))
		}
		fmt.Fprintf(p.b, `<text class="lane-name" x="%d" y="%.1f" font-size="14" font-weight="bold" fill="%s" data-short="%s"%s>%s</text>`+"\n",
			12, y+5, color, html.EscapeString(short), wrap, text)
	}
	for c, name := range p.r.Clients {
		lane(p.laneY[c], "Client "+name, name, clientColor(c))
	}
	lane(p.leaseY, "Lease service", "Lease", "#333")
	// A fenced storage's name says its rule, the short one too, so that
	// the two figures' storages look different on a narrow screen.
	// "(check-then-write)" is too wide for the gutter even in a line of
	// its own.
	storage := "Storage"
	if p.r.Storage.Fenced() {
		storage += " (" + p.r.Storage.String() + ")"
		if p.r.Storage == sim.StorageCheckThenWrite {
			storage = "Storage (2 steps)"
		}
	}
	lane(p.storeY, storage, storage, "#333")
}

// leaseSpan is a lease as the lease service saw it: from the grant until
// it expired or was released (to is -1 while it lasts to the end).
type leaseSpan struct {
	c        int
	tok      fence.Token
	from, to time.Duration
	expired  bool
}

func leaseSpans(r *sim.Result) []leaseSpan {
	var spans []leaseSpan
	open := -1
	for _, e := range r.Events {
		switch e.Kind {
		case sim.KindGranted:
			spans = append(spans, leaseSpan{c: e.Client, tok: e.Token, from: e.At, to: -1})
			open = len(spans) - 1
		case sim.KindExpired, sim.KindReleased:
			if open >= 0 && spans[open].tok == e.Token {
				spans[open].to, spans[open].expired = e.At, e.Kind == sim.KindExpired
				open = -1
			}
		}
	}
	return spans
}

// leaseBars draws, on the lease lane, each token's validity as the lease
// service saw it: from the grant to its expiry (a red mark, labelled) or
// release (a grey one).
func (p *svgPlot) leaseBars() {
	for _, br := range leaseSpans(p.r) {
		to := br.to
		if to < 0 {
			to = p.r.End
		}
		x0, x1 := p.x(br.from), p.x(to)
		col := clientColor(br.c)
		fmt.Fprintf(p.b, `<rect x="%.1f" y="%.1f" width="%.1f" height="14" rx="3" fill="%s" fill-opacity="0.25" stroke="%s"/>`+"\n",
			x0, p.leaseY-7, math.Max(x1-x0, 1), col, col)
		bar := rect{x0, p.leaseY - 7, x1, p.leaseY + 7}
		p.taken = append(p.taken, bar)
		p.inside(bar, x0, p.leaseY-12, -1, fmt.Sprintf("lease %d (%s)", br.tok, p.r.Clients[br.c]), col)
		// A bar too short for that, or crossed there, is named shorter
		// rather than beside it, where it reads as another bar's.
		p.queued[len(p.queued)-1].shorter = []string{fmt.Sprintf("lease %d", br.tok), fmt.Sprint(br.tok)}
		switch {
		case br.expired:
			// Classed, as the release's mark: the page's tour lifts it
			// above its veil at the expiry's step.
			s := seg{x1, p.leaseY - 14, x1, p.leaseY + 14}
			p.segs = append(p.segs, s)
			fmt.Fprintf(p.b, `<line class="expired" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2.0"/>`+"\n", s.x0, s.y0, s.x1, s.y1, red)
			p.label(x1, p.leaseY+26, 1, fmt.Sprintf("%d expired", br.tok), red, false)
		case br.to >= 0:
			// A grey mark, unlabelled: on a phone's drawing a label
			// there would crowd the late renewal's.
			fmt.Fprintf(p.b, `<line class="released" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="3"/>`+"\n",
				x1, p.leaseY-7, x1, p.leaseY+7, grey)
		}
	}
}

// storageTokens draws, under the storage lane, the token the storage
// holds as a step line: the highest token seen (claimed by a read or
// carried by an accepted write) for a fenced storage, and the token of the
// last write (or claim) for an unfenced or check-then-write one, which can
// go backwards.
func (p *svgPlot) storageTokens() {
	type step struct {
		at  time.Duration
		tok fence.Token
	}
	var steps []step
	cur := fence.Token(0)
	set := func(at time.Duration, tok fence.Token) {
		if tok != cur {
			cur = tok
			steps = append(steps, step{at, tok})
		}
	}
	maxOnly := p.r.Storage == sim.StorageWrites || p.r.Storage == sim.StorageClaim
	for _, e := range p.r.Events {
		switch {
		case e.Kind == sim.KindRead && claims(p.r.Storage):
			set(e.At, max(cur, e.Token))
		case e.Kind == sim.KindWriteAccepted && maxOnly:
			set(e.At, max(cur, e.Token))
		case e.Kind == sim.KindWriteAccepted:
			set(e.At, e.Token)
		}
	}
	if len(steps) == 0 {
		return
	}
	lo, hi := steps[0].tok, steps[0].tok
	for _, s := range steps {
		lo, hi = min(lo, s.tok), max(hi, s.tok)
	}
	level := func(tok fence.Token) float64 {
		if hi == lo {
			return p.storeY + p.tokenOne
		}
		return p.storeY + p.tokens - p.tokenH*float64(tok-lo)/float64(hi-lo)
	}
	var pts strings.Builder
	prevY := 0.0
	for i, s := range steps {
		x, y := p.x(s.at), level(s.tok)
		if i > 0 {
			fmt.Fprintf(&pts, " %.1f,%.1f", x, prevY)
			p.segs = append(p.segs, seg{p.x(steps[i-1].at), prevY, x, prevY}, seg{x, prevY, x, y})
		}
		fmt.Fprintf(&pts, " %.1f,%.1f", x, y)
		prevY = y
	}
	xEnd := p.x(p.r.End)
	fmt.Fprintf(&pts, " %.1f,%.1f", xEnd, prevY)
	p.segs = append(p.segs, seg{p.x(steps[len(steps)-1].at), prevY, xEnd, prevY})
	fmt.Fprintf(p.b, `<polyline points="%s" fill="none" stroke="#555" stroke-width="1.5"/>`+"\n", strings.TrimSpace(pts.String()))
	// A storage that checks nothing keeps no token: its line is the token
	// of the last write, and says so.
	format := "%d"
	if !p.r.Storage.Fenced() {
		format = "wrote %d"
	}
	for _, s := range steps {
		p.put(p.x(s.at)+3, level(s.tok)-3, "start", fmt.Sprintf(format, s.tok), "#555", false)
	}
}

// belief is a span in which a client believes it holds lease tok: from
// its acquire until it learns otherwise (its own check, a refused
// heartbeat, a rejected write) or ends its job.
type belief struct {
	c        int
	tok      fence.Token
	from, to time.Duration
}

func beliefs(r *sim.Result) []belief {
	var out []belief
	open := make([]int, len(r.Clients))
	for i := range open {
		open[i] = -1
	}
	for _, e := range r.Events {
		if e.Client < 0 {
			continue
		}
		switch e.Kind {
		case sim.KindAcquired:
			out = append(out, belief{c: e.Client, tok: e.Token, from: e.At, to: -1})
			open[e.Client] = len(out) - 1
		case sim.KindDone, sim.KindLost, sim.KindCheckFailed, sim.KindCrashed, sim.KindReleased:
			if i := open[e.Client]; i >= 0 {
				out[i].to = e.At
				open[e.Client] = -1
			}
		case sim.KindWriteRejected, sim.KindReadRejected:
			// The refusal reaches the client a message later; the sim's
			// storage event is the last sure moment it still believed.
			if i := open[e.Client]; i >= 0 {
				out[i].to = e.At
				open[e.Client] = -1
			}
		}
	}
	for i := range out {
		if out[i].to < 0 {
			out[i].to = r.End
		}
	}
	return out
}

// danger shades, across the lanes, every span in which a client believes
// it holds a lease that the lease service has already expired: the time
// in which its writes can land after a newer holder's.
func (p *svgPlot) danger() {
	spans := leaseSpans(p.r)
	for _, bl := range beliefs(p.r) {
		for _, ls := range spans {
			if ls.tok != bl.tok || !ls.expired || bl.to <= ls.to {
				continue
			}
			x0, x1 := p.x(max(ls.to, bl.from)), p.x(bl.to)
			fmt.Fprintf(p.b, `<rect class="danger" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s" fill-opacity="0.08"/>`+"\n",
				x0, p.dangerY+8, x1-x0, p.storeY+p.tokens+9-p.dangerY-8, red)
			text := fmt.Sprintf("danger: %s holds expired lease %d", p.r.Clients[bl.c], bl.tok)
			p.queued = append(p.queued, queued{x: x0, y: p.dangerY, dir: -1, text: text, color: red, bold: true, class: "danger"})
		}
	}
}

// clientBars draws each client's belief in its lease (a thick line, which
// no label crosses), pauses (grey boxes) and crashes (a red cross).
func (p *svgPlot) clientBars() {
	for _, bl := range beliefs(p.r) {
		y := p.laneY[bl.c]
		fmt.Fprintf(p.b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="5" stroke-opacity="0.45"/>`+"\n",
			p.x(bl.from), y, p.x(bl.to), y, clientColor(bl.c))
		// No label goes across it: a pause's label goes beside its box.
		p.taken = append(p.taken, rect{p.x(bl.from), y - 2.5, p.x(bl.to), y + 2.5})
	}
	for _, e := range p.r.Events {
		c := e.Client
		if c < 0 {
			continue
		}
		y := p.laneY[c]
		switch e.Kind {
		case sim.KindPaused:
			x0, x1 := p.x(e.At), p.x(e.At+e.Dur)
			fmt.Fprintf(p.b, `<rect class="pause" x="%.1f" y="%.1f" width="%.1f" height="24" fill="#999" fill-opacity="0.3" stroke="#666" stroke-dasharray="4 3"/>`+"\n",
				x0, y-12, x1-x0)
			box := rect{x0, y - 12, x1, y + 12}
			p.taken = append(p.taken, box)
			dir, ly := 1, y+28
			if c == 0 {
				dir, ly = -1, y-18
			}
			p.inside(box, x0, ly, dir, "paused "+sim.FormatTime(e.Dur), "#333")
			// It tells the pause: the tour shows it from the pause's
			// start, as the box grows (data-x).
			p.queued[len(p.queued)-1].event = true
		case sim.KindCrashed:
			x := p.x(e.At)
			fmt.Fprintf(p.b, `<path d="M%.1f,%.1f l12,12 m0,-12 l-12,12" stroke="%s" stroke-width="3"/>`, x-6, y-6, red)
			p.taken = append(p.taken, rect{x - 6, y - 6, x + 6, y + 6})
		}
	}
}

// readText says what a read returned, as short as the lane needs.
func readText(r *sim.Result, e sim.Event) string {
	ids := readAt(r, e)
	text := "read " + r.ValueString(ids)
	if utf8.RuneCountInString(text) > 24 {
		text = fmt.Sprintf("read (%d writes)", len(ids))
	}
	return text
}

// lostAt is when lost write i was replaced: the first accepted write after
// it, with another token, based on a read without it.
func lostAt(r *sim.Result, i int) time.Duration {
	at := r.End
	for _, w := range r.Writes {
		if w.Accepted && w.At > r.Writes[i].At && w.Token != r.Writes[i].Token && !slices.Contains(w.Read, i) {
			at = min(at, w.At)
		}
	}
	return at
}

// messages draws every message as an arrow from sender to receiver, then
// labels the events.
func (p *svgPlot) messages() {
	labels := p.r.WriteLabels()
	lost := map[int]bool{}
	for _, i := range p.r.Lost() {
		lost[i] = true
	}
	// toward returns a lane's y moved toward the other lane, so arrows
	// start and end at the lane's edge rather than its centre.
	toward := func(y, other float64) float64 {
		if other > y {
			return y + 8
		}
		return y - 8
	}
	// near queues a label next to client c's lane: above the top lane,
	// below the others.
	near := func(c int, t time.Duration, text, color string) {
		dir, y, altDir, altY := 1, p.laneY[c]+24, -1, p.laneY[c]-16
		if c == 0 {
			dir, y, altDir, altY = altDir, altY, dir, y
		}
		p.queued = append(p.queued, queued{x: p.x(t), y: y, dir: dir, altY: altY, altDir: altDir, text: text, color: color})
	}
	store := func(t time.Duration, text, color string) {
		p.label(p.x(t), p.storeY+p.storeLbl, 1, text, color, false)
	}
	for _, e := range p.r.Events {
		c := e.Client
		if c < 0 {
			continue
		}
		cy := p.laneY[c]
		col := clientColor(c)
		switch e.Kind {
		case sim.KindGranted, sim.KindDenied:
			p.line(seg{p.x(e.Sent), toward(cy, p.leaseY), p.x(e.At), toward(p.leaseY, cy)}, grey, 1, "", 0)
		case sim.KindAcquired:
			p.line(seg{p.x(e.Sent), toward(p.leaseY, cy), p.x(e.At), toward(cy, p.leaseY)}, col, 1.6, "", 3+c%len(clientColors))
			near(c, e.At, fmt.Sprintf("acquired %d", e.Token), col)
		case sim.KindRefused:
			p.line(seg{p.x(e.Sent), toward(p.leaseY, cy), p.x(e.At), toward(cy, p.leaseY)}, grey, 1, "4 3", 0)
			near(c, e.At, fmt.Sprintf("lease held by %d", e.Other), grey)
		case sim.KindRenewed:
			p.line(seg{p.x(e.Sent), toward(cy, p.leaseY), p.x(e.At), toward(p.leaseY, cy)}, "#9ab", 1, "2 2", -1)
		case sim.KindRenewDenied:
			p.line(seg{p.x(e.Sent), toward(cy, p.leaseY), p.x(e.At), toward(p.leaseY, cy)}, red, 1.4, "3 2", 2)
			p.label(p.x(e.At), p.leaseY-14, -1, fmt.Sprintf("renewal of %d refused", e.Token), red, false)
			// The client hears of it later (KindLost): the tour shows the
			// label from then (data-from), at the step that tells it.
			for _, l := range p.r.Events {
				if l.Kind == sim.KindLost && l.Client == c && l.Token == e.Token && l.At >= e.At {
					p.queued[len(p.queued)-1].from = p.x(l.At)
					break
				}
			}
		case sim.KindLost:
			near(c, e.At, "lease lost", red)
		case sim.KindCheckFailed:
			near(c, e.At, "own clock: lease over, stop", "#555")
		case sim.KindCrashed:
			near(c, e.At, "crashed", red)
		case sim.KindRead, sim.KindReadRejected:
			p.line(seg{p.x(e.Sent), toward(cy, p.storeY), p.x(e.At), p.storeY - 8}, "#999", 1, "4 3", 0)
			if e.Kind == sim.KindRead {
				near(c, e.At, readText(p.r, e), "#555")
			}
			if claims(p.r.Storage) && e.Kind == sim.KindRead {
				store(e.At, fmt.Sprintf("read claims %d", e.Token), grey)
			}
			if e.Kind == sim.KindReadRejected {
				store(e.At, fmt.Sprintf("read with %d REJECTED: %d seen", e.Token, e.Other), red)
			}
		case sim.KindChecked:
			if p.r.Storage != sim.StorageCheckThenWrite {
				// An atomic storage checks a write as it applies it: its
				// answer to the client's early check is not the check
				// that counts, and is not drawn (as Text leaves it out).
				continue
			}
			p.line(seg{p.x(e.Sent), toward(cy, p.storeY), p.x(e.At), p.storeY - 8}, "#999", 1, "4 3", 0)
			near(c, e.Sent, fmt.Sprintf("check %s, token %d", labels[e.Write], e.Token), col)
			store(e.At, fmt.Sprintf("check %s (token %d): ok", labels[e.Write], e.Token), grey)
		case sim.KindWriteAccepted, sim.KindWriteRejected:
			ok := e.Kind == sim.KindWriteAccepted
			mk, text, rc := 1, fmt.Sprintf("%s (token %d): ok", labels[e.Write], e.Token), green
			switch {
			case !ok:
				mk, text, rc = 2, fmt.Sprintf("%s (token %d) REJECTED: %d seen", labels[e.Write], e.Token, e.Other), red
			case !p.r.Writes[e.Write].Live:
				text, rc = fmt.Sprintf("%s (token %d): ok, lease over!", labels[e.Write], e.Token), red
			}
			sent := p.r.Writes[e.Write].Sent
			if lost[e.Write] {
				// The loss happens when a later write replaces it: the mark
				// and the word carry that moment (data-from). The write was
				// accepted: the mark, a dashed ring round its arrowhead, is
				// no cross (a refusal's look).
				x, from := p.x(e.At), p.x(lostAt(p.r, e.Write))
				fmt.Fprintf(p.b, `<g class="lost" data-from="%.1f"><circle cx="%.1f" cy="%.1f" r="8" fill="none" stroke="%s" stroke-width="2" stroke-dasharray="3 2"/></g>`+"\n",
					from, x, p.storeY-4, red)
				p.taken = append(p.taken, rect{x - 8, p.storeY - 8, x + 8, p.storeY + 8})
				p.line(seg{p.x(sent), toward(cy, p.storeY), p.x(e.At), p.storeY - 8}, col, 2.2, "", mk)
				near(c, sent, fmt.Sprintf("write %s, token %d", labels[e.Write], e.Token), col)
				p.queued = append(p.queued, queued{x: p.x(e.At), y: p.storeY + p.storeLbl, dir: 1, color: green,
					text: fmt.Sprintf("%s (token %d): ok", labels[e.Write], e.Token), later: ", later LOST", from: from})
				continue
			}
			p.line(seg{p.x(sent), toward(cy, p.storeY), p.x(e.At), p.storeY - 8}, col, 2.2, "", mk)
			near(c, sent, fmt.Sprintf("write %s, token %d", labels[e.Write], e.Token), col)
			store(e.At, text, rc)
		}
	}
}
