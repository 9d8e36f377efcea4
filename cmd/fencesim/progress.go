package main

import (
	"fmt"
	"io"
	"strings"
)

// progressBar is a one-line progress bar redrawn in place on a terminal.
type progressBar struct {
	w     io.Writer
	total int
	unit  string // what is counted: "schedules", "points"
}

// newProgress returns a progress bar on w when w is a terminal, and nil
// otherwise: piped or redirected output gets no progress at all.
func newProgress(w io.Writer, total int, unit string) *progressBar {
	if !isTerminal(w) {
		return nil
	}
	return &progressBar{w: w, total: total, unit: unit}
}

// update redraws the bar with done of total; a nil bar does nothing.
func (p *progressBar) update(done int) {
	if p != nil {
		drawProgress(p.w, done, p.total, p.unit)
	}
}

// clear erases the bar's line; a nil bar does nothing.
func (p *progressBar) clear() {
	if p != nil {
		fmt.Fprint(p.w, "\r\033[K")
	}
}

// drawProgress redraws a one-line progress bar.
func drawProgress(w io.Writer, done, total int, unit string) {
	const width = 40
	filled := 0
	if total > 0 {
		filled = min(done*width/total, width)
	}
	fmt.Fprintf(w, "\r[%s%s] %d/%d %s", strings.Repeat("#", filled), strings.Repeat(".", width-filled), done, total, unit)
}
