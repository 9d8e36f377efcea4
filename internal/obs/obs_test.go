package obs

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.opentelemetry.io/otel"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

func TestStaleRejectedExposition(t *testing.T) {
	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutScopeInfo())
	if err != nil {
		t.Fatal(err)
	}
	otel.SetMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp)))
	// Present at 0 before anything was refused.
	if err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP fencekit_stale_rejected_total Writes refused because a newer fencing token was already accepted, by store.
# TYPE fencekit_stale_rejected_total counter
fencekit_stale_rejected_total{store="postgres"} 0
fencekit_stale_rejected_total{store="s3"} 0
`), "fencekit_stale_rejected_total"); err != nil {
		t.Fatal(err)
	}
	StaleRejected(context.Background(), StoreS3)
	StaleRejected(context.Background(), StoreS3)
	want := `
# HELP fencekit_stale_rejected_total Writes refused because a newer fencing token was already accepted, by store.
# TYPE fencekit_stale_rejected_total counter
fencekit_stale_rejected_total{store="postgres"} 0
fencekit_stale_rejected_total{store="s3"} 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "fencekit_stale_rejected_total"); err != nil {
		t.Fatal(err)
	}
}
