package sim_test

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/fencekit/fencekit/sim"
)

// TestExploreInvariants is the safety property over 10,000 seeded random
// schedules (20,000 runs): with fencing on no write is ever accepted out of
// token order and no accepted write is lost; with fencing off, schedules
// with pauses longer than the TTL do break the invariant.
func TestExploreInvariants(t *testing.T) {
	p := sim.DefaultExploreParams()
	p.Runs, p.Seed, p.Workers = 10000, 1, 2
	rep, err := sim.Explore(context.Background(), p, nil)
	if err != nil {
		t.Fatal(err)
	}
	off, on := rep.Tally(sim.StorageOff), rep.Tally(sim.StorageClaim)
	if on.Violations != 0 || on.LostRuns != 0 {
		seed := uint64(0)
		if len(on.Seeds) > 0 {
			seed = on.Seeds[0]
		}
		t.Fatalf("failed for seed=%d: fencing on: %d violations, %d runs lost a write", seed, on.Violations, on.LostRuns)
	}
	if off.Violations == 0 || off.LostRuns == 0 {
		t.Fatalf("fencing off found no violation in %d runs (%d with long pauses)", p.Runs, rep.LongPauses)
	}
	if on.Rejected == 0 || off.Rejected != 0 {
		t.Fatalf("rejections: on %d, off %d", on.Rejected, off.Rejected)
	}
	if len(off.Seeds) != off.Violations || rep.LongPauses == 0 {
		t.Fatalf("%d seeds for %d violations, %d long pauses", len(off.Seeds), off.Violations, rep.LongPauses)
	}
	// Every listed seed replays to the same violation, and with fencing
	// the same schedule is safe.
	for _, seed := range off.Seeds[:min(50, len(off.Seeds))] {
		if r := runSchedule(t, p, seed, false); r.Violation() == nil {
			t.Fatalf("failed for seed=%d: listed as violating but replays clean", seed)
		}
		if r := runSchedule(t, p, seed, true); r.Violation() != nil || len(r.Lost()) != 0 {
			t.Fatalf("failed for seed=%d: fencing on: %v, lost %v", seed, r.Violation(), r.Lost())
		}
	}
	// The same seed explores the same schedules, whatever the number of
	// workers (first 1,000 again, on 1 and 3 workers).
	p.Runs, p.Workers = 1000, 1
	first, err1 := sim.Explore(context.Background(), p, nil)
	p.Workers = 3
	again, err2 := sim.Explore(context.Background(), p, nil)
	again.Params.Workers = 1
	if err1 != nil || err2 != nil || !reflect.DeepEqual(first, again) {
		t.Fatalf("explorations with the same seed differ (%v, %v)", err1, err2)
	}
}

// TestExploreNoFaultsNoViolations: without pauses, drift or message
// delays, leases with heartbeats alone keep writes in order; with the
// default drift, delays and crashes but no pauses, still: every violation
// above needs a pause (docs/fencing.md says so).
func TestExploreNoFaultsNoViolations(t *testing.T) {
	p := sim.DefaultExploreParams()
	p.Runs, p.PauseProb, p.DriftMax, p.DelayMax = 500, 0, 0, 0
	rep, err := sim.Explore(context.Background(), p, nil)
	if err != nil {
		t.Fatal(err)
	}
	off, on := rep.Tally(sim.StorageOff), rep.Tally(sim.StorageClaim)
	if off.Violations != 0 || off.StaleRuns != 0 || on.Violations != 0 || on.StaleRuns != 0 {
		t.Fatalf("failed for seed=%v: no faults but %d/%d violations, %d/%d stale (off/on)", off.Seeds, off.Violations, on.Violations, off.StaleRuns, on.StaleRuns)
	}
	p = sim.DefaultExploreParams()
	p.Runs, p.PauseProb = 2000, 0
	if rep, err = sim.Explore(context.Background(), p, nil); err != nil {
		t.Fatal(err)
	}
	off, on = rep.Tally(sim.StorageOff), rep.Tally(sim.StorageClaim)
	if off.Violations != 0 || off.LostRuns != 0 || on.Violations != 0 || on.LostRuns != 0 {
		t.Fatalf("failed for seed=%v: no pauses but %d/%d violations, %d/%d runs lost a write (off/on)", off.Seeds, off.Violations, on.Violations, off.LostRuns, on.LostRuns)
	}
	// Only long pauses, nothing else: still violations without fencing.
	p.PauseProb, p.PauseMax, p.CrashProb = 1, 40*time.Second, 0
	rep, err = sim.Explore(context.Background(), p, nil)
	if err != nil {
		t.Fatal(err)
	}
	off, on = rep.Tally(sim.StorageOff), rep.Tally(sim.StorageClaim)
	if off.Violations == 0 || on.Violations != 0 || on.LostRuns != 0 {
		t.Fatalf("long pauses only: off %d violations, on %d/%d", off.Violations, on.Violations, on.LostRuns)
	}
}

func TestExploreProgressAndCancel(t *testing.T) {
	p := sim.DefaultExploreParams()
	p.Runs, p.Clients, p.Jobs = 2500, 1, 1
	var calls []int
	if _, err := sim.Explore(context.Background(), p, func(done int) { calls = append(calls, done) }); err != nil {
		t.Fatal(err)
	}
	if want := []int{1000, 2000, 2500}; !reflect.DeepEqual(calls, want) {
		t.Fatalf("progress calls %v, want %v", calls, want)
	}
	calls = nil
	p.Workers = 2
	if _, err := sim.Explore(context.Background(), p, func(done int) { calls = append(calls, done) }); err != nil {
		t.Fatal(err)
	}
	if len(calls) == 0 || calls[len(calls)-1] != 2500 || !slices.IsSorted(calls) {
		t.Fatalf("progress calls with 2 workers %v", calls)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := sim.Explore(ctx, p, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Explore = %v", err)
	}
}

func TestExploreParamsValidate(t *testing.T) {
	for _, edit := range []func(*sim.ExploreParams){
		func(p *sim.ExploreParams) { p.Runs = -1 },
		func(p *sim.ExploreParams) { p.Clients = 0 },
		func(p *sim.ExploreParams) { p.Clients = 27 },
		func(p *sim.ExploreParams) { p.TTL = 0 },
		func(p *sim.ExploreParams) { p.Heartbeat = -time.Second },
		func(p *sim.ExploreParams) { p.PauseProb = 1.5 },
		func(p *sim.ExploreParams) { p.DriftMax = 0.95 },
		func(p *sim.ExploreParams) { p.Work = -1 },
		func(p *sim.ExploreParams) { p.Workers = -1 },
	} {
		p := sim.DefaultExploreParams()
		edit(&p)
		if _, err := sim.Explore(context.Background(), p, nil); err == nil {
			t.Errorf("Explore(%+v) accepted bad params", p)
		}
		if _, err := sim.ExploreSchedule(p, 1, sim.StorageClaim); err == nil {
			t.Errorf("ExploreSchedule(%+v) accepted bad params", p)
		}
	}
}

// BenchmarkExplore measures simulated schedules per second on one core
// with the default schedule size; each schedule runs twice (fencing off
// and on), so runs/s is twice schedules/s.
func BenchmarkExplore(b *testing.B) {
	p := sim.DefaultExploreParams()
	p.Runs = b.N
	b.ReportAllocs()
	b.ResetTimer()
	rep, err := sim.Explore(context.Background(), p, nil)
	if err != nil {
		b.Fatal(err)
	}
	on := rep.Tally(sim.StorageClaim)
	if on.Violations != 0 {
		b.Fatalf("failed for seed=%d", on.Seeds[0])
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "schedules/s")
}

// BenchmarkKleppmann measures one scenario run with its output.
func BenchmarkKleppmann(b *testing.B) {
	sc, _ := sim.Lookup("kleppmann")
	p := sc.Defaults
	for b.Loop() {
		if _, err := sc.Run(p); err != nil {
			b.Fatal(err)
		}
	}
}
