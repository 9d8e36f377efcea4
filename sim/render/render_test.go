package render_test

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"html"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/fencekit/fencekit/sim"
	"github.com/fencekit/fencekit/sim/render"
)

// parseXHTML parses the page strictly as XML (the page is written to be
// both HTML and well-formed XML) and counts start elements by name.
func parseXHTML(t *testing.T, page []byte) map[string]int {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(page))
	d.Strict = true
	d.Entity = xml.HTMLEntity
	counts := map[string]int{}
	var stack []string
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("page does not parse: %v", err)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			counts[el.Name.Local]++
			stack = append(stack, el.Name.Local)
			for _, a := range el.Attr {
				if a.Name.Local == "src" || (a.Name.Local == "href" && !strings.HasPrefix(a.Value, "#")) {
					t.Errorf("external reference %s=%q in <%s>", a.Name.Local, a.Value, el.Name.Local)
				}
			}
		case xml.EndElement:
			if len(stack) == 0 || stack[len(stack)-1] != el.Name.Local {
				t.Fatalf("unbalanced </%s>", el.Name.Local)
			}
			stack = stack[:len(stack)-1]
		}
	}
	if len(stack) != 0 {
		t.Fatalf("unclosed elements %v", stack)
	}
	return counts
}

func TestHTMLOneSVGPerRun(t *testing.T) {
	for _, sc := range sim.Scenarios() {
		var runs []*sim.Result
		for _, fencing := range []bool{false, true} {
			p := sc.Defaults
			if fencing {
				p.Storage = sim.StorageClaim
			}
			r, err := sc.Run(p)
			if err != nil {
				t.Fatal(err)
			}
			runs = append(runs, r)
			var b bytes.Buffer
			if err := render.HTML(&b, sc.Title, runs...); err != nil {
				t.Fatal(err)
			}
			page := b.Bytes()
			counts := parseXHTML(t, page)
			if counts["svg"] != len(runs) || counts["html"] != 1 || counts["body"] != 1 {
				t.Fatalf("%s: %d svg for %d runs (counts %v)", sc.Name, counts["svg"], len(runs), counts)
			}
			if counts["script"] != 0 || counts["link"] != 0 || counts["img"] != 0 {
				t.Fatalf("%s: page has scripts or external assets: %v", sc.Name, counts)
			}
			ids := map[string]bool{}
			for _, m := range regexp.MustCompile(` id="([^"]+)"`).FindAllStringSubmatch(string(page), -1) {
				if ids[m[1]] {
					t.Fatalf("%s: duplicate id %q", sc.Name, m[1])
				}
				ids[m[1]] = true
			}
			s := string(page)
			if strings.Count(s, "http") != strings.Count(s, `xmlns="http://www.w3.org/2000/svg"`) {
				t.Fatalf("%s: page mentions a URL other than the SVG namespace", sc.Name)
			}
		}
	}
	// The kleppmann page shows each write's fate.
	var b bytes.Buffer
	render.HTML(&b, "k", kleppmann(t, false, nil), kleppmann(t, true, nil))
	for _, want := range []string{"A1 (token 33): ok", "A1 (token 33) REJECTED: 34 seen", "lease 33 (A)", "lease 34 (B)", "paused 15s", "33 expired", "renewal of 33 refused", "danger: A holds expired lease 33"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("kleppmann page lacks %q", want)
		}
	}
}

func TestJSON(t *testing.T) {
	r := kleppmann(t, true, nil)
	var b bytes.Buffer
	if err := render.JSON(&b, r); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != len(r.Events)+1 {
		t.Fatalf("%d lines for %d events + summary", len(lines), len(r.Events))
	}
	var rejected, summary map[string]any
	for i, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %d: %v", i, err)
		}
		switch m["kind"] {
		case "write-rejected":
			rejected = m
		case "summary":
			summary = m
		}
	}
	if rejected == nil || rejected["client"] != "A" || rejected["token"] != 33.0 || rejected["other"] != 34.0 || rejected["write"] != "A1" {
		t.Fatalf("rejected event %v", rejected)
	}
	if summary == nil || summary["violation"] != nil || len(summary["final"].([]any)) != 1 ||
		summary["verdict"] != "safe" || summary["storage"] != "claim" {
		t.Fatalf("summary %v", summary)
	}
}

func TestTimelineText(t *testing.T) {
	var b bytes.Buffer
	if err := render.Text(&b, "title", kleppmann(t, false, nil), kleppmann(t, true, nil)); err != nil {
		t.Fatal(err)
	}
	s := b.String()
	for _, want := range []string{"fencing OFF", "fencing ON", "PAUSED 15s", "expired", "B:34", "write A1/33 ok", "write A1/33 REJECTED", "write B1/34 ok"} {
		if !strings.Contains(s, want) {
			t.Errorf("timeline lacks %q:\n%s", want, s)
		}
	}
	// Both sides share rows: the rejected and the accepted write of A are on one line.
	for _, line := range strings.Split(s, "\n") {
		if strings.Contains(line, "write A1/33 ok") && !strings.Contains(line, "write A1/33 REJECTED") {
			t.Errorf("A's writes are not side by side: %q", line)
		}
	}
	if err := render.Text(&b, "x"); err == nil {
		t.Error("Text with no runs succeeded")
	}
}

func TestFormatTime(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0s", 100 * time.Millisecond: "0.1s", 16100 * time.Millisecond: "16.1s",
		time.Minute: "60s", 1234 * time.Millisecond: "1.234s", -time.Second: "-1s",
	} {
		if got := sim.FormatTime(d); got != want {
			t.Errorf("FormatTime(%v) = %q, want %q", d, got, want)
		}
	}
}

// TestTimelineRecordedOddStart: a recorded run whose first event draws no
// row of its own (a denial seen before any grant) still prints.
func TestTimelineRecordedOddStart(t *testing.T) {
	r := sim.NewRecorded([]string{"A", "B"}, "f", sim.StorageClaim, time.Second, 0, []sim.Event{
		{Kind: sim.KindDenied, Client: 1, Other: 7, Write: -1},
		{At: time.Second, Kind: sim.KindAcquired, Client: 1, Token: 8, Write: -1},
	}, nil, nil)
	var b bytes.Buffer
	if err := render.Text(&b, "odd", r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "acquired 8") || !strings.Contains(b.String(), "Every store checks") {
		t.Fatalf("timeline:\n%s", b.String())
	}
	b.Reset()
	if err := render.HTML(&b, "odd", r); err != nil {
		t.Fatal(err)
	}
	if page := b.String(); !strings.Contains(page, "Fencing ON (recorded on real servers)") || strings.Contains(page, "seed 0") {
		t.Fatalf("a recorded run's page should not name a seed:\n%s", page)
	}
}

func kleppmann(t *testing.T, fencing bool, edit func(*sim.Params)) *sim.Result {
	t.Helper()
	sc, err := sim.Lookup("kleppmann")
	if err != nil {
		t.Fatal(err)
	}
	p := sc.Defaults
	if fencing {
		p.Storage = sim.StorageClaim
	}
	if edit != nil {
		edit(&p)
	}
	r, err := sc.Run(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// svgText is a label of an SVG: its box estimated as the renderer does.
type svgText struct {
	text       string
	x0, y0, x1 float64
	y1         float64
}

// svgShapes returns the 12px labels and the lines of an SVG.
func svgShapes(t *testing.T, svg string) (texts []svgText, lines [][4]float64) {
	t.Helper()
	textRe := regexp.MustCompile(`<text x="([-\d.]+)" y="([-\d.]+)" fill="[^"]*" text-anchor="(\w+)" font-size="12"[^>]*>(.*?)</text>`)
	tag := regexp.MustCompile(`<[^>]*>`) // a tspan: the part the tour shows later
	for _, m := range textRe.FindAllStringSubmatch(svg, -1) {
		x, y, s := parse(t, m[1]), parse(t, m[2]), html.UnescapeString(tag.ReplaceAllString(m[4], ""))
		w := float64(utf8.RuneCountInString(s)) * 7.0
		switch m[3] {
		case "middle":
			x -= w / 2
		case "end":
			x -= w
		}
		texts = append(texts, svgText{s, x, y - 11, x + w, y + 3})
	}
	lineRe := regexp.MustCompile(`<line x1="([-\d.]+)" y1="([-\d.]+)" x2="([-\d.]+)" y2="([-\d.]+)" stroke="([^"]*)" stroke-width="([\d.]+)"`)
	for _, m := range lineRe.FindAllStringSubmatch(svg, -1) {
		lines = append(lines, [4]float64{parse(t, m[1]), parse(t, m[2]), parse(t, m[3]), parse(t, m[4])})
	}
	return texts, lines
}

// crosses reports whether the segment l passes through the box of s,
// sampled every pixel along the segment.
func crosses(s svgText, l [4]float64) bool {
	n := int(math.Max(math.Abs(l[2]-l[0]), math.Abs(l[3]-l[1]))) + 1
	for i := 0; i <= n; i++ {
		f := float64(i) / float64(n)
		x, y := l[0]+f*(l[2]-l[0]), l[1]+f*(l[3]-l[1])
		if x > s.x0 && x < s.x1 && y > s.y0 && y < s.y1 {
			return true
		}
	}
	return false
}

// eachFigure draws every scenario's default run in every storage mode at
// the default width and at widths the playground uses (narrow, wide, and
// a phone's, narrower where its labels stay clear: see Narrowest).
func eachFigure(t *testing.T, f func(name string, width float64, svg string)) {
	for _, sc := range sim.Scenarios() {
		for _, st := range sim.Storages() {
			p := sc.Defaults
			p.Storage = st
			r, err := sc.Run(p)
			if err != nil {
				t.Fatal(err)
			}
			layouts := []render.Layout{{}, {Width: 1000}, {Width: 1600}, {Width: 1200, Compact: true}}
			if phone := (render.Layout{Width: 1000, Compact: true}).Narrowest(r); phone.Width < 1000 {
				layouts = append(layouts, phone)
			}
			for _, l := range layouts {
				var b strings.Builder
				if err := render.SVGLayout(&b, r, "x", l); err != nil {
					t.Fatal(err)
				}
				w := float64(l.Width)
				if l.Width == 0 {
					w = 1100
				}
				name := fmt.Sprintf("%s/%s/%.0fpx", sc.Name, st, w)
				if l.Compact {
					name += "/compact"
				}
				f(name, w, b.String())
			}
		}
	}
}

// TestSVGLabelsAtTheirEvents: every label of an event (data-x, data-y: the
// event's spot) starts at most 70 px after the event and ends at most 40 px before it, and
// crosses no lane, so that "acquired 34" is drawn where B acquires, on
// B's side of the figure, not seconds away or on the storage's lane.
func TestSVGLabelsAtTheirEvents(t *testing.T) {
	anchored := regexp.MustCompile(`<text x="[-\d.]+" y="[-\d.]+" fill="[^"]*" text-anchor="\w+" font-size="12"[^>]* data-x="([-\d.]+)" data-y="([-\d.]+)">([^<]*)</text>`)
	laneRe := regexp.MustCompile(`<line x1="140" y1="([\d.]+)" x2="[\d.]+" y2="[\d.]+" stroke="#bbb"`)
	n := 0
	eachFigure(t, func(name string, _ float64, svg string) {
		texts, _ := svgShapes(t, svg)
		byText := map[string][]svgText{}
		for _, tx := range texts {
			byText[tx.text] = append(byText[tx.text], tx)
		}
		var lanes []float64
		for _, m := range laneRe.FindAllStringSubmatch(svg, -1) {
			y, _ := strconv.ParseFloat(m[1], 64)
			lanes = append(lanes, y)
		}
		if len(lanes) < 4 {
			t.Fatalf("%s: %d lanes parsed", name, len(lanes))
		}
		for _, m := range anchored.FindAllStringSubmatch(svg, -1) {
			ax, _ := strconv.ParseFloat(m[1], 64)
			text := html.UnescapeString(m[3])
			box := byText[text][0]
			byText[text] = byText[text][1:]
			n++
			if box.x0 > ax+70 || box.x1 < ax-40 {
				t.Errorf("%s: label %q spans x %.0f..%.0f, far from its event at %.0f", name, text, box.x0, box.x1, ax)
			}
			for _, y := range lanes {
				if box.y0 < y && y < box.y1 {
					t.Errorf("%s: label %q (y %.0f..%.0f) lies on the lane at y %.0f", name, text, box.y0, box.y1, y)
				}
			}
		}
	})
	if n < 100 {
		t.Fatalf("only %d labels of events checked", n)
	}
}

// TestSVGLabelsClear: in every scenario and storage mode, no label of the
// figure overlaps another or is crossed by an arrow or line, and every
// label lies inside the drawing.
func TestSVGLabelsClear(t *testing.T) {
	eachFigure(t, func(name string, width float64, svg string) {
		texts, lines := svgShapes(t, svg)
		if len(texts) < 5 || len(lines) < 5 {
			t.Fatalf("%s: %d labels, %d lines parsed", name, len(texts), len(lines))
		}
		for i, a := range texts {
			if a.x0 < 0 || a.x1 > width {
				t.Errorf("%s: label %q leaves the drawing (%.0f..%.0f)", name, a.text, a.x0, a.x1)
			}
			for _, c := range texts[i+1:] {
				if a.x0 < c.x1 && c.x0 < a.x1 && a.y0 < c.y1 && c.y0 < a.y1 {
					t.Errorf("%s: labels %q and %q overlap", name, a.text, c.text)
				}
			}
			for _, l := range lines {
				// Lane lines, belief bars and the storage's step line
				// run through the labels on purpose; arrows must not.
				if l[1] != l[3] && crosses(a, l) {
					t.Errorf("%s: label %q is crossed by a line %v", name, a.text, l)
				}
			}
		}
	})
}

// TestSVGStorageTokenStep: the storage lane's step line shows the token
// the storage holds: with the claim 33 (A's read), then 34 (B's read);
// without fencing the storage keeps none, and the line, the token of the
// last write, says so: "wrote 34", then "wrote 33". The page names no seed, which
// the reader cannot use.
func TestSVGStorageTokenStep(t *testing.T) {
	steps := regexp.MustCompile(`<text [^>]*fill="#555" text-anchor="start" font-size="12">((?:wrote )?\d+)</text>`)
	for _, tc := range []struct {
		fencing bool
		want    string
	}{{false, "wrote 34|wrote 33"}, {true, "33|34"}} {
		var b strings.Builder
		if err := render.HTML(&b, "k", kleppmann(t, tc.fencing, nil)); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, m := range steps.FindAllStringSubmatch(b.String(), -1) {
			got = append(got, m[1])
		}
		if strings.Join(got, "|") != tc.want {
			t.Errorf("fencing %v: storage token steps %v, want %s", tc.fencing, got, tc.want)
		}
		if strings.Contains(b.String(), "seed") {
			t.Errorf("fencing %v: the page mentions a seed", tc.fencing)
		}
	}
}

// TestSVGLostMarkIsNoRefusal: the mark on an accepted write that a later
// write replaced (A's B1 without fencing) is drawn, and is no cross, the
// look of a refusal.
func TestSVGLostMarkIsNoRefusal(t *testing.T) {
	var b strings.Builder
	if err := render.HTML(&b, "k", kleppmann(t, false, nil)); err != nil {
		t.Fatal(err)
	}
	marks := regexp.MustCompile(`<g class="lost"[^>]*>.*?</g>`).FindAllString(b.String(), -1)
	if len(marks) != 1 {
		t.Fatalf("%d marks of a lost write, want 1 (B1's)", len(marks))
	}
	if strings.Contains(marks[0], "<path") {
		t.Errorf("the lost write's mark %s draws a cross, as a refusal looks", marks[0])
	}
}

// TestSVGRenewalRefusedToldWhenHeard: the lease service refuses A's
// renewal at 17.5 s, but A hears of it at 17.6 s, the tour's step that
// tells it: the label carries that moment (data-from), after its event's.
func TestSVGRenewalRefusedToldWhenHeard(t *testing.T) {
	var b strings.Builder
	if err := render.HTML(&b, "k", kleppmann(t, false, nil)); err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`<text [^>]*data-x="([\d.]+)"[^>]*data-from="([\d.]+)"[^>]*>renewal of 33 refused<`).FindStringSubmatch(b.String())
	if m == nil {
		t.Fatal("the label \"renewal of 33 refused\" has no data-from")
	}
	if x, from := m[1], m[2]; !(len(from) > 0 && parse(t, from) > parse(t, x)) {
		t.Errorf("renewal of 33 refused: data-from %s, not after its event's x %s", from, x)
	}
}

// parse is s as a number, or fails t.
func parse(t *testing.T, s string) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestSVGMarksLeaseEnds: A's lease 33, expired at 10.1 s, and B's
// release of lease 34 at 12.9 s, which the tour tells, are marked on the
// lease lane at their moments, where the bars end, by lines of a class
// the page finds to lift them above its tour's veil.
func TestSVGMarksLeaseEnds(t *testing.T) {
	var b strings.Builder
	l := render.Layout{Width: 1000, End: 20 * time.Second}
	if err := render.SVGLayout(&b, kleppmann(t, true, nil), "k", l); err != nil {
		t.Fatal(err)
	}
	for _, m := range []struct {
		class string
		at    time.Duration
	}{{"expired", 10100 * time.Millisecond}, {"released", 12900 * time.Millisecond}} {
		if !strings.Contains(b.String(), fmt.Sprintf(`<line class="%s" x1="%.1f"`, m.class, l.X(m.at))) {
			t.Errorf("no %s mark at x %.1f (%s)", m.class, l.X(m.at), m.at)
		}
	}
}

// TestSVGLegendNamesThePause: a run with a pause has a legend entry for
// its grey dashed box ("paused"), drawn as the box is; one without has
// none. A student took the box for something unexplained where the view
// did not show its "paused 15s" label.
func TestSVGLegendNamesThePause(t *testing.T) {
	box := regexp.MustCompile(`<rect class="legend" [^>]*fill="#999" fill-opacity="0.3" stroke="#666" stroke-dasharray="4 3"/>`)
	text := regexp.MustCompile(`<text [^>]*class="legend" data-short="paused">paused</text>`)
	for _, tc := range []struct {
		pause time.Duration
		want  bool
	}{{15 * time.Second, true}, {0, false}} {
		var b strings.Builder
		if err := render.SVG(&b, kleppmann(t, false, func(p *sim.Params) { p.Pause = tc.pause }), "k"); err != nil {
			t.Fatal(err)
		}
		if got := box.MatchString(b.String()) && text.MatchString(b.String()); got != tc.want {
			t.Errorf("pause %v: a legend entry for the pause %v, want %v", tc.pause, got, tc.want)
		}
	}
}
