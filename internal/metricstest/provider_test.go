package metricstest

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/metric"

	"github.com/fencekit/fencekit/blobfence"
	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/obs"
	"github.com/fencekit/fencekit/internal/testenv"
	"github.com/fencekit/fencekit/sqlfence"
)

// ownProvider returns a meter provider of the test's own and a reader of
// its fencekit_stale_rejected_total for store.
func ownProvider(t *testing.T, store string) (metric.MeterProvider, func() float64) {
	t.Helper()
	mp, reg, err := NewProvider()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mp.Shutdown(context.Background()) })
	return mp, func() float64 { return counter(t, reg, store) }
}

func counter(t *testing.T, reg prometheus.Gatherer, store string) float64 {
	t.Helper()
	v, err := Counter(reg, "fencekit_stale_rejected_total", "store", store)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestStaleRejectedOnGivenProviderS3: a Store given Options.MeterProvider
// counts its refusals there, not on the global provider.
func TestStaleRejectedOnGivenProviderS3(t *testing.T) {
	env := testenv.S3(t)
	mp, own := ownProvider(t, obs.StoreS3)
	before := staleRejected(t, obs.StoreS3)
	s, err := blobfence.New(env.Client, env.Bucket, &blobfence.Options{MeterProvider: mp})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.Put(ctx, "k", []byte("B"), 34); err != nil {
		t.Fatal(err)
	}
	if err := s.Claim(ctx, "k", 33); !errors.Is(err, fence.ErrStale) {
		t.Fatalf("stale claim: %v", err)
	}
	if got := own(); got != 1 {
		t.Errorf("the given provider counted %v refusals, want 1", got)
	}
	if got := staleRejected(t, obs.StoreS3) - before; got != 0 {
		t.Errorf("the global provider counted %v refusals, want 0", got)
	}
}

// TestStaleRejectedOnGivenProviderPostgres: a sqlfence Guard given
// Options.MeterProvider counts its refusals there, not on the global
// provider.
func TestStaleRejectedOnGivenProviderPostgres(t *testing.T) {
	pg := testenv.PostgresMigrated(t)
	mp, own := ownProvider(t, obs.StorePostgres)
	g, err := sqlfence.New(&sqlfence.Options{MeterProvider: mp})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	noop := func(pgx.Tx) error { return nil }
	before := staleRejected(t, obs.StorePostgres)
	if err := g.InTx(ctx, pg.Pool, "docs", 5, noop); err != nil {
		t.Fatal(err)
	}
	if err := g.InTx(ctx, pg.Pool, "docs", 4, noop); !errors.Is(err, fence.ErrStale) {
		t.Fatalf("stale InTx: %v", err)
	}
	if err := g.Claim(ctx, pg.Pool, "docs", 3); !errors.Is(err, fence.ErrStale) {
		t.Fatalf("stale Claim: %v", err)
	}
	if _, err := g.Exec(ctx, pg.Pool, "docs", 2, `SELECT 1`); !errors.Is(err, fence.ErrStale) {
		t.Fatalf("stale Exec: %v", err)
	}
	if got := own(); got != 3 {
		t.Errorf("the given provider counted %v refusals (InTx, Claim, Exec), want 3", got)
	}
	if got := staleRejected(t, obs.StorePostgres) - before; got != 0 {
		t.Errorf("the global provider counted %v refusals, want 0", got)
	}
}
