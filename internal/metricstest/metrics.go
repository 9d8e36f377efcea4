// Package metricstest reads fencekit's metrics back as a Prometheus server
// scraping a program would: an OpenTelemetry meter provider exported to a
// Prometheus registry. Its tests check the series users alert on.
package metricstest

import (
	"bytes"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

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

// Counter returns the value of counter name's series whose label has value;
// 0 when the series is not exposed.
func Counter(reg prometheus.Gatherer, name, label, value string) (float64, error) {
	families, err := reg.Gather()
	if err != nil {
		return 0, err
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					return m.GetCounter().GetValue(), nil
				}
			}
		}
	}
	return 0, nil
}
