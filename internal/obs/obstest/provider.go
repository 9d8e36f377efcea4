package obstest

import (
	"context"
	"io"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// Provider returns a meter provider exported to a Prometheus registry of
// its own, shut down at cleanup, and a function that scrapes it (the text
// exposition, as a Prometheus server reads it).
func Provider(tb testing.TB) (*sdkmetric.MeterProvider, func() string) {
	tb.Helper()
	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutScopeInfo(), otelprom.WithoutTargetInfo())
	if err != nil {
		tb.Fatal(err)
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp))
	tb.Cleanup(func() { mp.Shutdown(context.Background()) })
	return mp, func() string {
		srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		defer srv.Close()
		resp, err := srv.Client().Get(srv.URL)
		if err != nil {
			tb.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return string(body)
	}
}
