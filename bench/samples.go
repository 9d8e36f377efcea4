package bench

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// EnvSamplesDir names a directory where latency benchmarks append their raw
// samples (one file per benchmark, one value in milliseconds per line), so
// that run.sh can pool the rounds into one p50/p99.
const EnvSamplesDir = "BENCH_SAMPLES_DIR"

// Samples collects latency samples; it is safe for concurrent use.
type Samples struct {
	mu sync.Mutex
	d  []time.Duration
}

// Add records one sample.
func (s *Samples) Add(d time.Duration) {
	s.mu.Lock()
	s.d = append(s.d, d)
	s.mu.Unlock()
}

// Len returns the number of samples.
func (s *Samples) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.d)
}

// Quantile returns the q-quantile (0 ≤ q ≤ 1) by the nearest-rank method:
// the smallest sample with at least q of the samples at or below it. It
// returns 0 when there are no samples.
func (s *Samples) Quantile(q float64) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Quantile(s.d, q)
}

// Quantile returns the nearest-rank q-quantile of d (0 when d is empty).
func Quantile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	sorted := slices.Clone(d)
	slices.Sort(sorted)
	rank := int(math.Ceil(q * float64(len(sorted))))
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

// Ms returns d in milliseconds.
func Ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Save appends the samples, in milliseconds, to $BENCH_SAMPLES_DIR/name.txt
// when that variable is set; name's slashes become "~".
func (s *Samples) Save(name string) error {
	dir := os.Getenv(EnvSamplesDir)
	if dir == "" {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	for _, d := range s.d {
		fmt.Fprintf(&b, "%.4f\n", Ms(d))
	}
	f, err := os.OpenFile(filepath.Join(dir, strings.ReplaceAll(name, "/", "~")+".txt"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("bench: samples: %w", err)
	}
	if _, err := f.WriteString(b.String()); err != nil {
		f.Close()
		return fmt.Errorf("bench: samples: %w", err)
	}
	return f.Close()
}
