// Package obs holds the metric the storage adapters share,
// fencekit_stale_rejected. It goes through the OpenTelemetry metric API: a
// no-op until the program installs a meter provider (otel.SetMeterProvider).
// The counter is observed at each collection, so every store's series is
// there, at 0, from the first scrape on.
package obs

import (
	"context"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// Store names, the "store" attribute of fencekit_stale_rejected.
const (
	StorePostgres = "postgres"
	StoreS3       = "s3"
)

var (
	postgres, s3 atomic.Int64
	attrPostgres = metric.WithAttributes(attribute.String("store", StorePostgres))
	attrS3       = metric.WithAttributes(attribute.String("store", StoreS3))
)

// The counter is registered when the package is loaded, on the global meter
// provider, which forwards it to the provider the program installs later.
func init() {
	meter := otel.GetMeterProvider().Meter("github.com/fencekit/fencekit")
	// Registration fails only for an invalid name or callback; the counts
	// then go unreported, and writes are unaffected.
	_, _ = meter.Int64ObservableCounter("fencekit_stale_rejected",
		metric.WithDescription("Writes refused because a newer fencing token was already accepted, by store."),
		metric.WithUnit("{write}"),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(postgres.Load(), attrPostgres)
			o.Observe(s3.Load(), attrS3)
			return nil
		}))
}

// StaleRejected counts one write to store (StorePostgres or StoreS3) refused
// as stale.
func StaleRejected(_ context.Context, store string) {
	switch store {
	case StorePostgres:
		postgres.Add(1)
	case StoreS3:
		s3.Add(1)
	}
}
