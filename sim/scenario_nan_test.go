package sim_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/fencekit/fencekit/sim"
)

// A NaN drift compares false with every bound: it must still be refused.
func TestParamsRefuseNaNDrift(t *testing.T) {
	err := sim.Params{TTL: time.Second, Drift: math.NaN()}.Validate()
	if err == nil || !strings.Contains(err.Error(), "drift") {
		t.Fatalf("Validate with a NaN drift = %v, want an error naming the drift", err)
	}
}
