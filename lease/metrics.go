package lease

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// Instrument names. Through the OpenTelemetry Prometheus exporter they read
// lease_acquired_total, lease_lost_total, lease_heartbeat_latency_seconds
// and lease_acquire_latency_seconds.
const (
	meterName            = "github.com/fencekit/fencekit/lease"
	metricAcquired       = "lease_acquired"
	metricLost           = "lease_lost"
	metricHeartbeat      = "lease_heartbeat_latency"
	metricAcquireLatency = "lease_acquire_latency"
)

// latencyBuckets are histogram bounds in seconds, 100µs to 10s.
var latencyBuckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

// latencyWindow is how many recent heartbeat latencies the p99 is taken over.
const latencyWindow = 128

// minWarnSamples is how many latencies the p99 warning needs.
const minWarnSamples = 5

// warnEvery limits the p99 warning to one per interval per client.
const warnEvery = time.Minute

type metrics struct {
	acq      metric.Int64Counter
	lostC    metric.Int64Counter
	hb       metric.Float64Histogram
	acqLat   metric.Float64Histogram
	logger   *slog.Logger
	mu       sync.Mutex
	window   [latencyWindow]time.Duration
	n        int // samples written, total
	lastWarn time.Time
}

func newMetrics(mp metric.MeterProvider, logger *slog.Logger) *metrics {
	m := &metrics{logger: logger}
	meter := mp.Meter(meterName)
	var err error
	// Instrument creation only fails for invalid names or options, which
	// are constants here; the returned instrument is a usable no-op anyway.
	if m.acq, err = meter.Int64Counter(metricAcquired,
		metric.WithDescription("Leases granted by Acquire and AcquireWait."), metric.WithUnit("{lease}")); err != nil {
		logger.Error("lease: metric", "name", metricAcquired, "err", err)
	}
	if m.lostC, err = meter.Int64Counter(metricLost,
		metric.WithDescription("Leases lost before release, by cause (expired, missing, stolen)."), metric.WithUnit("{lease}")); err != nil {
		logger.Error("lease: metric", "name", metricLost, "err", err)
	}
	// Each cause's series exists from the start, at 0, so that an alert
	// on its rate (or on its absence) works before the first loss.
	for _, cause := range []string{CauseExpired, CauseMissing, CauseStolen} {
		m.lostC.Add(context.Background(), 0, metric.WithAttributes(attribute.String("cause", cause)))
	}
	if m.hb, err = meter.Float64Histogram(metricHeartbeat,
		metric.WithDescription("Round-trip time of lease renewals, by result."), metric.WithUnit("s"),
		metric.WithExplicitBucketBoundaries(latencyBuckets...)); err != nil {
		logger.Error("lease: metric", "name", metricHeartbeat, "err", err)
	}
	if m.acqLat, err = meter.Float64Histogram(metricAcquireLatency,
		metric.WithDescription("Round-trip time of acquire attempts, by result."), metric.WithUnit("s"),
		metric.WithExplicitBucketBoundaries(latencyBuckets...)); err != nil {
		logger.Error("lease: metric", "name", metricAcquireLatency, "err", err)
	}
	return m
}

// Option lists built once: a variadic call would allocate its slice on
// every recording, even with the no-op provider.
var (
	attrOK    = []metric.RecordOption{metric.WithAttributes(attribute.String("result", "ok"))}
	attrError = []metric.RecordOption{metric.WithAttributes(attribute.String("result", "error"))}
)

func (m *metrics) acquired(ctx context.Context) { m.acq.Add(ctx, 1) }

func (m *metrics) lost(ctx context.Context, cause string) {
	m.lostC.Add(ctx, 1, metric.WithAttributes(attribute.String("cause", cause)))
}

func (m *metrics) acquireLatency(ctx context.Context, d time.Duration, err error) {
	opt := attrOK
	if err != nil {
		opt = attrError
	}
	m.acqLat.Record(ctx, d.Seconds(), opt...)
}

func (m *metrics) heartbeat(ctx context.Context, d time.Duration, result string) {
	switch result {
	case "ok":
		m.hb.Record(ctx, d.Seconds(), attrOK...)
	case "error":
		m.hb.Record(ctx, d.Seconds(), attrError...)
	default:
		m.hb.Record(ctx, d.Seconds(), metric.WithAttributes(attribute.String("result", result)))
	}
}

// observeLatency adds a confirmed heartbeat's latency to the window and logs
// a warning, at most once per warnEvery, when the window's p99 exceeds a
// tenth of ttl: the TTL leaves too little room for slow renewals.
func (m *metrics) observeLatency(name string, d, ttl time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.window[m.n%latencyWindow] = d
	m.n++
	// The p99 (a sort of the window) is only worth computing when this
	// sample is itself too slow: a fast one cannot start a warning.
	if m.n < minWarnSamples || d <= ttl/10 {
		return
	}
	p99 := m.p99Locked()
	if p99 <= ttl/10 {
		return
	}
	now := time.Now()
	if !m.lastWarn.IsZero() && now.Sub(m.lastWarn) < warnEvery {
		return
	}
	m.lastWarn = now
	m.logger.Warn("lease: heartbeat p99 latency is above a tenth of the TTL; use a longer TTL",
		"name", name, "p99", p99, "ttl", ttl, "samples", min(m.n, latencyWindow))
}

// p99Locked returns the 99th percentile of the window (nearest rank).
func (m *metrics) p99Locked() time.Duration {
	n := min(m.n, latencyWindow)
	s := slices.Clone(m.window[:n])
	slices.Sort(s)
	i := (n*99 + 99) / 100 // ceil(0.99 n)
	return s[i-1]
}

// HeartbeatP99 returns the 99th percentile of the client's last 128 confirmed
// heartbeat latencies, 0 before the first.
func (c *Client) HeartbeatP99() time.Duration {
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	if c.m.n == 0 {
		return 0
	}
	return c.m.p99Locked()
}
