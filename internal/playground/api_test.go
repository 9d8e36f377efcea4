package playground

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fencekit/fencekit/sim"
)

func TestParseQueryDefaultsAndOverrides(t *testing.T) {
	q, err := ParseQuery("?scenario=kleppmann&pause=12.5s&storage=writes&seed=7&drift=0.3")
	if err != nil {
		t.Fatal(err)
	}
	sc, _ := sim.Lookup("kleppmann")
	want := sc.Defaults
	want.Pause, want.Storage, want.Seed = 12500*time.Millisecond, sim.StorageWrites, 7 // drift: not a kleppmann knob
	if q.Scenario != "kleppmann" || q.Params != want {
		t.Fatalf("got %+v, want %+v", q.Params, want)
	}
	if got := q.Encode(); got != "scenario=kleppmann&ttl=10s&heartbeat=3s&pause-at=2s&pause=12.5s&work=2s&delay=0.1s&write-delay=0s&storage=writes&seed=7" {
		t.Fatalf("Encode = %q", got)
	}
	empty, err := ParseQuery("")
	if err != nil || empty.Scenario != "kleppmann" || empty.Params.Storage != sim.StorageClaim {
		t.Fatalf("empty query: %+v, %v; want kleppmann with write + claim", empty, err)
	}
	resp, err := Run("scenario=check-then-write", 0)
	if err != nil || resp.Runs[0].Storage != "check-then-write" || resp.Runs[1].Storage != "claim" {
		t.Fatalf("check-then-write: %+v, %v; want check-then-write beside write + claim", resp, err)
	}
	if resp.Runs[0].Verdict != "backwards" || resp.Runs[1].Verdict != "safe" {
		t.Errorf("check-then-write: verdicts %q and %q, want backwards and safe", resp.Runs[0].Verdict, resp.Runs[1].Verdict)
	}
}

func TestParseQueryNamesTheProblem(t *testing.T) {
	for query, want := range map[string]string{
		"colour=red":                  `unknown parameter "colour"`,
		"scenario=nope":               `unknown scenario "nope"`,
		"storage=off":                 `storage "off" is not one of writes, claim, check-then-write`,
		"storage=maybe":               `storage "maybe"`,
		"base=maybe":                  `base "maybe" is not off or one of writes, claim, check-then-write`,
		"pause=10":                    `pause "10" is not a duration`,
		"pause=-1s":                   `pause "-1s" must be whole milliseconds`,
		"pause=1.5ms":                 `pause "1.5ms" must be whole milliseconds`,
		"pause=61s":                   `pause "61s" must be whole milliseconds from 0s to 1m0s`,
		"ttl=0s":                      `ttl "0s" must be whole milliseconds from 1s to 1m0s`,
		"heartbeat=5ms":               "heartbeat 5ms is below 250ms",
		"scenario=drift&drift=x":      `drift "x" is not a number`,
		"scenario=drift&drift=-0.95":  `drift "-0.95" is not a number from -0.8 to 1`,
		"scenario=drift&drift=NaN":    `drift "NaN" is not a number`,
		"seed=-1":                     `seed "-1" is not a whole number`,
		"pause=%zz":                   "invalid URL escape",
		"scenario=kleppmann;pause=1s": "invalid semicolon",
	} {
		_, err := ParseQuery(query)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), "playground: ") {
			t.Errorf("ParseQuery(%q) = %v, want an error containing %q", query, err, want)
		}
		if resp, err := Run(query, 0); err == nil || resp != nil {
			t.Errorf("Run(%q) = %v, %v; want the same error", query, resp, err)
		}
	}
}

// TestRunIsTheSimulator checks Run against the simulator directly: the
// counts, verdicts and final values of both runs, and determinism.
func TestRunIsTheSimulator(t *testing.T) {
	resp, err := Run("scenario=kleppmann&pause=15s", 0)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := Run(resp.Query, 0)
	if !reflect.DeepEqual(resp, again) {
		t.Fatal("running the canonical query again gave another response")
	}
	sc, _ := sim.Lookup("kleppmann")
	for i, storage := range []sim.Storage{sim.StorageOff, sim.StorageClaim} {
		p := sc.Defaults
		p.Pause, p.Storage = 15*time.Second, storage
		res, err := sc.Run(p)
		if err != nil {
			t.Fatal(err)
		}
		o := resp.Runs[i]
		if o.Storage != storage.String() || o.Final != res.ValueString(res.Final) || !reflect.DeepEqual(o.Summary, res.Summary()) {
			t.Errorf("run %d: %+v does not match the simulator's %v", i, o, res.Summary())
		}
		if !strings.HasPrefix(o.SVG, "<svg") || !strings.HasSuffix(strings.TrimSpace(o.SVG), "</svg>") {
			t.Errorf("run %d: SVG %.40q...", i, o.SVG)
		}
	}
	if off, on := resp.Runs[0], resp.Runs[1]; off.Verdict != "backwards" || on.Verdict != "safe" || on.Rejected != 1 || len(off.Lost) != 1 {
		t.Errorf("kleppmann with a 15s pause: off %s (lost %v), on %s with %d rejected", off.Verdict, off.Lost, on.Verdict, on.Rejected)
	}
	safe, _ := Run("pause=5s", 0)
	if safe.Runs[0].Verdict != "safe" {
		t.Errorf("a 5s pause: fencing off is %q, want safe", safe.Runs[0].Verdict)
	}
	lost, _ := Run("work=8s&storage=writes", 0)
	if lost.Runs[1].Verdict != "lost" {
		t.Errorf("-work 8s with the write rule only: %q, want a lost update", lost.Runs[1].Verdict)
	}
	b, err := json.Marshal(resp)
	if err != nil || !strings.Contains(string(b), `"sliders":[{"name":"ttl"`) {
		t.Fatalf("JSON for the page: %v %.80s", err, b)
	}
}

// TestExtremeQueriesStayQuick runs the sliders' corners: each must give a
// drawing small enough to redraw as a slider moves.
func TestExtremeQueriesStayQuick(t *testing.T) {
	for _, q := range []string{
		"ttl=1s&heartbeat=250ms&pause=60s&work=20s&write-delay=30s",
		"scenario=heartbeat&ttl=60s&heartbeat=250ms&work=20s",
		"scenario=drift&ttl=1s&drift=1&work=0s",
		"scenario=drift&ttl=1s&drift=-0.8&work=0s",
		"scenario=pause-heartbeat&ttl=1s&heartbeat=250ms&pause=60s&pause-at=20s&delay=2s",
	} {
		resp, err := Run(q, 0)
		if err != nil {
			t.Fatalf("Run(%q): %v", q, err)
		}
		for _, o := range resp.Runs {
			if len(o.SVG) > 500_000 {
				t.Errorf("Run(%q): a %d-byte drawing", q, len(o.SVG))
			}
		}
	}
}

// TestEveryScenarioRuns: each scenario's defaults fit the sliders.
func TestEveryScenarioRuns(t *testing.T) {
	for _, sc := range sim.Scenarios() {
		resp, err := Run("scenario="+sc.Name, 0)
		if err != nil {
			t.Errorf("%s: %v", sc.Name, err)
			continue
		}
		if q, _ := ParseQuery(resp.Query); q.Params.Pause != sc.Defaults.Pause && sc.Uses("pause") {
			t.Errorf("%s: the canonical query %q lost the default pause", sc.Name, resp.Query)
		}
	}
}

func FuzzParseQuery(f *testing.F) {
	for _, s := range []string{"", "scenario=drift&drift=-0.5", "pause=15s&storage=writes&seed=3", "ttl=1s&heartbeat=0s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q, err := ParseQuery(s)
		if err != nil {
			return
		}
		back, err := ParseQuery(q.Encode())
		if err != nil {
			t.Fatalf("ParseQuery(%q) ok, but its encoding %q fails: %v", s, q.Encode(), err)
		}
		if back.Encode() != q.Encode() {
			t.Fatalf("encoding is not stable: %q -> %q", q.Encode(), back.Encode())
		}
	})
}

func TestMapFollowsTheHeartbeat(t *testing.T) {
	svg, err := Map("heartbeat=5s")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(svg, "heartbeat every 1/2 TTL") || !strings.Contains(svg, "80 schedules per point") {
		t.Errorf("Map(heartbeat=5s) subtitle: %.400s", svg)
	}
	if none, _ := Map("heartbeat=0s"); !strings.Contains(none, "no heartbeat") {
		t.Error("Map(heartbeat=0s) does not say no heartbeat")
	}
	if _, err := Map("heartbeat=x"); err == nil || !strings.Contains(err.Error(), `heartbeat "x"`) {
		t.Errorf("Map(heartbeat=x): %v", err)
	}
}
