package sim_test

import (
	"strings"
	"testing"
	"time"

	"github.com/fencekit/fencekit/sim"
)

// FuzzRun feeds arbitrary configurations to Run: it either refuses them
// with a "sim: " error or runs them, and a run with fencing on never
// breaks the invariant nor loses an accepted write, whatever the
// pauses, drift, crashes and delays.
func FuzzRun(f *testing.F) {
	f.Add(uint64(1), int64(10000), int64(3000), int64(100), int64(200), uint8(2), int64(1000), int64(15000), 0.0, int64(0), uint8(1), uint8(1), int64(2000))
	f.Add(uint64(7), int64(500), int64(0), int64(0), int64(0), uint8(5), int64(0), int64(900), -0.5, int64(300), uint8(3), uint8(4), int64(100))
	f.Add(uint64(9), int64(-1), int64(-5), int64(9), int64(3), uint8(30), int64(-1), int64(0), -0.95, int64(-1), uint8(0), uint8(0), int64(-1))
	f.Fuzz(func(t *testing.T, seed uint64, ttl, hb, dmin, dmax int64, clients uint8, pauseAt, pauseFor int64,
		drift float64, crashAt int64, jobs, writes uint8, step int64) {
		ms := func(v int64) time.Duration { return time.Duration(v%100_000) * time.Millisecond } // within ±100s
		cfg := &sim.Config{Seed: seed, TTL: ms(ttl), Heartbeat: ms(hb), Storage: sim.StorageClaim, DelayMin: ms(dmin), DelayMax: ms(dmax),
			Horizon: 10 * time.Minute, MaxSteps: 200_000}
		for i := range int(clients) % 30 {
			cfg.Clients = append(cfg.Clients, sim.ClientSpec{
				Start: ms(int64(i) * 700), Jobs: int(jobs) % 4, Writes: int(writes) % 5, Step: ms(step), StepJitter: ms(step / 2),
				Pauses: []sim.Pause{{At: ms(pauseAt * int64(i+1)), For: ms(pauseFor)}},
				Crash:  i == 1 && crashAt >= 0, CrashAt: ms(crashAt), Drift: drift,
			})
		}
		if cfg.Heartbeat > 0 && cfg.Heartbeat < time.Millisecond*10 {
			cfg.Heartbeat = 10 * time.Millisecond // keep the number of renewals bounded
		}
		res, err := sim.Run(cfg)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "sim: ") {
				t.Fatalf("error without the package prefix: %v", err)
			}
			return
		}
		if err := res.Violation(); err != nil {
			t.Fatalf("fencing on: %v", err)
		}
		if lost := res.Lost(); len(lost) != 0 {
			t.Fatalf("failed for seed=%d: fencing on lost accepted writes %v", seed, lost)
		}
	})
}
