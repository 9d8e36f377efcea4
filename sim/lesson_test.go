package sim_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fencekit/fencekit/sim"
)

// runStorage runs a scenario with one storage mode.
func runStorage(t *testing.T, name string, st sim.Storage, edit func(*sim.Params)) *sim.Result {
	t.Helper()
	sc, err := sim.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	p := sc.Defaults
	p.Storage = st
	if edit != nil {
		edit(&p)
	}
	r, err := sc.Run(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestWorkStopsDuringPause: a paused process does no work, so a step that
// a pause interrupts ends the pause's length later than it would have.
func TestWorkStopsDuringPause(t *testing.T) {
	res, err := sim.Run(&sim.Config{TTL: time.Minute, Clients: []sim.ClientSpec{
		{Name: "A", Step: 2 * time.Second, Pauses: []sim.Pause{{At: time.Second, For: 5 * time.Second}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	// Step from 0s to 1s, paused until 6s, the last second of work until 7s.
	if len(res.Writes) != 1 || res.Writes[0].Sent != 7*time.Second {
		t.Fatalf("writes %+v: want one sent at 7s", res.Writes)
	}
	// A pause counted from the step: 2s into a 2s step is just before the write.
	res, err = sim.Run(&sim.Config{TTL: time.Minute, Clients: []sim.ClientSpec{
		{Name: "A", Step: 2 * time.Second, Pauses: []sim.Pause{{Step: 1, At: 2 * time.Second, For: 5 * time.Second}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Writes) != 1 || res.Writes[0].Sent != 7*time.Second {
		t.Fatalf("writes %+v: want one sent at 7s, when the pause ends", res.Writes)
	}
}

// TestStorageModes is the lesson's two rules: with B still working when A
// writes late (-work 8s), the write check alone lets A's write land and B
// then loses it; the claim made by B's read refuses it.
func TestStorageModes(t *testing.T) {
	slow := func(p *sim.Params) { p.Work = 8 * time.Second }
	want := map[sim.Storage]sim.Verdict{
		sim.StorageOff: sim.VerdictLost, sim.StorageWrites: sim.VerdictLost,
		sim.StorageClaim: sim.VerdictSafe, sim.StorageCheckThenWrite: sim.VerdictSafe,
	}
	for st, v := range want {
		r := runStorage(t, "kleppmann", st, slow)
		if got := r.Verdict(); got != v {
			t.Errorf("kleppmann -work 8s, storage %s: verdict %q, want %q\n%s", st, got, v, strings.Join(r.Summary(), "\n"))
		}
		if r.Storage != st {
			t.Errorf("result says storage %s, ran %s", r.Storage, st)
		}
	}
	// B wrote first (default -work): the write check alone suffices.
	if r := runStorage(t, "kleppmann", sim.StorageWrites, nil); r.Verdict() != sim.VerdictSafe {
		t.Errorf("write check, B first: %v", r.Summary())
	}
}

// TestCheckThenWrite: a storage that checks the token in one request and
// writes in another lets a holder paused between the two write over a
// newer holder's data; the atomic storage, facing the same client (check,
// pause, write), refuses the late write.
func TestCheckThenWrite(t *testing.T) {
	r := runStorage(t, "check-then-write", sim.StorageCheckThenWrite, nil)
	if r.Verdict() != sim.VerdictBackwards {
		t.Fatalf("check-then-write: verdict %q, want tokens backwards\n%s", r.Verdict(), strings.Join(r.Summary(), "\n"))
	}
	checked := false
	for _, e := range r.Events {
		checked = checked || (e.Kind == sim.KindChecked && e.Token == 33 && e.At < 10*time.Second)
	}
	if !checked {
		t.Fatal("A's token was not checked before its pause")
	}
	if a := r.Writes[0]; a.Token != 33 || !a.Accepted || a.Live {
		t.Fatalf("A's write %+v: want accepted after its lease expired", a)
	}
	// The same client against the atomic storage: it checks first too, and
	// its late write is refused (B's read claimed 34), so the comparison
	// shows what the atomic storage stops.
	atomic := runStorage(t, "check-then-write", sim.StorageClaim, nil)
	if atomic.Verdict() != sim.VerdictSafe {
		t.Fatalf("atomic storage, same schedule: %v", atomic.Summary())
	}
	if a := atomic.Writes[0]; a.Token != 33 || a.Accepted || a.Sent < 10*time.Second {
		t.Fatalf("atomic storage: A's write %+v, want sent after the pause and refused", a)
	}
	if got := sim.Scenarios()[1].Storages(); len(got) != 2 || got[0] != sim.StorageCheckThenWrite || got[1] != sim.StorageClaim {
		t.Fatalf("check-then-write compares %v", got)
	}
}

// TestVerdicts: each run ends in one of three verdicts, said first.
func TestVerdicts(t *testing.T) {
	for _, tc := range []struct {
		st    sim.Storage
		edit  func(*sim.Params)
		want  sim.Verdict
		first string
	}{
		{sim.StorageOff, nil, sim.VerdictBackwards, "TOKENS WENT BACKWARDS: the storage accepted A1 (token 33)"},
		{sim.StorageOff, func(p *sim.Params) { p.Work = 8 * time.Second }, sim.VerdictLost, "A WRITE WAS LOST: the tokens reached the storage in order"},
		{sim.StorageClaim, nil, sim.VerdictSafe, "SAFE: 1 write(s) accepted, 1 rejected"},
	} {
		r := runStorage(t, "kleppmann", tc.st, tc.edit)
		if r.Verdict() != tc.want || !strings.HasPrefix(r.Summary()[0], tc.first) {
			t.Errorf("storage %s: verdict %q, summary %q; want %q, %q", tc.st, r.Verdict(), r.Summary()[0], tc.want, tc.first)
		}
	}
	for v, s := range map[sim.Verdict]string{sim.VerdictSafe: "safe", sim.VerdictLost: "a write lost", sim.VerdictBackwards: "tokens went backwards"} {
		if v.String() != s {
			t.Errorf("%d.String() = %q", v, v.String())
		}
	}
}

// TestStoryFollowsParams: the scenario's intro is built from its knobs,
// so that it never says what the run does not do.
func TestStoryFollowsParams(t *testing.T) {
	sc, _ := sim.Lookup("kleppmann")
	story := func(edit func(*sim.Params)) string {
		p := sc.Defaults
		edit(&p)
		return sc.Story(p)
	}
	for _, tc := range []struct {
		edit      func(*sim.Params)
		want, not string
	}{
		{func(p *sim.Params) {}, "for 15s, longer than the 10s TTL", "shorter"},
		{func(p *sim.Params) { p.Pause = 9500 * time.Millisecond }, "for 9.5s, shorter than the 10s TTL", "longer"},
		{func(p *sim.Params) { p.TTL = 30 * time.Second }, "shorter than the 30s TTL", "longer"},
		{func(p *sim.Params) { p.Heartbeat = 0 }, "A has no heartbeat", "every 3s"},
		{func(p *sim.Params) { p.PauseAt = time.Second }, "with 1s of work left", "just before"},
		{func(p *sim.Params) { p.Work = 8 * time.Second }, "works for 8s", "works for 2s"},
	} {
		s := story(tc.edit)
		if !strings.Contains(s, tc.want) || strings.Contains(s, tc.not) {
			t.Errorf("story %q: want %q, not %q", s, tc.want, tc.not)
		}
	}
}

// TestSummaryTellsThePause: the summary says whether the paused client's
// lease outlived the pause.
func TestSummaryTellsThePause(t *testing.T) {
	r := runStorage(t, "kleppmann", sim.StorageOff, nil)
	if s := strings.Join(r.Summary(), "\n"); !strings.Contains(s, "A was paused from 2.4s to 17.4s (15s) holding lease 33, which expired at 10.1s, during the pause") {
		t.Fatalf("summary:\n%s", s)
	}
	r = runStorage(t, "kleppmann", sim.StorageOff, func(p *sim.Params) { p.Pause = 5 * time.Second })
	if s := strings.Join(r.Summary(), "\n"); !strings.Contains(s, "holding lease 33, which was still valid when it resumed") {
		t.Fatalf("summary:\n%s", s)
	}
}

// TestExploreWarnings: explore says when its pauses cannot outlast a lease.
func TestExploreWarnings(t *testing.T) {
	p := sim.DefaultExploreParams()
	if w := p.Warnings(); len(w) != 0 {
		t.Fatalf("defaults warn: %v", w)
	}
	p.TTL = time.Minute // pauses of at most 30s, renewed every 3s
	if w := p.Warnings(); len(w) != 1 || !strings.Contains(w[0], "no pause can outlast a lease") {
		t.Fatalf("-ttl 60s: %v", w)
	}
	p = sim.DefaultExploreParams()
	p.PauseMax = 9 * time.Second
	if w := p.Warnings(); len(w) != 1 || !strings.Contains(w[0], "not longer than the 10s TTL") {
		t.Fatalf("-pause-max 9s: %v", w)
	}
	p.PauseProb = 0
	if w := p.Warnings(); len(w) != 1 || !strings.Contains(w[0], "no pauses") {
		t.Fatalf("-pause-prob 0: %v", w)
	}
}

// TestExploreDowntime: the explorer's downtime tally equals the sum of
// Result.Downtime over the same schedules, and a longer TTL costs more.
func TestExploreDowntime(t *testing.T) {
	p := sim.DefaultExploreParams()
	p.Runs, p.Seed, p.CrashProb = 300, 11, 0.5
	p.Storages = []sim.Storage{sim.StorageClaim}
	rep, err := sim.Explore(context.Background(), p, nil)
	if err != nil {
		t.Fatal(err)
	}
	var runs int
	var total time.Duration
	for i := range p.Runs {
		r := runSchedule(t, p, p.Seed+uint64(i), true)
		counted := false
		for _, sp := range r.Downtime() {
			if sp.To >= 0 {
				total += sp.To - sp.From
				counted = true
			}
		}
		if counted {
			runs++
		}
	}
	on := rep.Tally(sim.StorageClaim)
	if on.DowntimeRuns != runs || on.Downtime != total || runs == 0 {
		t.Fatalf("tally: %d runs, %v; from the results: %d runs, %v", on.DowntimeRuns, on.Downtime, runs, total)
	}
	p.TTL = 30 * time.Second
	long, err := sim.Explore(context.Background(), p, nil)
	if err != nil {
		t.Fatal(err)
	}
	lt := long.Tally(sim.StorageClaim)
	if lt.Downtime/time.Duration(lt.DowntimeRuns) <= total/time.Duration(runs) {
		t.Fatalf("mean downtime with a 30s TTL %v, with 10s %v", lt.Downtime/time.Duration(lt.DowntimeRuns), total/time.Duration(runs))
	}
}
