// Package sweep runs fencesim explore's random schedules over a grid of
// pause/TTL ratios, heartbeat/TTL ratios and clock drifts, with fencing off
// and on, and counts at each point how often a lease alone went wrong: a
// late write accepted, an update lost, tokens accepted out of order. It
// writes the counts as CSV or JSON and draws them as an SVG plot (the
// violation map of docs/fencing.md and the playground).
//
// A point's schedules are those of [sim.ExploreSchedule] for seeds Seed to
// Seed+Runs-1, with one change: every client pauses once, for exactly the
// point's ratio times the TTL, so that the pause length is the variable.
// The counts depend on the grid only, not on the number of workers.
package sweep

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/fencekit/fencekit/sim"
)

// Grid is the set of points to run.
type Grid struct {
	// Base is the schedule distribution at every point: TTL, clients, jobs,
	// writes, work, delays, crash chance, Runs per point and the first Seed.
	// Its pause chance, pause length, heartbeat and drift are set per point.
	Base sim.ExploreParams
	// Pause lists pause lengths as fractions of the TTL.
	Pause []float64
	// Heartbeat lists heartbeat intervals as fractions of the TTL (0: none).
	Heartbeat []float64
	// Drift lists the maximum clock rate errors (sim.ExploreParams.DriftMax).
	Drift []float64
	// Storages are the storage modes each schedule runs with.
	Storages []sim.Storage
	// Workers is the number of goroutines; it changes the speed, never the rows.
	Workers int
}

// DefaultGrid returns the violation map's grid: pauses from 0 to 2 TTLs in
// steps of 0.1, a heartbeat every third of the TTL, drift up to 10%, 1,000
// schedules per point of explore's default distribution without crashes,
// each run with every storage mode ([sim.Storages]).
func DefaultGrid() Grid {
	base := sim.DefaultExploreParams()
	base.Runs = 1000
	base.CrashProb = 0
	g := Grid{Base: base, Heartbeat: []float64{1.0 / 3}, Drift: []float64{0.1}, Storages: sim.Storages()}
	for i := 0; i <= 20; i++ {
		g.Pause = append(g.Pause, float64(i)/10)
	}
	return g
}

// Point is one setting of the grid's axes.
type Point struct {
	PauseRatio     float64 `json:"pause_ttl"`
	HeartbeatRatio float64 `json:"heartbeat_ttl"`
	Drift          float64 `json:"drift"`
}

// Row counts the runs of one point with one storage mode. A run can count
// in several of Late, Lost and Backwards; Safe counts the runs that lost
// nothing and kept tokens in order.
type Row struct {
	Point
	Storage string `json:"storage"` // sim.Storage.String(): "off", "writes", "claim", "check-then-write"
	Runs    int    `json:"runs"`
	// Safe runs lost no accepted write and never accepted tokens out of
	// order. A late write accepted before any newer token reached the
	// storage is harmless, so it does not make a run unsafe.
	Safe int `json:"safe"`
	// Late runs accepted a write whose lease had expired ([sim.Result.StaleAccepted]).
	Late int `json:"late_write_accepted"`
	// Lost runs lost an accepted write ([sim.Result.Lost]).
	Lost int `json:"lost_update"`
	// Backwards runs accepted a token older than one accepted before ([sim.Result.Violation]).
	Backwards int `json:"tokens_backwards"`
	// Writes and Rejected count the writes the storage decided and refused.
	Writes   int `json:"writes"`
	Rejected int `json:"rejected"`
}

// Rate returns n as a fraction of the row's runs.
func (r Row) Rate(n int) float64 {
	if r.Runs == 0 {
		return 0
	}
	return float64(n) / float64(r.Runs)
}

// Validate returns an error naming the first invalid axis value or base parameter.
func (g Grid) Validate() error {
	if err := g.Base.Validate(); err != nil {
		return fmt.Errorf("sweep: %s", trimSim(err))
	}
	if len(g.Pause) == 0 || len(g.Heartbeat) == 0 || len(g.Drift) == 0 || len(g.Storages) == 0 {
		return errors.New("sweep: every axis (pause, heartbeat, drift, storage) needs at least one value")
	}
	for _, s := range g.Storages {
		if _, err := sim.ParseStorage(s.String()); err != nil {
			return fmt.Errorf("sweep: %s", trimSim(err))
		}
	}
	for _, v := range g.Pause {
		if !(v >= 0 && v <= 100) {
			return fmt.Errorf("sweep: pause/TTL %g outside [0, 100]", v)
		}
	}
	for _, v := range g.Heartbeat {
		if !(v >= 0 && v <= 100) {
			return fmt.Errorf("sweep: heartbeat/TTL %g outside [0, 100]", v)
		}
	}
	for _, v := range g.Drift {
		if !(v >= 0 && v < 0.9) {
			return fmt.Errorf("sweep: drift %g outside [0, 0.9)", v)
		}
	}
	if g.Workers < 0 || g.Workers > 1024 {
		return fmt.Errorf("sweep: workers %d outside 0..1024", g.Workers)
	}
	return nil
}

// Points returns the grid's points, pause ratio varying fastest.
func (g Grid) Points() []Point {
	var pts []Point
	for _, d := range g.Drift {
		for _, h := range g.Heartbeat {
			for _, p := range g.Pause {
				pts = append(pts, Point{PauseRatio: p, HeartbeatRatio: h, Drift: d})
			}
		}
	}
	return pts
}

// params returns the explore distribution of point pt.
func (g Grid) params(pt Point) sim.ExploreParams {
	p := g.Base
	p.PauseProb = 1
	p.PauseMax = scale(p.TTL, pt.PauseRatio)
	p.Heartbeat = scale(p.TTL, pt.HeartbeatRatio)
	p.DriftMax = pt.Drift
	return p
}

func scale(d time.Duration, f float64) time.Duration {
	return time.Duration(math.Round(float64(d) * f))
}

// Run runs every point of g with each storage mode and returns one row
// per point and mode, in the order of [Grid.Points] and then of g.Storages. progress, if not
// nil, is called (never concurrently) with the number of points done and
// the total, after each point. Run stops early with ctx's error.
func Run(ctx context.Context, g Grid, progress func(done, total int)) ([]Row, error) {
	if err := g.Validate(); err != nil {
		return nil, err
	}
	pts := g.Points()
	n := len(g.Storages)
	rows := make([]Row, n*len(pts))
	next := make(chan int)
	var (
		mu       sync.Mutex
		done     int
		firstErr error
		wg       sync.WaitGroup
	)
	for range min(max(g.Workers, 1), len(pts)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runner := sim.NewRunner()
			for i := range next {
				err := runPoint(ctx, runner, g, pts[i], rows[n*i:n*(i+1)])
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				done++
				if progress != nil && err == nil {
					progress(done, len(pts))
				}
				mu.Unlock()
			}
		}()
	}
feed:
	for i := range pts {
		mu.Lock()
		failed := firstErr != nil
		mu.Unlock()
		if failed {
			break
		}
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("sweep: stopped after %d of %d points: %w", done, len(pts), err)
	}
	return rows, nil
}

// runPoint runs the schedules of one point with each storage mode into
// rows, one per mode.
func runPoint(ctx context.Context, runner *sim.Runner, g Grid, pt Point, rows []Row) error {
	p := g.params(pt)
	for k, st := range g.Storages {
		rows[k] = Row{Point: pt, Storage: st.String()}
	}
	for i := range p.Runs {
		if i%100 == 0 && ctx.Err() != nil {
			return fmt.Errorf("sweep: stopped at pause/TTL %g: %w", pt.PauseRatio, ctx.Err())
		}
		seed := p.Seed + uint64(i)
		for k, st := range g.Storages {
			cfg, err := sim.ExploreSchedule(p, seed, st)
			if err != nil {
				return fmt.Errorf("sweep: %s", trimSim(err))
			}
			for c := range cfg.Clients {
				for j := range cfg.Clients[c].Pauses {
					cfg.Clients[c].Pauses[j].For = p.PauseMax
				}
			}
			res, err := runner.Run(cfg)
			if err != nil {
				return fmt.Errorf("sweep: pause/TTL %g, heartbeat/TTL %g, drift %g: %w",
					pt.PauseRatio, pt.HeartbeatRatio, pt.Drift, err)
			}
			rows[k].add(res)
		}
	}
	return nil
}

func (r *Row) add(res *sim.Result) {
	r.Runs++
	late, lost, back := len(res.StaleAccepted()) > 0, len(res.Lost()) > 0, res.Violation() != nil
	if late {
		r.Late++
	}
	if lost {
		r.Lost++
	}
	if back {
		r.Backwards++
	}
	if !lost && !back {
		r.Safe++
	}
	for _, e := range res.Events {
		switch e.Kind {
		case sim.KindWriteAccepted:
			r.Writes++
		case sim.KindWriteRejected:
			r.Writes++
			r.Rejected++
		}
	}
}

func trimSim(err error) string {
	s := err.Error()
	if len(s) > 5 && s[:5] == "sim: " {
		return s[5:]
	}
	return s
}
