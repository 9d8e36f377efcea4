package sweep

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// smallGrid is a grid that runs in a fraction of a second.
func smallGrid() Grid {
	g := DefaultGrid()
	g.Base.Runs = 150
	g.Pause = []float64{0, 0.5, 1}
	return g
}

func run(t *testing.T, g Grid) []Row {
	t.Helper()
	rows, err := Run(context.Background(), g, nil)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// TestLeasesFailPastTheTTLAndFencingHolds is the violation map's claim on
// a small grid: short pauses are safe either way; pauses past the TTL lose
// updates and send tokens backwards without fencing, never with it.
func TestLeasesFailPastTheTTLAndFencingHolds(t *testing.T) {
	rows := run(t, smallGrid())
	modes := []string{"off", "writes", "claim", "check-then-write"}
	if len(rows) != 3*len(modes) {
		t.Fatalf("%d rows, want one per storage mode for 3 points", len(rows))
	}
	for i, r := range rows {
		if r.Storage != modes[i%4] || r.Runs != 150 || r.Writes == 0 {
			t.Errorf("row %d: %+v, want storage %s, 150 runs, some writes", i, r, modes[i%4])
		}
		if r.Storage == "claim" && (r.Lost != 0 || r.Backwards != 0 || r.Safe != r.Runs) {
			t.Errorf("write + claim at pause/TTL %g: %+v, want nothing lost and tokens in order", r.PauseRatio, r)
		}
		if r.Storage == "writes" && r.Backwards != 0 {
			t.Errorf("the write rule at pause/TTL %g: %+v, want tokens in order", r.PauseRatio, r)
		}
		if r.PauseRatio == 0 && (r.Safe != r.Runs || r.Late != 0 || r.Rejected != 0) {
			t.Errorf("no pause: %+v, want every run safe", r)
		}
	}
	off, writes, claim := rows[8], rows[9], rows[10] // pauses of one TTL
	if off.Lost == 0 || off.Backwards == 0 || off.Safe == off.Runs || off.Rejected != 0 {
		t.Errorf("fencing off, pauses of one TTL: %+v, want lost updates and tokens backwards", off)
	}
	if writes.Lost == 0 || writes.Rejected == 0 {
		t.Errorf("write rule only, pauses of one TTL: %+v, want rejections and still lost updates", writes)
	}
	if claim.Rejected == 0 {
		t.Errorf("write + claim, pauses of one TTL: %+v, want stale writes rejected", claim)
	}
}

func TestWorkersDoNotChangeRows(t *testing.T) {
	g := smallGrid()
	g.Base.Runs = 60
	g.Heartbeat = []float64{0, 1.0 / 3}
	g.Workers = 1
	one := run(t, g)
	g.Workers = 3
	if three := run(t, g); !reflect.DeepEqual(one, three) {
		t.Fatalf("1 worker and 3 workers disagree:\n%+v\n%+v", one, three)
	}
}

func TestProgressCountsEveryPoint(t *testing.T) {
	g := smallGrid()
	g.Base.Runs = 5
	g.Workers = 2
	var seen []int
	if _, err := Run(context.Background(), g, func(done, total int) {
		if total != 3 {
			t.Errorf("total %d, want 3", total)
		}
		seen = append(seen, done)
	}); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(seen, []int{1, 2, 3}) {
		t.Fatalf("progress calls %v, want 1 2 3", seen)
	}
}

func TestRunStopsWhenContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Run(ctx, smallGrid(), nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
}

func TestValidateNamesTheProblem(t *testing.T) {
	for _, tc := range []struct {
		change func(*Grid)
		want   string
	}{
		{func(g *Grid) { g.Pause = nil }, "every axis"},
		{func(g *Grid) { g.Pause = []float64{-1} }, "pause/TTL -1"},
		{func(g *Grid) { g.Heartbeat = []float64{101} }, "heartbeat/TTL 101"},
		{func(g *Grid) { g.Drift = []float64{0.95} }, "drift 0.95"},
		{func(g *Grid) { g.Base.Clients = 0 }, "clients 0"},
		{func(g *Grid) { g.Workers = -1 }, "workers -1"},
	} {
		g := DefaultGrid()
		tc.change(&g)
		_, err := Run(context.Background(), g, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "sweep: ") {
			t.Errorf("err %v, want a sweep error naming %q", err, tc.want)
		}
	}
}

func TestCSVAndJSONCarryTheCounts(t *testing.T) {
	rows := run(t, smallGrid())
	var b bytes.Buffer
	if err := WriteCSV(&b, rows); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != len(rows)+1 || !reflect.DeepEqual(recs[0], csvHeader) {
		t.Fatalf("csv has %d records, header %v", len(recs), recs[0])
	}
	for i, r := range rows {
		rec := recs[i+1]
		if rec[3] != r.Storage || rec[5] != strconv.Itoa(r.Safe) || rec[7] != strconv.Itoa(r.Lost) || rec[8] != strconv.Itoa(r.Backwards) {
			t.Errorf("csv record %v does not match row %+v", rec, r)
		}
	}
	b.Reset()
	if err := WriteJSON(&b, rows); err != nil {
		t.Fatal(err)
	}
	var back []Row
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, rows) {
		t.Fatalf("JSON round trip changed the rows:\n%+v\n%+v", back, rows)
	}
}

func TestSVGIsWellFormedWithOneLinePerOutcome(t *testing.T) {
	rows := run(t, smallGrid())
	var b bytes.Buffer
	if err := WriteSVG(&b, rows); err != nil {
		t.Fatal(err)
	}
	lines, texts := 0, []string{}
	dec := xml.NewDecoder(&b)
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			if tok.Name.Local == "polyline" {
				lines++
			}
		case xml.CharData:
			texts = append(texts, string(tok))
		}
	}
	if lines != 4*len(outcomes) {
		t.Errorf("%d polylines, want %d (4 outcomes, 4 storage modes)", lines, 4*len(outcomes))
	}
	all := strings.Join(texts, "|")
	for _, want := range []string{"Fencing off", "Write check only", "claim at read", "Check, then write", "pause / TTL", "150 schedules per point",
		"heartbeat every 1/3 TTL", "lost update and tokens went backwards: 0 at every point"} {
		if !strings.Contains(all, want) {
			t.Errorf("the plot lacks %q", want)
		}
	}
	if n := strings.Count(all, "0 at every point"); n < 2 || n > 3 {
		t.Errorf("the zero note appears %d times, want it on the fenced panels (write rule, write + claim, maybe check-then-write) only", n)
	}
	if err := WriteSVG(io.Discard, nil); err == nil {
		t.Error("WriteSVG of no rows: want an error")
	}
}
