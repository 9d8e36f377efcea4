package sim_test

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/valid"
	"github.com/fencekit/fencekit/sim"
	"github.com/fencekit/fencekit/sim/render"
)

// printAll returns everything a run can print, so that determinism is
// checked on the bytes users see.
func printAll(t *testing.T, runs ...*sim.Result) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := render.Text(&b, "t", runs...); err != nil {
		t.Fatal(err)
	}
	if err := render.JSON(&b, runs...); err != nil {
		t.Fatal(err)
	}
	if err := render.HTML(&b, "t", runs...); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func runSchedule(t *testing.T, p sim.ExploreParams, seed uint64, fencing bool) *sim.Result {
	t.Helper()
	cfg, err := sim.ExploreSchedule(p, seed, storage(fencing))
	if err != nil {
		t.Fatal(err)
	}
	res, err := sim.Run(cfg)
	if err != nil {
		t.Fatalf("failed for seed=%d: %v", seed, err)
	}
	return res
}

// TestSameSeedSameLog runs random schedules twice, on fresh and reused
// runners, and requires byte-identical output; different seeds must give
// different logs.
func TestSameSeedSameLog(t *testing.T) {
	p := sim.DefaultExploreParams()
	distinct := map[string]bool{}
	reused := sim.NewRunner()
	for seed := uint64(1); seed <= 20; seed++ {
		for _, fencing := range []bool{false, true} {
			a := printAll(t, runSchedule(t, p, seed, fencing))
			b := printAll(t, runSchedule(t, p, seed, fencing))
			if !bytes.Equal(a, b) {
				t.Fatalf("failed for seed=%d fencing=%v: two runs printed different logs", seed, fencing)
			}
			cfg, _ := sim.ExploreSchedule(p, seed, storage(fencing))
			res, err := reused.Run(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if c := printAll(t, res); !bytes.Equal(a, c) {
				t.Fatalf("failed for seed=%d fencing=%v: a reused Runner printed a different log", seed, fencing)
			}
			distinct[string(a)] = true
		}
	}
	if len(distinct) < 35 {
		t.Fatalf("only %d distinct logs from 40 runs: the seed barely matters", len(distinct))
	}
}

// storage returns the claim storage for fencing on, none for off.
func storage(fencing bool) sim.Storage {
	if fencing {
		return sim.StorageClaim
	}
	return sim.StorageOff
}

func kleppmann(t *testing.T, fencing bool, edit func(*sim.Params)) *sim.Result {
	t.Helper()
	return runScenario(t, "kleppmann", fencing, edit)
}

// writesBy returns client name → writes, in order.
func writesBy(r *sim.Result) map[string][]sim.Write {
	m := map[string][]sim.Write{}
	for _, w := range r.Writes {
		m[r.Clients[w.Client]] = append(m[r.Clients[w.Client]], w)
	}
	return m
}

// TestKleppmannWithoutFencing is Kleppmann's figure: B writes while A is
// paused, then A's late write with token 33 lands on top of B's data.
func TestKleppmannWithoutFencing(t *testing.T) {
	r := kleppmann(t, false, nil)
	w := writesBy(r)
	if len(w["A"]) != 1 || len(w["B"]) != 1 {
		t.Fatalf("writes = %+v, want one each", w)
	}
	a, b := w["A"][0], w["B"][0]
	if a.Token != 33 || b.Token != 34 {
		t.Fatalf("tokens A %d B %d, want 33 and 34", a.Token, b.Token)
	}
	if !a.Accepted || !b.Accepted || a.Live || !b.Live {
		t.Fatalf("A %+v B %+v: want both accepted, A's lease expired, B's live", a, b)
	}
	if !(b.At < a.At) {
		t.Fatalf("B wrote at %v, A at %v: in Kleppmann's figure B writes first", b.At, a.At)
	}
	// A's stale write clobbers B's newer data: tokens went backwards.
	if got := r.ValueString(r.Final); got != `"A1"` {
		t.Fatalf("final value %s, want A's stale data only", got)
	}
	if lost := r.Lost(); len(lost) != 1 || r.Writes[lost[0]].Token != 34 {
		t.Fatalf("lost = %v, want B's write", lost)
	}
	var ve *sim.ViolationError
	if err := r.Violation(); !errors.As(err, &ve) || !strings.Contains(err.Error(), "failed for seed=1") {
		t.Fatalf("Violation = %v, want a ViolationError naming the seed", err)
	}
	sum := strings.Join(r.Summary(), "\n")
	for _, want := range []string{"TOKENS WENT BACKWARDS: the storage accepted A1 (token 33) at 17.5s after it had accepted B1 (token 34) at 12.7s",
		"B's write B1 (token 34, accepted at 12.7s) is LOST", "an older token clobbering newer data", "had expired"} {
		if !strings.Contains(sum, want) {
			t.Errorf("summary lacks %q:\n%s", want, sum)
		}
	}
}

func TestKleppmannWithFencing(t *testing.T) {
	r := kleppmann(t, true, nil)
	w := writesBy(r)
	a, b := w["A"][0], w["B"][0]
	if a.Accepted || !b.Accepted || !(b.At < a.At) {
		t.Fatalf("A %+v B %+v: want B accepted, then A rejected", a, b)
	}
	var rejected *sim.Event
	for i, e := range r.Events {
		if e.Kind == sim.KindWriteRejected {
			rejected = &r.Events[i]
		}
	}
	if rejected == nil || rejected.Token != 33 || rejected.Other != 34 {
		t.Fatalf("rejection event %+v, want token 33 against 34", rejected)
	}
	// The storage's decision is fence.Check's.
	if err := fence.Check(r.Resource, rejected.Token, rejected.Other); !errors.Is(err, fence.ErrStale) {
		t.Fatalf("fence.Check disagrees with the simulated storage: %v", err)
	}
	if r.ValueString(r.Final) != `"B1"` || len(r.Lost()) != 0 || r.Violation() != nil || len(r.StaleAccepted()) != 0 {
		t.Fatalf("final %s lost %v violation %v stale %v", r.ValueString(r.Final), r.Lost(), r.Violation(), r.StaleAccepted())
	}
}

// TestKleppmannLostUpdate has B still working when A resumes: without
// fencing A's late write lands first and B, which read before it,
// silently overwrites it; the tokens stay in order, so only the lost
// write shows the damage. With fencing B's read has already claimed 34.
func TestKleppmannLostUpdate(t *testing.T) {
	slow := func(p *sim.Params) { p.Work = 8 * time.Second }
	off := kleppmann(t, false, slow)
	w := writesBy(off)
	if a, b := w["A"][0], w["B"][0]; !a.Accepted || !b.Accepted || !(a.At < b.At) {
		t.Fatalf("A %+v B %+v: want both accepted, A first", a, b)
	}
	if off.ValueString(off.Final) != `"B1"` || off.Violation() != nil {
		t.Fatalf("final %s violation %v, want \"B1\" and tokens in order", off.ValueString(off.Final), off.Violation())
	}
	if lost := off.Lost(); len(lost) != 1 || off.Writes[lost[0]].Token != 33 {
		t.Fatalf("lost %v, want A's write", lost)
	}
	on := kleppmann(t, true, slow)
	if on.Violation() != nil || len(on.Lost()) != 0 || on.ValueString(on.Final) != `"B1"` {
		t.Fatalf("with fencing: violation %v lost %v final %s", on.Violation(), on.Lost(), on.ValueString(on.Final))
	}
	if sum := strings.Join(on.Summary(), "\n"); !strings.Contains(sum, "claimed by B's read at 10.5s") {
		t.Fatalf("summary does not say B's read fenced A out:\n%s", sum)
	}
}

// TestKleppmannShortPause: a pause shorter than the TTL is harmless.
func TestKleppmannShortPause(t *testing.T) {
	for _, fencing := range []bool{false, true} {
		r := kleppmann(t, fencing, func(p *sim.Params) { p.Pause = 5 * time.Second })
		if len(r.StaleAccepted()) != 0 || len(r.Lost()) != 0 || r.Violation() != nil {
			t.Fatalf("fencing=%v: stale %v lost %v violation %v", fencing, r.StaleAccepted(), r.Lost(), r.Violation())
		}
		for _, w := range r.Writes {
			if !w.Accepted {
				t.Fatalf("fencing=%v: write %+v rejected", fencing, w)
			}
		}
		if got := r.ValueString(r.Final); got != `"A1 B1"` {
			t.Fatalf("fencing=%v: final %s, want both writes in order", fencing, got)
		}
	}
}

// TestKleppmannPauseAgainstRemainingLease: what matters is the pause
// against what is left of the lease, not against the TTL. A stops 2.3s
// after the grant, before its first heartbeat, so an 8.5s pause (shorter
// than the 10s TTL) outlasts the lease and A's late write is lost without
// fencing; a 7.5s pause ends in time.
func TestKleppmannPauseAgainstRemainingLease(t *testing.T) {
	r := kleppmann(t, false, func(p *sim.Params) { p.Pause = 8500 * time.Millisecond })
	if lost := r.Lost(); len(lost) != 1 || r.Writes[lost[0]].Token != 33 || len(r.StaleAccepted()) != 1 {
		t.Fatalf("8.5s pause: lost %v stale %v, want A's write accepted late and lost", lost, r.StaleAccepted())
	}
	r = kleppmann(t, false, func(p *sim.Params) { p.Pause = 7500 * time.Millisecond })
	if len(r.Lost()) != 0 || len(r.StaleAccepted()) != 0 {
		t.Fatalf("7.5s pause: lost %v stale %v, want none", r.Lost(), r.StaleAccepted())
	}
}

// TestKleppmannFlagsMatter: without a heartbeat, or with a longer TTL, the
// outcome follows the pause against the TTL.
func TestKleppmannFlagsMatter(t *testing.T) {
	r := kleppmann(t, false, func(p *sim.Params) { p.TTL = 30 * time.Second })
	if len(r.StaleAccepted()) != 0 || len(r.Lost()) != 0 {
		t.Fatalf("TTL 30s > pause 15s: stale %v lost %v", r.StaleAccepted(), r.Lost())
	}
	r = kleppmann(t, false, func(p *sim.Params) { p.Heartbeat = 0 })
	if len(r.Lost()) != 1 {
		t.Fatalf("no heartbeat: lost %v, want A's write", r.Lost())
	}
}

func runScenario(t *testing.T, name string, fencing bool, edit func(*sim.Params)) *sim.Result {
	t.Helper()
	return runStorage(t, name, storage(fencing), edit)
}

func TestCrashDowntime(t *testing.T) {
	r := runScenario(t, "crash", true, nil)
	d := r.Downtime()
	if len(d) != 1 || d[0].Token != 33 || d[0].From != 500*time.Millisecond {
		t.Fatalf("downtime %+v", d)
	}
	if got := d[0].To - d[0].From; got < 59*time.Second || got > 60*time.Second {
		t.Fatalf("downtime %v with a 60s TTL", got)
	}
	short := runScenario(t, "crash", true, func(p *sim.Params) { p.TTL, p.Heartbeat = 10*time.Second, 3*time.Second })
	if d := short.Downtime(); len(d) != 1 || d[0].To-d[0].From > 10*time.Second {
		t.Fatalf("TTL 10s downtime %+v", d)
	}
	if !slices.ContainsFunc(short.Writes, func(w sim.Write) bool { return w.Accepted && w.Token == 34 }) {
		t.Fatal("B never wrote after the crash")
	}
}

func TestHeartbeatKeepsSlowJob(t *testing.T) {
	r := runScenario(t, "heartbeat", false, nil)
	if got := r.ValueString(r.Final); got != `"A1 A2 A3 B1"` {
		t.Fatalf("final %s: A's 3-step job should finish before B starts", got)
	}
	if len(r.StaleAccepted()) != 0 {
		t.Fatalf("stale writes %v", r.StaleAccepted())
	}
	none := runScenario(t, "heartbeat", false, func(p *sim.Params) { p.Heartbeat = 0 })
	if slices.ContainsFunc(none.Events, func(e sim.Event) bool { return e.Kind == sim.KindCheckFailed && e.Client == 0 }) == false {
		t.Fatal("without heartbeat A's own clock should stop its job")
	}
	if n := len(writesBy(none)["A"]); n >= 3 {
		t.Fatalf("without heartbeat A still wrote %d times", n)
	}
}

// TestPauseStopsHeartbeat: A's pending write reaches the storage before A
// learns (from a refused heartbeat or its own clock) that it lost the lease.
func TestPauseStopsHeartbeat(t *testing.T) {
	r := runScenario(t, "pause-heartbeat", false, nil)
	var lostAt, staleAt time.Duration = -1, -1
	for _, e := range r.Events {
		if (e.Kind == sim.KindLost || e.Kind == sim.KindCheckFailed) && e.Client == 0 && lostAt < 0 {
			lostAt = e.At
		}
		if e.Kind == sim.KindWriteAccepted && e.Client == 0 && !r.Writes[e.Write].Live {
			staleAt = e.At
		}
	}
	if lostAt < 0 || staleAt < 0 || staleAt > lostAt {
		t.Fatalf("stale write at %v, lease loss noticed at %v: want the write first", staleAt, lostAt)
	}
	if on := runScenario(t, "pause-heartbeat", true, nil); len(on.Lost()) != 0 || len(on.StaleAccepted()) != 0 {
		t.Fatalf("with fencing: lost %v stale %v", on.Lost(), on.StaleAccepted())
	}
}

func TestDrift(t *testing.T) {
	if r := runScenario(t, "drift", false, nil); r.Violation() == nil {
		t.Fatal("a half-speed clock without fencing should clobber B's write")
	}
	if r := runScenario(t, "drift", true, nil); r.Violation() != nil || len(r.Lost()) != 0 {
		t.Fatalf("with fencing: %v, lost %v", r.Violation(), r.Lost())
	}
	if r := runScenario(t, "drift", false, func(p *sim.Params) { p.Drift = 0 }); len(r.StaleAccepted()) != 0 {
		t.Fatalf("an exact clock wrote after expiry: %v", r.StaleAccepted())
	}
}

func TestConfigErrors(t *testing.T) {
	ok := sim.Config{TTL: time.Second, Clients: []sim.ClientSpec{{}}}
	for _, tc := range []struct {
		edit func(*sim.Config)
		want string
	}{
		{func(c *sim.Config) { c.TTL = 0 }, "TTL"},
		{func(c *sim.Config) { c.Heartbeat = -1 }, "Heartbeat"},
		{func(c *sim.Config) { c.DelayMin, c.DelayMax = 2, 1 }, "DelayMax"},
		{func(c *sim.Config) { c.Clients = nil }, "clients"},
		{func(c *sim.Config) { c.Clients = []sim.ClientSpec{{Drift: -0.95}} }, "Drift"},
		{func(c *sim.Config) { c.Clients = []sim.ClientSpec{{Pauses: []sim.Pause{{At: -1}}}} }, "pause"},
		{func(c *sim.Config) { c.FirstToken = valid.MaxToken + 1 }, "FirstToken"},
	} {
		c := ok
		tc.edit(&c)
		if _, err := sim.Run(&c); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "sim: ") {
			t.Errorf("Run(%+v) = %v, want an error naming %s", c, err, tc.want)
		}
	}
	if _, err := sim.Run(nil); err == nil {
		t.Error("Run(nil) succeeded")
	}
	if _, err := sim.Lookup("nosuch"); err == nil || !strings.Contains(err.Error(), "kleppmann") {
		t.Errorf("Lookup(nosuch) = %v, want the known names", err)
	}
}

// TestMaxSteps: a run that needs more actions than allowed fails naming its seed.
func TestMaxSteps(t *testing.T) {
	cfg, _ := sim.ExploreSchedule(sim.DefaultExploreParams(), 5, sim.StorageClaim)
	cfg.MaxSteps = 10
	if _, err := sim.Run(cfg); err == nil || !strings.Contains(err.Error(), "failed for seed=5") {
		t.Fatalf("Run = %v, want failed for seed=5", err)
	}
}

// TestTieBreak: actions due at the same instant run in scheduling order;
// with zero delays many events share a timestamp, and the log stays the
// same run after run.
func TestTieBreak(t *testing.T) {
	p := sim.DefaultExploreParams()
	p.DelayMax, p.Work = 0, 0
	rng := rand.New(rand.NewPCG(3, 3))
	for range 20 {
		seed := rng.Uint64() % 1000
		a := printAll(t, runSchedule(t, p, seed, true))
		b := printAll(t, runSchedule(t, p, seed, true))
		if !bytes.Equal(a, b) {
			t.Fatalf("failed for seed=%d: simultaneous events reordered", seed)
		}
	}
}

// TestScenarioUses: a knob changes a scenario's configuration exactly when
// the scenario says it uses it, so fencesim can refuse ignored flags.
func TestScenarioUses(t *testing.T) {
	edits := map[string]func(*sim.Params){
		"ttl":       func(p *sim.Params) { p.TTL += time.Second },
		"heartbeat": func(p *sim.Params) { p.Heartbeat += time.Second },
		"pause":     func(p *sim.Params) { p.Pause += time.Second },
		"pause-at":  func(p *sim.Params) { p.PauseAt += time.Second },
		"work":      func(p *sim.Params) { p.Work += time.Second },
		"delay":     func(p *sim.Params) { p.Delay += time.Millisecond },
		"drift":     func(p *sim.Params) { p.Drift += 0.25 },
		"seed":      func(p *sim.Params) { p.Seed++ },
	}
	for _, sc := range sim.Scenarios() {
		base, err := sc.Config(sc.Defaults)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"ttl", "heartbeat", "pause", "pause-at", "work", "delay", "drift", "seed"} {
			p := sc.Defaults
			edits[name](&p)
			cfg, err := sc.Config(p)
			if err != nil {
				t.Fatal(err)
			}
			if changed := !reflect.DeepEqual(base, cfg); changed != sc.Uses(name) {
				t.Errorf("%s: changing %s changes the config: %v; Uses(%q) = %v", sc.Name, name, changed, name, sc.Uses(name))
			}
		}
	}
}

// TestHorizonCut: a run stopped at its horizon with work pending says so,
// and the scenarios' horizon grows with their knobs.
func TestHorizonCut(t *testing.T) {
	cfg := &sim.Config{TTL: 10 * time.Second, Horizon: 5 * time.Second, Storage: sim.StorageClaim,
		Clients: []sim.ClientSpec{{Name: "A", Step: 8 * time.Second}}}
	r, err := sim.Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if sum := strings.Join(r.Summary(), "\n"); !r.Cut || !strings.Contains(sum, "CUT at its horizon (5s)") {
		t.Fatalf("cut %v, summary:\n%s", r.Cut, sum)
	}
	cfg.Horizon = 0 // default 1h: the job finishes
	if r, err = sim.Run(cfg); err != nil || r.Cut || len(r.Writes) != 1 {
		t.Fatalf("cut %v writes %v err %v", r.Cut, r.Writes, err)
	}
	long := kleppmann(t, true, func(p *sim.Params) { p.TTL, p.Pause = time.Hour, 2*time.Hour })
	w := writesBy(long)
	if long.Cut || len(w["A"]) != 1 || w["A"][0].Accepted || len(w["B"]) != 1 || !w["B"][0].Accepted {
		t.Fatalf("TTL 1h, pause 2h: cut %v writes %+v", long.Cut, w)
	}
}
