package lease

import (
	"context"
	"errors"
	"log/slog"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
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
	totals   *totals // lease_acquired and lease_lost, shared by the provider's Clients
	hb       metric.Float64Histogram
	acqLat   metric.Float64Histogram
	logger   *slog.Logger
	mu       sync.Mutex
	window   [latencyWindow]time.Duration
	n        int // samples written, total
	lastWarn time.Time
}

// lostCauses are the causes of lease_lost, each a series from the start.
var lostCauses = [...]string{CauseExpired, CauseMissing, CauseStolen}

// totals are the counts behind lease_acquired and lease_lost for every
// Client on one MeterProvider. They are asynchronous counters, read at
// each collection, so that every series reads 0 from the first scrape,
// also when the program installs its provider (otel.SetMeterProvider)
// after making the Client: the global provider hands callbacks over to
// the real one, but drops what synchronous instruments recorded before.
// Shared per provider and never dropped, the counts never go down when a
// Client closes (Prometheus would read that as a reset and a rise).
type totals struct {
	acquired atomic.Int64
	lost     [len(lostCauses)]atomic.Int64
}

var (
	totalsMu sync.Mutex
	totalsOf = map[metric.MeterProvider]*totals{}
)

// totalsFor returns mp's totals, registering their instruments on the
// first call for mp.
func totalsFor(mp metric.MeterProvider, logger *slog.Logger) *totals {
	shared := reflect.TypeOf(mp).Comparable() // a map key; else the Client's own
	totalsMu.Lock()
	defer totalsMu.Unlock()
	if shared && totalsOf[mp] != nil {
		return totalsOf[mp]
	}
	t := &totals{}
	meter := mp.Meter(meterName)
	acq, err1 := meter.Int64ObservableCounter(metricAcquired,
		metric.WithDescription("Leases granted by Acquire and AcquireWait."), metric.WithUnit("{lease}"))
	lost, err2 := meter.Int64ObservableCounter(metricLost,
		metric.WithDescription("Leases lost before release, by cause (expired, missing, stolen)."), metric.WithUnit("{lease}"))
	causes := make([]metric.ObserveOption, len(lostCauses))
	for i, c := range lostCauses {
		causes[i] = metric.WithAttributes(attribute.String("cause", c))
	}
	_, err3 := meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		o.ObserveInt64(acq, t.acquired.Load())
		for i := range t.lost {
			o.ObserveInt64(lost, t.lost[i].Load(), causes[i])
		}
		return nil
	}, acq, lost)
	// Instrument creation only fails for invalid names or options, which
	// are constants here.
	if err := errors.Join(err1, err2, err3); err != nil {
		logger.Error("lease: metrics", "err", err)
	}
	if shared {
		totalsOf[mp] = t
	}
	return t
}

func newMetrics(mp metric.MeterProvider, logger *slog.Logger) *metrics {
	m := &metrics{logger: logger, totals: totalsFor(mp, logger)}
	meter := mp.Meter(meterName)
	var err error
	// The returned instrument is a usable no-op even on error.
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

func (m *metrics) acquired() { m.totals.acquired.Add(1) }

func (m *metrics) lost(cause string) {
	if i := slices.Index(lostCauses[:], cause); i >= 0 {
		m.totals.lost[i].Add(1)
	}
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
