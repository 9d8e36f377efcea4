package sim

import (
	"fmt"
	"io"
	"slices"
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
	timelineIntro(&b, title, runs)
	t := &timeline{b: &b, runs: runs, rows: make([][]textRow, len(runs)), fills: make([][][]string, len(runs)),
		leaseW: 5, laneW: 8}
	for i, r := range runs {
		t.rows[i], t.fills[i] = runRows(r)
		for _, row := range t.rows[i] {
			t.leaseW = max(t.leaseW, utf8.RuneCountInString(row.cells[0]))
			for _, c := range row.cells[1:] {
				t.laneW = max(t.laneW, utf8.RuneCountInString(c))
			}
		}
	}
	t.leaseW, t.laneW = min(t.leaseW, maxWidth), min(t.laneW, maxWidth)
	t.header()
	t.body()
	for _, r := range runs {
		fmt.Fprintf(&b, "\nFencing %s:\n", strings.ToUpper(onOff(r.Fencing)))
		for _, s := range r.Summary() {
			b.WriteString("  • " + s + "\n")
		}
	}
	_, err := io.WriteString(w, trimLines(b.String()))
	return err
}

// timelineIntro writes the title and the lines that explain the notation.
func timelineIntro(b *strings.Builder, title string, runs []*Result) {
	if title != "" {
		b.WriteString(title + "\n")
	}
	r0 := runs[0]
	clock := "virtual seconds"
	if r0.recorded {
		clock = "real seconds since the start"
	}
	fmt.Fprintf(b, "TTL %s, heartbeat %s. Times are %s", FormatTime(r0.TTL), heartbeatText(r0.Heartbeat), clock)
	if len(r0.Writes) > 0 {
		w := r0.Writes[0] // labelled X1: its client's first write
		fmt.Fprintf(b, "; \"write %s/%d\" is %s's first write, carrying token %d",
			r0.WriteLabels()[0], w.Token, r0.Clients[w.Client], w.Token)
	}
	b.WriteString(".\n")
	switch {
	case r0.recorded && r0.Fencing:
		b.WriteString("Every store checks each write's token against the newest token it has seen.\n")
	case slices.ContainsFunc(runs, func(r *Result) bool { return r.Fencing }):
		b.WriteString("With fencing, every read claims the reader's token at the storage and every write is checked against the newest token seen.\n")
	}
	b.WriteString("\n")
}

// timeline lays out the rows of several runs side by side.
type timeline struct {
	b             *strings.Builder
	runs          []*Result
	rows          [][]textRow  // per run
	fills         [][][]string // per run: the cells to repeat after each row
	leaseW, laneW int
}

func (t *timeline) width(r *Result) int { return t.leaseW + 1 + len(r.Clients)*(t.laneW+1) }

func (t *timeline) header() {
	b := t.b
	b.WriteString(pad("", timeWidth) + " ")
	for _, r := range t.runs {
		b.WriteString("│ " + pad("fencing "+strings.ToUpper(onOff(r.Fencing)), t.width(r)))
	}
	b.WriteString("\n" + pad("time", timeWidth) + " ")
	for _, r := range t.runs {
		b.WriteString("│ " + pad("lease", t.leaseW) + " ")
		for _, name := range r.Clients {
			b.WriteString(pad(name, t.laneW) + " ")
		}
	}
	b.WriteString("\n" + strings.Repeat("─", timeWidth+1))
	for _, r := range t.runs {
		b.WriteString("┼" + strings.Repeat("─", t.width(r)+1))
	}
	b.WriteString("\n")
}

// body merges the runs' rows by time: rows of one instant share lines,
// and a run with fewer rows at that instant repeats its current state.
func (t *timeline) body() {
	next := make([]int, len(t.runs))
	for {
		at := time.Duration(-1)
		for i := range t.runs {
			if j := next[i]; j < len(t.rows[i]) && (at < 0 || t.rows[i][j].at < at) {
				at = t.rows[i][j].at
			}
		}
		if at < 0 {
			return
		}
		lines := 0
		for i := range t.runs {
			k := 0
			for next[i]+k < len(t.rows[i]) && t.rows[i][next[i]+k].at == at {
				k++
			}
			lines = max(lines, k)
		}
		for l := range lines {
			tcol := ""
			if l == 0 {
				tcol = FormatTime(at)
			}
			fmt.Fprintf(t.b, "%*s ", timeWidth, tcol)
			for i := range t.runs {
				t.cells(t.cellsAt(i, next[i]+l, at))
			}
			t.b.WriteString("\n")
		}
		for i := range t.runs {
			for next[i] < len(t.rows[i]) && t.rows[i][next[i]].at == at {
				next[i]++
			}
		}
	}
}

// cellsAt returns run i's cells for its row j if that row is at time at,
// or else the state its previous row left.
func (t *timeline) cellsAt(i, j int, at time.Duration) []string {
	switch {
	case j < len(t.rows[i]) && t.rows[i][j].at == at:
		return t.rows[i][j].cells
	case j-1 >= 0 && j-1 < len(t.fills[i]):
		return t.fills[i][j-1]
	}
	cells := make([]string, len(t.runs[i].Clients)+1)
	cells[0] = "-"
	return cells
}

func (t *timeline) cells(cells []string) {
	t.b.WriteString("│ " + pad(cells[0], t.leaseW) + " ")
	for _, c := range cells[1:] {
		t.b.WriteString(pad(c, t.laneW) + " ")
	}
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
