// Package obs holds the metric the storage adapters share,
// fencekit_stale_rejected, through the OpenTelemetry metric API. A
// [Counter] is registered on one meter provider, once: when the adapter is
// given that provider ([For]), or, for the global provider, on first use
// ([Global]). The counter is observed at each collection, so both stores'
// series are there, at 0, from the first scrape after registration.
package obs

import (
	"context"
	"sync"
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
	attrPostgres = metric.WithAttributes(attribute.String("store", StorePostgres))
	attrS3       = metric.WithAttributes(attribute.String("store", StoreS3))
)

// Counter counts refused writes for the meter provider it is registered on.
type Counter struct{ postgres, s3 atomic.Int64 }

var (
	mu       sync.Mutex
	counters = map[metric.MeterProvider]*Counter{}

	globalOnce sync.Once
	global     *Counter
)

// For returns mp's Counter, registering it on mp the first time; a nil mp
// means [Global].
func For(mp metric.MeterProvider) *Counter {
	if mp == nil {
		return Global()
	}
	mu.Lock()
	defer mu.Unlock()
	c := counters[mp]
	if c == nil {
		c = register(mp)
		counters[mp] = c
	}
	return c
}

// Global returns the Counter of the global meter provider
// (otel.GetMeterProvider), registered on the first call; the global
// provider forwards it to the one the program installs later.
func Global() *Counter {
	globalOnce.Do(func() { global = register(otel.GetMeterProvider()) })
	return global
}

func register(mp metric.MeterProvider) *Counter {
	c := &Counter{}
	// Registration fails only for an invalid name or callback; the counts
	// then go unreported, and writes are unaffected.
	_, _ = mp.Meter("github.com/fencekit/fencekit").Int64ObservableCounter("fencekit_stale_rejected",
		metric.WithDescription("Writes refused because a newer fencing token was already accepted, by store."),
		metric.WithUnit("{write}"),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(c.postgres.Load(), attrPostgres)
			o.Observe(c.s3.Load(), attrS3)
			return nil
		}))
	return c
}

// Add counts one write to store (StorePostgres or StoreS3) refused as
// stale.
func (c *Counter) Add(store string) {
	switch store {
	case StorePostgres:
		c.postgres.Add(1)
	case StoreS3:
		c.s3.Add(1)
	}
}

type ctxKey struct{}

// With returns ctx carrying c, for the calls made with ctx to count on
// (see [From]).
func With(ctx context.Context, c *Counter) context.Context {
	return context.WithValue(ctx, ctxKey{}, c)
}

// From returns the Counter ctx carries ([With]), else [Global].
func From(ctx context.Context) *Counter {
	if c, ok := ctx.Value(ctxKey{}).(*Counter); ok {
		return c
	}
	return Global()
}
