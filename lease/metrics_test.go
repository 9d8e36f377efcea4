package lease

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

func TestMetricsPrometheus(t *testing.T) {
	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutScopeInfo(), otelprom.WithoutTargetInfo())
	if err != nil {
		t.Fatal(err)
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp))
	t.Cleanup(func() { mp.Shutdown(context.Background()) })

	env := testenvRedisCounting(t)
	c := mustNew(t, env.client, &Options{MeterProvider: mp, RenewInterval: 20 * time.Millisecond,
		Logger: slog.New(slog.DiscardHandler)})
	ctx := context.Background()
	for i := range 3 {
		release(t, mustAcquire(t, c, env.Name("m-"+strconv.Itoa(i)), time.Second))
	}
	l := mustAcquire(t, c, env.Name("m-lost"), 5*time.Second)
	time.Sleep(70 * time.Millisecond) // a few heartbeats
	env.client.Del(ctx, c.keys(l.Name()).lock)
	if err := waitDone(t, l, 5*time.Second); !isLost(err, CauseMissing) {
		t.Fatalf("Err = %v", err)
	}
	if _, err := c.Acquire(ctx, env.Name("m-0"), time.Second); err != nil {
		t.Fatal(err)
	}

	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	text := string(body)
	for _, want := range []string{
		`(?m)^lease_acquired_total 5$`,
		`(?m)^lease_lost_total\{cause="missing"\} 1$`,
		`(?m)^lease_heartbeat_latency_seconds_count\{result="ok"\} [1-9][0-9]*$`,
		`(?m)^lease_heartbeat_latency_seconds_count\{result="missing"\} 1$`,
		`(?m)^lease_heartbeat_latency_seconds_bucket\{result="ok",le="0\.005"\} `,
		`(?m)^lease_acquire_latency_seconds_count\{result="ok"\} 5$`,
		`(?m)^# TYPE lease_heartbeat_latency_seconds histogram$`,
	} {
		if !regexp.MustCompile(want).MatchString(text) {
			t.Errorf("exposition lacks %s:\n%s", want, text)
		}
	}
}
