package sim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/fencekit/fencekit/internal/fencetest"
)

// ExploreParams set the distributions random schedules are drawn from;
// start from [DefaultExploreParams].
type ExploreParams struct {
	// Runs is the number of schedules; each runs once per storage mode.
	Runs int
	// Storages are the storage modes each schedule runs with, in order;
	// nil means StorageOff then StorageClaim (fencing off and on).
	Storages []Storage
	// Seed is the first run's seed; run i uses Seed+i, so any run can be
	// replayed alone with [ExploreSchedule].
	Seed uint64
	// Clients, Jobs (per client) and Writes (per job) size a schedule.
	Clients, Jobs, Writes int
	// TTL and Heartbeat configure the lease (Heartbeat 0 means none).
	TTL, Heartbeat time.Duration
	// Work is the mean work step; steps are uniform in [Work/2, 3*Work/2].
	Work time.Duration
	// DelayMax bounds message delays, uniform in [0, DelayMax].
	DelayMax time.Duration
	// PauseProb is each client's chance of one stop-the-world pause, whose
	// length is uniform in [0, PauseMax] and start uniform in the first 30s.
	PauseProb float64
	PauseMax  time.Duration
	// CrashProb is each client's chance of crashing, uniformly in the first 40s.
	CrashProb float64
	// DriftMax bounds each client's clock rate error, uniform in [-DriftMax, DriftMax].
	DriftMax float64
	// Workers is the number of goroutines (0 or 1: run on the caller's);
	// it changes the speed, never the report.
	Workers int
}

// DefaultExploreParams returns the default schedule distribution: 3
// clients, 2 jobs of 3 writes each, TTL 10s with a 3s heartbeat, 2s steps,
// delays up to 200ms, a 30% chance of a pause of up to 30s, 10% of a
// crash, and clock drift up to ±10%.
func DefaultExploreParams() ExploreParams {
	return ExploreParams{
		Runs: 10000, Seed: 1, Clients: 3, Jobs: 2, Writes: 3,
		TTL: 10 * time.Second, Heartbeat: 3 * time.Second, Work: 2 * time.Second,
		DelayMax: 200 * time.Millisecond, PauseProb: 0.3, PauseMax: 30 * time.Second,
		CrashProb: 0.1, DriftMax: 0.1,
	}
}

// Validate returns an error naming the first invalid parameter.
func (p ExploreParams) Validate() error {
	switch {
	case p.Runs < 0:
		return fmt.Errorf("sim: explore: runs %d is negative", p.Runs)
	case p.Workers < 0 || p.Workers > 1024:
		return fmt.Errorf("sim: explore: workers %d outside 0..1024", p.Workers)
	case p.Clients < 1 || p.Clients > maxClients:
		return fmt.Errorf("sim: explore: clients %d outside 1..%d", p.Clients, maxClients)
	case p.Jobs < 1 || p.Jobs > 100:
		return fmt.Errorf("sim: explore: jobs %d outside 1..100", p.Jobs)
	case p.Writes < 1 || p.Writes > 100:
		return fmt.Errorf("sim: explore: writes %d outside 1..100", p.Writes)
	case p.Heartbeat < 0:
		return fmt.Errorf("sim: explore: heartbeat %v is negative", p.Heartbeat)
	case p.TTL <= 0:
		return fmt.Errorf("sim: explore: ttl %v must be positive", p.TTL)
	case p.Work < 0 || p.DelayMax < 0 || p.PauseMax < 0:
		return fmt.Errorf("sim: explore: negative duration (work %v, delay %v, pause %v)", p.Work, p.DelayMax, p.PauseMax)
	case p.PauseProb < 0 || p.PauseProb > 1 || p.CrashProb < 0 || p.CrashProb > 1:
		return fmt.Errorf("sim: explore: probabilities must be in [0, 1] (pause %g, crash %g)", p.PauseProb, p.CrashProb)
	case p.DriftMax < 0 || p.DriftMax >= 0.9:
		return fmt.Errorf("sim: explore: drift %g outside [0, 0.9)", p.DriftMax)
	}
	for i, s := range p.Storages {
		if int(s) >= len(storageNames) || slices.Contains(p.Storages[:i], s) {
			return fmt.Errorf("sim: explore: storage %v unknown or listed twice", s)
		}
	}
	return nil
}

// Warnings says when p's pauses cannot (or can rarely) outlast a lease, so
// that fencing off looks safer than it is: a lease is lost to a pause only
// when the pause is longer than the lease's remaining time, which a
// heartbeat keeps near the TTL.
func (p ExploreParams) Warnings() []string {
	var out []string
	switch {
	case p.PauseProb == 0:
		out = append(out, "no pauses are drawn (pause chance 0): without a pause that outlasts a lease, leases alone look safe")
	case p.Heartbeat > 0 && p.PauseMax <= p.minRemaining():
		out = append(out, fmt.Sprintf("no pause can outlast a lease: pauses are at most %s, and a lease renewed every %s "+
			"always has more than %s left; raise the maximum pause above the TTL (%s)",
			FormatTime(p.PauseMax), FormatTime(p.Heartbeat), FormatTime(p.minRemaining()), FormatTime(p.TTL)))
	case p.PauseMax <= p.TTL:
		out = append(out, fmt.Sprintf("pauses are at most %s, not longer than the %s TTL: only pauses that start late "+
			"in a lease outlast it, so violations are rare; raise the maximum pause above the TTL",
			FormatTime(p.PauseMax), FormatTime(p.TTL)))
	}
	return out
}

// minRemaining is a lower bound of a renewed lease's remaining time: the
// TTL less the longest renewal interval by a drifting clock and two
// message delays.
func (p ExploreParams) minRemaining() time.Duration {
	return p.TTL - time.Duration(float64(p.Heartbeat)/(1-p.DriftMax)) - 2*p.DelayMax
}

// storages returns the storage modes to run, defaults filled in.
func (p ExploreParams) storages() []Storage {
	if len(p.Storages) == 0 {
		return []Storage{StorageOff, StorageClaim}
	}
	return p.Storages
}

// ExploreSchedule returns the configuration of the run with the given seed
// under p: the same seed always gives the same schedule, so a violating
// seed that [Explore] reports can be replayed and drawn.
func ExploreSchedule(p ExploreParams, seed uint64, storage Storage) (*Config, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if int(storage) >= len(storageNames) {
		return nil, fmt.Errorf("sim: explore: unknown storage %v", storage)
	}
	cfg := &Config{}
	schedule(cfg, rand.New(rand.NewPCG(seed, 1)), p, seed, storage)
	return cfg, nil
}

func schedule(cfg *Config, rng *rand.Rand, p ExploreParams, seed uint64, storage Storage) {
	dur := func(lo, hi time.Duration) time.Duration {
		if hi <= lo {
			return lo
		}
		return lo + time.Duration(rng.Int64N(int64(hi-lo)+1))
	}
	// The schedule is complete and valid as drawn (p was validated), so the
	// explorer runs it without normalize's copy.
	*cfg = Config{Seed: seed, TTL: p.TTL, Heartbeat: p.Heartbeat, Storage: storage, DelayMax: p.DelayMax,
		FirstToken: 1, Resource: "file", Horizon: exploreHorizon(p), MaxSteps: 1_000_000, Clients: cfg.Clients[:0]}
	for i := range p.Clients {
		var pauses []Pause // reuse the backing array of a reused Config
		if i < cap(cfg.Clients) {
			pauses = cfg.Clients[:i+1][i].Pauses[:0]
		}
		s := ClientSpec{
			Name:  clientNames[i],
			Start: dur(0, 5*time.Second), Retry: dur(500*time.Millisecond, 2*time.Second),
			Jobs: p.Jobs, Writes: p.Writes, Step: p.Work / 2, StepJitter: p.Work,
			Idle: dur(0, 2*time.Second),
		}
		if rng.Float64() < p.PauseProb {
			s.Pauses = append(pauses, Pause{At: dur(0, 30*time.Second), For: dur(0, p.PauseMax)})
		}
		if rng.Float64() < p.CrashProb {
			s.Crash, s.CrashAt = true, dur(0, 40*time.Second)
		}
		if p.DriftMax > 0 {
			s.Drift = (rng.Float64()*2 - 1) * p.DriftMax
		}
		cfg.Clients = append(cfg.Clients, s)
	}
}

// exploreHorizon bounds a schedule's virtual time: 30 minutes, more when
// the TTL, pauses or steps are long enough to need it.
func exploreHorizon(p ExploreParams) time.Duration {
	return 30*time.Minute + time.Duration(p.Clients*p.Jobs)*(2*p.TTL+p.PauseMax+time.Duration(p.Writes)*2*p.Work)
}

// Tally counts the outcomes of many runs with one storage mode.
type Tally struct {
	Storage Storage
	// Violations is the number of runs in which the storage accepted a
	// write whose token was older than one it had accepted before
	// ([Result.Violation]); Seeds lists them in order.
	Violations int
	Seeds      []uint64
	// LostRuns is the number of runs that lost an accepted write
	// ([Result.Lost]).
	LostRuns int
	// StaleRuns is the number of runs that accepted a write from an expired
	// lease ([Result.StaleAccepted]); with fencing that is harmless as long
	// as no newer holder has touched the storage yet.
	StaleRuns int
	// Writes and Rejected count writes decided and writes rejected.
	Writes, Rejected int
	// CutRuns is the number of runs that reached their horizon with
	// actions pending ([Result.Cut]); their tallies are incomplete.
	CutRuns int
	// DowntimeRuns counts the runs in which a crashed client still held
	// the lease, and Downtime sums those spans ([Result.Downtime]): time in
	// which nobody could work, the price of the TTL.
	DowntimeRuns int
	Downtime     time.Duration
}

// ExploreReport is what [Explore] found.
type ExploreReport struct {
	Params ExploreParams
	// LongPauses is the number of schedules with a pause longer than the TTL.
	LongPauses int
	// Tallies has one Tally per storage mode, in the order of
	// Params.Storages (by default: off, then claim).
	Tallies []Tally
}

// Tally returns the tally of storage mode s, or nil if s did not run.
func (rep *ExploreReport) Tally(s Storage) *Tally {
	for i := range rep.Tallies {
		if rep.Tallies[i].Storage == s {
			return &rep.Tallies[i]
		}
	}
	return nil
}

func newReport(p ExploreParams) *ExploreReport {
	rep := &ExploreReport{Params: p}
	for _, s := range p.storages() {
		rep.Tallies = append(rep.Tallies, Tally{Storage: s})
	}
	return rep
}

// Explore runs p.Runs random schedules, each with fencing off and then on,
// and tallies safety violations. With p.Workers > 1 it splits the seeds
// into that many contiguous chunks run on as many goroutines and merges
// their tallies in seed order, so the report does not depend on the number
// of workers or their scheduling. progress, if not nil, is called (never
// concurrently) with the number of schedules done, about every 1,000 and
// at the end. Explore stops early with ctx's error when ctx ends. The
// report is the same for the same p, byte for byte.
func Explore(ctx context.Context, p ExploreParams, progress func(done int)) (*ExploreReport, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	workers := min(max(p.Workers, 1), max(p.Runs, 1))
	parts := make([]*ExploreReport, workers)
	errs := make([]error, workers)
	var mu sync.Mutex
	done := 0
	tick := func(n int) {
		if progress == nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		done += n
		progress(done)
	}
	var wg sync.WaitGroup
	for w := range workers {
		lo, hi := p.Runs*w/workers, p.Runs*(w+1)/workers
		parts[w] = newReport(p)
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[w] = explore(ctx, p, lo, hi, parts[w], tick)
		}()
	}
	wg.Wait()
	rep := newReport(p)
	for _, part := range parts {
		rep.LongPauses += part.LongPauses
		for i := range rep.Tallies {
			rep.Tallies[i].merge(&part.Tallies[i])
		}
	}
	return rep, errors.Join(errs...)
}

// explore runs schedules lo..hi-1 into rep, reporting progress by chunks
// of 1,000.
func explore(ctx context.Context, p ExploreParams, lo, hi int, rep *ExploreReport, tick func(int)) error {
	e := newExplorer()
	last := lo
	for i := lo; i < hi; i++ {
		if (i-lo)%1000 == 0 {
			if err := ctx.Err(); err != nil {
				return errors.Join(fmt.Errorf("sim: explore stopped at schedule %d of %d", i, p.Runs), err)
			}
			if i > last {
				tick(i - last)
				last = i
			}
		}
		if err := e.one(rep, p, p.Seed+uint64(i)); err != nil {
			return err
		}
	}
	tick(hi - last)
	return nil
}

func (t *Tally) merge(o *Tally) {
	t.Violations += o.Violations
	t.Seeds = append(t.Seeds, o.Seeds...)
	t.LostRuns += o.LostRuns
	t.StaleRuns += o.StaleRuns
	t.Writes += o.Writes
	t.Rejected += o.Rejected
	t.CutRuns += o.CutRuns
	t.DowntimeRuns += o.DowntimeRuns
	t.Downtime += o.Downtime
}

// explorer holds reusable buffers for many runs.
type explorer struct {
	runner *Runner
	pcg    rand.PCG
	rng    *rand.Rand
	cfg    Config
}

func newExplorer() *explorer {
	e := &explorer{runner: NewRunner()}
	e.runner.quiet = true
	e.rng = rand.New(&e.pcg)
	return e
}

func (e *explorer) one(rep *ExploreReport, p ExploreParams, seed uint64) error {
	e.pcg.Seed(seed, 1)
	schedule(&e.cfg, e.rng, p, seed, StorageOff)
	if hasLongPause(&e.cfg) {
		rep.LongPauses++
	}
	for i := range rep.Tallies {
		t := &rep.Tallies[i]
		e.cfg.Storage = t.Storage
		if err := e.runner.run(e.cfg); err != nil {
			return err
		}
		t.add(e.runner)
	}
	return nil
}

// add counts a finished run straight from the runner's state, allocating
// nothing unless the run broke the invariant.
func (t *Tally) add(r *Runner) {
	for _, w := range r.writes {
		if w.At != 0 || w.Accepted {
			t.Writes++
		}
	}
	t.Rejected += r.rejected
	if r.cut {
		t.CutRuns++
	}
	if fencetest.VerifyHistory(r.cfg.Resource, r.accepted) != nil {
		t.Violations++
		t.Seeds = append(t.Seeds, r.cfg.Seed)
	}
	val := r.value()
	r.final = appendIDs(r.final[:0], val)
	lost, stale := false, false
	for i, w := range r.writes {
		if w.Accepted {
			lost = lost || !slices.Contains(r.final, i)
			stale = stale || !w.Live
		}
	}
	if lost {
		t.LostRuns++
	}
	if stale {
		t.StaleRuns++
	}
	if r.downtime > 0 {
		t.DowntimeRuns++
		t.Downtime += r.downtime
	}
}

var clientNames = func() []string {
	names := make([]string, maxClients)
	for i := range names {
		names[i] = string(rune('A' + i))
	}
	return names
}()

// hasLongPause reports whether a client of cfg pauses for longer than the TTL.
func hasLongPause(cfg *Config) bool {
	for _, c := range cfg.Clients {
		for _, ps := range c.Pauses {
			if ps.For > cfg.TTL {
				return true
			}
		}
	}
	return false
}
