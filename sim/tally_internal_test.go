package sim

import (
	"testing"
	"time"
)

// TestTallyCountsCutRuns: a run stopped at its horizon is counted as cut,
// so that explore can say its figures are incomplete.
func TestTallyCountsCutRuns(t *testing.T) {
	cfg, err := ExploreSchedule(DefaultExploreParams(), 3, StorageClaim)
	if err != nil {
		t.Fatal(err)
	}
	r := NewRunner()
	r.quiet = true
	var full, cut Tally
	if err := r.run(*cfg); err != nil {
		t.Fatal(err)
	}
	full.add(r)
	cfg.Horizon = 5 * time.Second
	if err := r.run(*cfg); err != nil {
		t.Fatal(err)
	}
	cut.add(r)
	if full.CutRuns != 0 || cut.CutRuns != 1 || cut.Writes >= full.Writes {
		t.Fatalf("full %+v, cut at 5s %+v", full, cut)
	}
}
