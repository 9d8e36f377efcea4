package blobfence_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/obs/obstest"
)

// The OpenTelemetry global meter provider can be installed once per
// process (instruments made before follow the first one installed), so the
// test binary installs one, with a Prometheus exporter, the first time a
// test asks.
var (
	metricsOnce sync.Once
	metricsReg  *prometheus.Registry
	metricsErr  error
)

func metricsRegistry(t *testing.T) *prometheus.Registry {
	metricsOnce.Do(func() {
		metricsReg = prometheus.NewRegistry()
		var exp *otelprom.Exporter
		exp, metricsErr = otelprom.New(otelprom.WithRegisterer(metricsReg), otelprom.WithoutScopeInfo())
		if metricsErr == nil {
			otel.SetMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp)))
		}
	})
	if metricsErr != nil {
		t.Fatal(metricsErr)
	}
	return metricsReg
}

// TestStaleRejectedMetric: every put and delete refused as stale adds one
// to fencekit_stale_rejected_total{store="s3"}, read through the
// Prometheus exporter as a user would scrape it; accepted writes add
// nothing.
func TestStaleRejectedMetric(t *testing.T) {
	reg := metricsRegistry(t)
	staleS3 := func() float64 {
		t.Helper()
		return obstest.Counter(t, reg, "fencekit_stale_rejected_total", "store", "s3")
	}

	ctx := context.Background()
	s, _, _ := newStore(t, nil)
	before := staleS3()
	if err := s.Put(ctx, "k", []byte("B"), 34); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, "k", []byte("A late"), 33); !errors.Is(err, fence.ErrStale) {
		t.Fatalf("stale put: %v", err)
	}
	if err := s.Delete(ctx, "k", 30); !errors.Is(err, fence.ErrStale) {
		t.Fatalf("stale delete: %v", err)
	}
	if err := s.Put(ctx, "k", []byte("B again"), 34); err != nil {
		t.Fatal(err)
	}
	if got := staleS3() - before; got != 2 {
		t.Fatalf("fencekit_stale_rejected_total{store=\"s3\"} rose by %v; want 2 (one put, one delete)", got)
	}
}
