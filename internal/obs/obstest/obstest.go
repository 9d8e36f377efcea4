// Package obstest reads metrics back from a Prometheus registry in tests.
package obstest

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// Counter returns the value of counter name's series whose label has value,
// as a scrape would show it; 0 when the series is not exposed.
func Counter(tb testing.TB, reg prometheus.Gatherer, name, label, value string) float64 {
	tb.Helper()
	families, err := reg.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}
