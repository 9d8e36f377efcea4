package main

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/fencekit/fencekit/internal/obs"
	"github.com/fencekit/fencekit/internal/testenv"
	"github.com/fencekit/fencekit/lease"
)

// TestOperationsDocMetrics wires Prometheus as docs/operations.md shows and
// checks that every metric its table names, every label value, and every
// metric its alert rules query appear in the exposition: the lease_lost
// causes at 0 before any loss.
func TestOperationsDocMetrics(t *testing.T) {
	doc, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		t.Fatal(err)
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp))
	t.Cleanup(func() { mp.Shutdown(context.Background()) })
	otel.SetMeterProvider(mp)
	obs.Global() // registers fencekit_stale_rejected, as sqlfence's or blobfence's first use does
	scrape := func() string {
		srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		defer srv.Close()
		resp, err := srv.Client().Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}

	env := testenv.Redis(t)
	c := newLeases(t, env.Client, &lease.Options{RenewInterval: 20 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	before := scrape()
	for _, cause := range []string{lease.CauseExpired, lease.CauseMissing, lease.CauseStolen} {
		if !regexp.MustCompile(`(?m)^lease_lost_total\{cause="` + cause + `",otel_scope_name="github.com/fencekit/fencekit/lease",.*\} 0$`).MatchString(before) {
			t.Errorf("lease_lost_total{cause=%q} is not at 0 from the start:\n%s", cause, before)
		}
	}
	// A lease lost, so that the heartbeat records every kind of series.
	name := env.Name("doc")
	l := acquire(t, c, name, time.Second)
	time.Sleep(60 * time.Millisecond)
	env.Client.Del(context.Background(), lockKey(name))
	<-l.Done()
	text := scrape()

	table := regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\| (counter|histogram) \\| (.*?) \\|")
	rows := table.FindAllStringSubmatch(string(doc), -1)
	if len(rows) < 5 {
		t.Fatalf("found %d metric rows in docs/operations.md", len(rows))
	}
	for _, row := range rows {
		name, kind := row[1], row[2]
		if !strings.Contains(text, "# TYPE "+name+" "+kind+"\n") {
			t.Errorf("docs list %s (%s); the exposition has no such metric", name, kind)
		}
		if name == "fencekit_stale_rejected_total" && !strings.Contains(text, `otel_scope_name="github.com/fencekit/fencekit"`) {
			t.Errorf("docs give fencekit_stale_rejected_total the scope github.com/fencekit/fencekit")
		}
	}
	for _, label := range []string{`cause="missing"`, `result="ok"`, `result="missing"`, `store="postgres"`, `store="s3"`, "target_info", "otel_scope_version", "otel_scope_schema_url"} {
		if !strings.Contains(text, label) {
			t.Errorf("docs mention %s; the exposition lacks it", label)
		}
	}
	rules := regexp.MustCompile(`(?m)(lease_[a-z_]+|fencekit_[a-z_]+)(\{|\[)`).FindAllStringSubmatch(string(doc[strings.Index(string(doc), "```yaml"):]), -1)
	if len(rules) < 4 {
		t.Fatalf("found %d metric references in the rules", len(rules))
	}
	for _, m := range rules {
		if !regexp.MustCompile(`(?m)^` + m[1] + `\{`).MatchString(text) {
			t.Errorf("an alert rule queries %s; the exposition has no such series", m[1])
		}
	}
}
