// Package obs holds the metrics the storage adapters share. They go through
// the OpenTelemetry metric API: a no-op until the program installs a meter
// provider (otel.SetMeterProvider), which instruments made before that
// follow.
package obs

import (
	"context"
	"sync"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// Store names, the "store" attribute of fencekit_stale_rejected.
const (
	StorePostgres = "postgres"
	StoreS3       = "s3"
)

const meterName = "github.com/fencekit/fencekit"

var (
	once     sync.Once
	rejected metric.Int64Counter
	attrs    map[string]metric.AddOption
)

func setup() {
	meter := otel.GetMeterProvider().Meter(meterName)
	// Creation fails only for an invalid name; the counter is then a
	// usable no-op.
	rejected, _ = meter.Int64Counter("fencekit_stale_rejected",
		metric.WithDescription("Writes refused because a newer fencing token was already accepted, by store."),
		metric.WithUnit("{write}"))
	attrs = map[string]metric.AddOption{}
	for _, s := range []string{StorePostgres, StoreS3} {
		attrs[s] = metric.WithAttributes(attribute.String("store", s))
		rejected.Add(context.Background(), 0, attrs[s]) // present at 0 from the start
	}
}

// StaleRejected counts one write to store refused as stale.
func StaleRejected(ctx context.Context, store string) {
	once.Do(setup)
	opt, ok := attrs[store]
	if !ok {
		opt = metric.WithAttributes(attribute.String("store", store))
	}
	rejected.Add(ctx, 1, opt)
}

// Init makes the counter (at 0 for every store) without counting anything,
// so that a scrape shows it before the first refusal.
func Init() { once.Do(setup) }
