package render

import (
	"fmt"
	"html"
	"io"
	"strconv"
	"strings"

	"github.com/fencekit/fencekit/sim"
)

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
			"A thick line on a client's lane: the client believes it holds the lease. A bar on the lease lane: "+
			"the lease as the lease service sees it, until it expires (red mark) or is released. "+
			"Red band: the danger, a client that believes it holds a lease the service has expired. "+
			"Step line under the storage: the token the storage holds. "+
			"Dashed red ring: an accepted write, later lost.</p>\n",
			esc(sim.FormatTime(runs[0].TTL)), esc(heartbeatText(runs[0].Heartbeat)), clock)
	}
	for i, r := range runs {
		fmt.Fprintf(&b, "<h2>%s%s</h2>\n", esc(heading(r.Storage)), origin(r))
		writeSVG(&b, r, "run"+strconv.Itoa(i), Layout{})
		b.WriteString("<ul>\n")
		for _, s := range r.Summary() {
			class := ""
			switch {
			case strings.HasPrefix(s, "TOKENS WENT BACKWARDS") || strings.Contains(s, "LOST") || strings.Contains(s, "expired."):
				class = " class=\"bad\""
			case strings.HasPrefix(s, "SAFE") || strings.Contains(s, "REJECTED"):
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
	return SVGLayout(w, r, id, Layout{})
}

// SVGLayout is [SVG] drawn at the size l sets.
func SVGLayout(w io.Writer, r *sim.Result, id string, l Layout) error {
	var b strings.Builder
	writeSVG(&b, r, id, l)
	_, err := io.WriteString(w, b.String())
	return err
}
