package obstest

import (
	"bytes"
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// Provider returns a meter provider exported to a Prometheus registry of
// its own, shut down at cleanup, and a function that scrapes it (see
// [Exposition]).
func Provider(tb testing.TB) (*sdkmetric.MeterProvider, func() string) {
	tb.Helper()
	mp, reg, err := NewProvider()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { mp.Shutdown(context.Background()) })
	return mp, func() string {
		text, err := Exposition(reg)
		if err != nil {
			tb.Fatal(err)
		}
		return text
	}
}

// NewProvider returns a meter provider exported to a new Prometheus
// registry, as a program installs it, and the registry.
func NewProvider() (*sdkmetric.MeterProvider, *prometheus.Registry, error) {
	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutScopeInfo(), otelprom.WithoutTargetInfo())
	if err != nil {
		return nil, nil, err
	}
	return sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp)), reg, nil
}

// Exposition returns what a Prometheus server scraping reg reads: the text
// exposition format.
func Exposition(reg prometheus.Gatherer) (string, error) {
	families, err := reg.Gather()
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, f := range families {
		if err := enc.Encode(f); err != nil {
			return "", err
		}
	}
	return buf.String(), nil
}
