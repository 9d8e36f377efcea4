package render

import (
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/sim"
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
// a crashed client's a cross. fills[i] is the state row i leaves behind,
// which the side-by-side layout repeats while another run has more rows.
func runRows(r *sim.Result) (rows []textRow, fills [][]string) {
	n := len(r.Clients)
	rb := &rowBuilder{r: r, labels: r.WriteLabels(), lease: "-", paused: make([]bool, n), crashed: make([]bool, n),
		refusals: make([]int, n), refusedCount: make([]int, n), refusedTok: make([]fence.Token, n)}
	for c := range rb.refusals {
		rb.refusals[c] = -1
	}
	for _, e := range r.Events {
		rb.event(e)
		if len(rb.rows) > 0 { // events without a row of their own update the last row's state
			rb.fills = append(rb.fills[:len(rb.rows)-1], rb.fill())
		}
	}
	return rb.rows, rb.fills
}

// rowBuilder holds runRows' state: the lease column, which lanes are
// paused or crashed, and each client's current run of refusals.
type rowBuilder struct {
	r               *sim.Result
	labels          []string
	lease           string
	paused, crashed []bool
	refusals        []int // per client: the row holding its current refusal run, or -1
	refusedCount    []int
	refusedTok      []fence.Token
	rows            []textRow
	fills           [][]string
}

// fill returns a row of the current state: the lease, and the bars of
// paused and crashed clients.
func (rb *rowBuilder) fill() []string {
	cells := make([]string, len(rb.paused)+1)
	cells[0] = rb.lease
	for c := range rb.paused {
		switch {
		case rb.crashed[c]:
			cells[c+1] = "  x"
		case rb.paused[c]:
			cells[c+1] = "  ┃"
		}
	}
	return cells
}

// emit adds a row with text in client c's lane, or in the lease column
// when c is -1.
func (rb *rowBuilder) emit(at time.Duration, c int, text string) {
	cells := rb.fill()
	if c >= 0 {
		cells[c+1] = text
		rb.refusals[c] = -1
	} else {
		cells[0] = text
	}
	rb.rows = append(rb.rows, textRow{at: at, cells: cells})
}

// refused folds a refusal into the client's current refusal row when the
// same token still holds the lease.
func (rb *rowBuilder) refused(e sim.Event) {
	c := e.Client
	if i := rb.refusals[c]; i >= 0 && rb.refusedTok[c] == e.Other {
		rb.refusedCount[c]++
		rb.rows[i].cells[c+1] = fmt.Sprintf("lease held by %d x%d", e.Other, rb.refusedCount[c])
		return
	}
	rb.emit(e.At, c, fmt.Sprintf("lease held by %d", e.Other))
	rb.refusals[c], rb.refusedCount[c], rb.refusedTok[c] = len(rb.rows)-1, 1, e.Other
}

func (rb *rowBuilder) event(e sim.Event) {
	c := e.Client
	switch e.Kind {
	case sim.KindGranted:
		rb.lease = fmt.Sprintf("%s:%d", rb.r.Clients[c], e.Token)
		rb.emit(e.At, -1, rb.lease)
	case sim.KindExpired:
		rb.lease = "-"
		rb.emit(e.At, -1, "expired")
	case sim.KindReleased:
		rb.lease = "-"
		rb.emit(e.At, c, "released")
	case sim.KindAcquired:
		rb.emit(e.At, c, fmt.Sprintf("acquired %d", e.Token))
	case sim.KindRefused:
		rb.refused(e)
	case sim.KindRenewed:
		rb.emit(e.At, c, "heartbeat ok")
	case sim.KindLost:
		rb.emit(e.At, c, "heartbeat: LOST")
	case sim.KindRead:
		ids := readAt(rb.r, e)
		claim := ""
		if claims(rb.r.Storage) {
			claim = fmt.Sprintf(" claims %d", e.Token) // the storage records the reader's token
		}
		text := "read " + rb.r.ValueString(ids)
		if utf8.RuneCountInString(text+claim) > laneWidth {
			text = fmt.Sprintf("read (%d writes)", len(ids))
		}
		if utf8.RuneCountInString(text+claim) <= laneWidth {
			text += claim
		}
		rb.emit(e.At, c, text)
	case sim.KindReadRejected:
		rb.emit(e.At, c, fmt.Sprintf("read REJECTED (%d)", e.Other))
	case sim.KindWriteAccepted:
		rb.emit(e.At, c, fmt.Sprintf("write %s/%d ok", rb.labels[e.Write], e.Token))
	case sim.KindWriteRejected:
		rb.emit(e.At, c, fmt.Sprintf("write %s/%d REJECTED", rb.labels[e.Write], e.Token))
	case sim.KindChecked:
		if rb.r.Storage != sim.StorageCheckThenWrite {
			return // an atomic storage checks the write itself: an early check is not the one that counts
		}
		rb.emit(e.At, c, fmt.Sprintf("check %s/%d ok", rb.labels[e.Write], e.Token))
		rb.beforePause(c)
	case sim.KindCheckFailed:
		rb.emit(e.At, c, "lease check: stop")
	case sim.KindPaused:
		rb.paused[c] = true
		rb.emit(e.At, c, "PAUSED "+sim.FormatTime(e.Dur))
	case sim.KindResumed:
		rb.paused[c] = false
		rb.emit(e.At, c, "resumed")
	case sim.KindCrashed:
		rb.crashed[c], rb.paused[c] = true, false
		rb.emit(e.At, c, "CRASHED")
	}
}

// beforePause moves client c's last row, a check it sent before pausing
// but the storage answered at the instant of the pause, above the pause.
func (rb *rowBuilder) beforePause(c int) {
	n := len(rb.rows)
	if n < 2 || !rb.paused[c] || rb.rows[n-2].at != rb.rows[n-1].at || !strings.HasPrefix(rb.rows[n-2].cells[c+1], "PAUSED") {
		return
	}
	rb.rows[n-2], rb.rows[n-1] = rb.rows[n-1], rb.rows[n-2]
}

// readAt returns the value a read event returned: the Read of the first
// write the client sent after it, or, when it wrote nothing, the writes
// accepted before the read.
func readAt(r *sim.Result, e sim.Event) []int {
	for _, w := range r.Writes {
		if w.Client == e.Client && w.Token == e.Token && w.Sent >= e.At {
			return w.Read
		}
	}
	var ids []int
	for _, x := range r.Events {
		if x.At > e.At || (x.At == e.At && x.Kind == sim.KindRead) {
			break
		}
		if x.Kind == sim.KindWriteAccepted {
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

// Text writes a terminal timeline of one run, or of several runs
// side by side (such as the same scenario with fencing off and on), then
// each run's [sim.Result.Summary]. Rows are virtual times; each run has a
// lease column (the lease service's holder and token) and a lane per client.
func Text(w io.Writer, title string, runs ...*sim.Result) error {
	if len(runs) == 0 {
		return fmt.Errorf("render: Text: no runs")
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
		fmt.Fprintf(&b, "\n%s:\n", heading(r.Storage))
		for _, s := range r.Summary() {
			b.WriteString("  • " + s + "\n")
		}
	}
	_, err := io.WriteString(w, trimLines(b.String()))
	return err
}

// firstToken is the token of r's first grant, 0 when nothing was granted.
func firstToken(r *sim.Result) fence.Token {
	for _, e := range r.Events {
		if e.Kind == sim.KindAcquired {
			return e.Token
		}
	}
	return 0
}

// timelineIntro writes the title and the lines that explain the notation.
func timelineIntro(b *strings.Builder, title string, runs []*sim.Result) {
	if title != "" {
		b.WriteString(title + "\n")
	}
	r0 := runs[0]
	clock := "virtual seconds"
	if r0.Recorded {
		clock = "real seconds since the start"
	}
	fmt.Fprintf(b, "TTL %s, heartbeat %s. Times are %s", sim.FormatTime(r0.TTL), heartbeatText(r0.Heartbeat), clock)
	if len(r0.Writes) > 0 {
		w := r0.Writes[0] // labelled X1: its client's first write
		fmt.Fprintf(b, "; \"write %s/%d\" is %s's first write, carrying token %d",
			r0.WriteLabels()[0], w.Token, r0.Clients[w.Client], w.Token)
	}
	b.WriteString(".\n")
	if first := firstToken(r0); !r0.Recorded && first > 0 {
		fmt.Fprintf(b, "Tokens start at %d to stay readable; fencekit's Redis and PostgreSQL leases issue microsecond timestamps (about 1.8e15).\n", first)
	}
	for _, e := range r0.Events {
		if e.Kind == sim.KindAcquired { // the notation, with the first grant
			fmt.Fprintf(b, "The lease column is who the lease service says holds the lease (\"%[1]s:%[2]d\": %[1]s, token %[2]d; \"-\": nobody); ┃ marks a paused process.\n", r0.Clients[e.Client], e.Token)
			break
		}
	}
	if r0.Recorded && r0.Storage.Fenced() {
		b.WriteString("Every store checks each write's token against the newest token it has seen.\n")
	} else {
		for i, r := range runs {
			if i == 0 || r.Storage != runs[i-1].Storage {
				b.WriteString(heading(r.Storage) + ": " + r.Storage.Describe() + ".\n")
			}
		}
	}
	b.WriteString("\n")
}

// timeline lays out the rows of several runs side by side.
type timeline struct {
	b             *strings.Builder
	runs          []*sim.Result
	rows          [][]textRow  // per run
	fills         [][][]string // per run: the cells to repeat after each row
	leaseW, laneW int
}

// leaseSep separates a run's lease column from its client lanes.
const leaseSep = " ┆ "

func (t *timeline) width(r *sim.Result) int { return t.leaseW + 3 + len(r.Clients)*(t.laneW+1) }

func (t *timeline) header() {
	b := t.b
	b.WriteString(pad("", timeWidth) + " ")
	for _, r := range t.runs {
		b.WriteString("│ " + pad(column(r.Storage), t.width(r)))
	}
	b.WriteString("\n" + pad("time", timeWidth) + " ")
	for _, r := range t.runs {
		b.WriteString("│ " + pad("lease", t.leaseW) + leaseSep)
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
			fmt.Fprintf(t.b, "%*s ", timeWidth, sim.FormatTime(at)) // every line: a line without a time reads as later
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
	t.b.WriteString("│ " + pad(cells[0], t.leaseW) + leaseSep)
	for _, c := range cells[1:] {
		t.b.WriteString(pad(c, t.laneW) + " ")
	}
}

// claims reports whether the storage's reads claim the reader's token.
func claims(s sim.Storage) bool {
	return s == sim.StorageClaim || s == sim.StorageCheckThenWrite
}

// modeNames name each storage mode in a column header and at the start
// of a line.
var modeNames = map[sim.Storage][2]string{
	sim.StorageOff:            {"fencing OFF", "Fencing OFF"},
	sim.StorageWrites:         {"WRITE CHECK only", "Write check only"},
	sim.StorageClaim:          {"fencing ON", "Fencing ON"},
	sim.StorageCheckThenWrite: {"CHECK-THEN-WRITE", "Check-then-write"},
}

// column names a storage mode in a timeline's column header.
func column(s sim.Storage) string { return modeNames[s][0] }

// heading names a storage mode at the start of a line.
func heading(s sim.Storage) string { return modeNames[s][1] }

func heartbeatText(d time.Duration) string {
	if d == 0 {
		return "none"
	}
	return "every " + sim.FormatTime(d)
}

// trimLines removes trailing spaces from every line.
func trimLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n")
}
