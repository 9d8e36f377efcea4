package sim

import (
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/fencekit/fencekit/fence"
)

const (
	laneWidth  = 21 // longest read shown in full; lanes widen for long tokens
	leaseWidth = 7
	maxWidth   = 36
	timeWidth  = 8
)

// textRow is one line of one run's timeline: the lease column, then one
// cell per client lane.
type textRow struct {
	at    time.Duration
	cells []string
}

// runRows turns a run's events into timeline rows. Consecutive refusals of
// one client are folded into one row; a paused client's lane shows a bar,
// a crashed client's a cross.
func runRows(r *Result) (rows []textRow, fills [][]string) {
	labels := r.WriteLabels()
	n := len(r.Clients)
	paused := make([]bool, n)
	crashed := make([]bool, n)
	lease := "-"
	fill := func() []string {
		cells := make([]string, n+1)
		cells[0] = lease
		for c := range n {
			switch {
			case crashed[c]:
				cells[c+1] = "  x"
			case paused[c]:
				cells[c+1] = "  ┃"
			}
		}
		return cells
	}
	refusals := make([]int, n) // index of the row holding the client's current refusal run
	for c := range refusals {
		refusals[c] = -1
	}
	refusedCount := make([]int, n)
	refusedTok := make([]fence.Token, n)
	emit := func(at time.Duration, c int, text string) {
		cells := fill()
		if c >= 0 {
			cells[c+1] = text
			refusals[c] = -1
		} else {
			cells[0] = text
		}
		rows = append(rows, textRow{at: at, cells: cells})
	}
	for _, e := range r.Events {
		c := e.Client
		switch e.Kind {
		case KindGranted:
			lease = fmt.Sprintf("%s:%d", r.Clients[c], e.Token)
			emit(e.At, -1, lease)
		case KindExpired:
			lease = "-"
			emit(e.At, -1, "expired")
		case KindReleased:
			lease = "-"
			emit(e.At, c, "released")
		case KindAcquired:
			emit(e.At, c, fmt.Sprintf("acquired %d", e.Token))
		case KindRefused:
			if i := refusals[c]; i >= 0 && refusedTok[c] == e.Other {
				refusedCount[c]++
				rows[i].cells[c+1] = fmt.Sprintf("refused x%d (%d held)", refusedCount[c], e.Other)
				continue
			}
			emit(e.At, c, fmt.Sprintf("refused (%d held)", e.Other))
			refusals[c], refusedCount[c], refusedTok[c] = len(rows)-1, 1, e.Other
		case KindRenewed:
			emit(e.At, c, "heartbeat ok")
		case KindLost:
			emit(e.At, c, "heartbeat: LOST")
		case KindRead:
			ids := r.readAt(e)
			text := "read " + r.ValueString(ids)
			if utf8.RuneCountInString(text) > laneWidth {
				text = fmt.Sprintf("read (%d writes)", len(ids))
			}
			emit(e.At, c, text)
		case KindReadRejected:
			emit(e.At, c, fmt.Sprintf("read REJECTED (%d)", e.Other))
		case KindWriteAccepted:
			emit(e.At, c, fmt.Sprintf("write %s/%d ok", labels[e.Write], e.Token))
		case KindWriteRejected:
			emit(e.At, c, fmt.Sprintf("write %s/%d REJECTED", labels[e.Write], e.Token))
		case KindCheckFailed:
			emit(e.At, c, "lease check: stop")
		case KindPaused:
			paused[c] = true
			emit(e.At, c, "PAUSED "+FormatTime(e.Dur))
		case KindResumed:
			paused[c] = false
			emit(e.At, c, "resumed")
		case KindCrashed:
			crashed[c], paused[c] = true, false
			emit(e.At, c, "CRASHED")
		}
		fills = append(fills[:len(rows)-1], fill())
	}
	return rows, fills
}

// readAt returns the value a read event returned: the Read of the first
// write the client sent after it, or, when it wrote nothing, the writes
// accepted before the read.
func (r *Result) readAt(e Event) []int {
	for _, w := range r.Writes {
		if w.Client == e.Client && w.Token == e.Token && w.Sent >= e.At {
			return w.Read
		}
	}
	var ids []int
	for _, x := range r.Events {
		if x.At > e.At || (x.At == e.At && x.Kind == KindRead) {
			break
		}
		if x.Kind == KindWriteAccepted {
			ids = append(ids[:0], r.Writes[x.Write].Read...)
			ids = append(ids, x.Write)
		}
	}
	return ids
}

func pad(s string, w int) string {
	n := utf8.RuneCountInString(s)
	if n > w {
		return string([]rune(s)[:w])
	}
	return s + strings.Repeat(" ", w-n)
}

// WriteTimeline writes a terminal timeline of one run, or of several runs
// side by side (such as the same scenario with fencing off and on), then
// each run's [Result.Summary]. Rows are virtual times; each run has a
// lease column (the lease service's holder and token) and a lane per client.
func WriteTimeline(w io.Writer, title string, runs ...*Result) error {
	if len(runs) == 0 {
		return fmt.Errorf("sim: WriteTimeline: no runs")
	}
	var b strings.Builder
	if title != "" {
		b.WriteString(title + "\n")
	}
	r0 := runs[0]
	clock := "virtual seconds"
	if r0.recorded {
		clock = "real seconds since the start"
	}
	fmt.Fprintf(&b, "TTL %s, heartbeat %s. Times are %s; \"write A1/33\" is A's first write, carrying token 33.\n",
		FormatTime(r0.TTL), heartbeatText(r0.Heartbeat), clock)
	for _, r := range runs {
		if r.Fencing {
			b.WriteString("With fencing, every read claims the reader's token at the storage and every write is checked against the newest token seen.\n")
			break
		}
	}
	b.WriteString("\n")
	rowsOf := make([][]textRow, len(runs))
	fillsOf := make([][][]string, len(runs))
	for i, r := range runs {
		rowsOf[i], fillsOf[i] = runRows(r)
	}
	leaseW, laneW := 5, 8
	for _, rows := range rowsOf {
		for _, row := range rows {
			leaseW = max(leaseW, utf8.RuneCountInString(row.cells[0]))
			for _, c := range row.cells[1:] {
				laneW = max(laneW, utf8.RuneCountInString(c))
			}
		}
	}
	leaseW, laneW = min(leaseW, maxWidth), min(laneW, maxWidth)
	width := func(r *Result) int { return leaseW + 1 + len(r.Clients)*(laneW+1) }
	// header lines
	b.WriteString(pad("", timeWidth) + " ")
	for _, r := range runs {
		b.WriteString("│ " + pad("fencing "+strings.ToUpper(onOff(r.Fencing)), width(r)))
	}
	b.WriteString("\n" + pad("time", timeWidth) + " ")
	for _, r := range runs {
		b.WriteString("│ " + pad("lease", leaseW) + " ")
		for _, name := range r.Clients {
			b.WriteString(pad(name, laneW) + " ")
		}
	}
	b.WriteString("\n" + strings.Repeat("─", timeWidth+1))
	for _, r := range runs {
		b.WriteString("┼" + strings.Repeat("─", width(r)+1))
	}
	b.WriteString("\n")
	// merge rows by time
	next := make([]int, len(runs))
	for {
		at := time.Duration(-1)
		for i := range runs {
			if j := next[i]; j < len(rowsOf[i]) && (at < 0 || rowsOf[i][j].at < at) {
				at = rowsOf[i][j].at
			}
		}
		if at < 0 {
			break
		}
		lines := 0
		for i := range runs {
			k := 0
			for next[i]+k < len(rowsOf[i]) && rowsOf[i][next[i]+k].at == at {
				k++
			}
			lines = max(lines, k)
		}
		for l := range lines {
			tcol := ""
			if l == 0 {
				tcol = FormatTime(at)
			}
			b.WriteString(fmt.Sprintf("%*s ", timeWidth, tcol))
			for i, r := range runs {
				var cells []string
				if j := next[i] + l; j < len(rowsOf[i]) && rowsOf[i][j].at == at {
					cells = rowsOf[i][j].cells
				} else if j := next[i] + l - 1; j >= 0 && j < len(fillsOf[i]) {
					cells = fillsOf[i][j]
				} else {
					cells = make([]string, len(r.Clients)+1)
					cells[0] = "-"
				}
				b.WriteString("│ " + pad(cells[0], leaseW) + " ")
				for _, c := range cells[1:] {
					b.WriteString(pad(c, laneW) + " ")
				}
			}
			b.WriteString("\n")
		}
		for i := range runs {
			for next[i] < len(rowsOf[i]) && rowsOf[i][next[i]].at == at {
				next[i]++
			}
		}
	}
	for _, r := range runs {
		fmt.Fprintf(&b, "\nFencing %s:\n", strings.ToUpper(onOff(r.Fencing)))
		for _, s := range r.Summary() {
			b.WriteString("  • " + s + "\n")
		}
	}
	_, err := io.WriteString(w, trimLines(b.String()))
	return err
}

func heartbeatText(d time.Duration) string {
	if d == 0 {
		return "none"
	}
	return "every " + FormatTime(d)
}

// trimLines removes trailing spaces from every line.
func trimLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n")
}
