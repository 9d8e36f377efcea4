package redislease

import (
	"context"
	"log/slog"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/fencekit/fencekit/internal/obs/obstest"
	"github.com/fencekit/fencekit/lease"
)

func TestMetricsPrometheus(t *testing.T) {
	mp, scrape := obstest.Provider(t)

	env := testenvRedisCounting(t)
	c := mustNew(t, env.client, &lease.Options{MeterProvider: mp, RenewInterval: 20 * time.Millisecond,
		Logger: slog.New(slog.DiscardHandler)})
	ctx := context.Background()
	for i := range 3 {
		release(t, mustAcquire(t, c, env.Name("m-"+strconv.Itoa(i)), time.Second))
	}
	l := mustAcquire(t, c, env.Name("m-lost"), 5*time.Second)
	time.Sleep(70 * time.Millisecond) // a few heartbeats
	env.client.Del(ctx, keysOf(l.Name()).lock)
	if err := waitDone(t, l, 5*time.Second); !isLost(err, lease.CauseMissing) {
		t.Fatalf("Err = %v", err)
	}
	if _, err := c.Acquire(ctx, env.Name("m-0"), time.Second); err != nil {
		t.Fatal(err)
	}

	text := scrape()
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
