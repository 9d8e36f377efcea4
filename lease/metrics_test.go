package lease

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fencekit/fencekit/internal/obs/obstest"
	"github.com/fencekit/fencekit/internal/testenv"
	"go.opentelemetry.io/otel"
)

func TestMetricsLostAtZeroFromTheStart(t *testing.T) {
	mp, scrape := obstest.Provider(t)
	if _, err := NewClient(newFakeRedis(), &Options{MeterProvider: mp}); err != nil {
		t.Fatal(err)
	}
	text := scrape()
	for _, cause := range []string{CauseExpired, CauseMissing, CauseStolen} {
		if want := `(?m)^lease_lost_total\{cause="` + cause + `"\} 0$`; !regexp.MustCompile(want).MatchString(text) {
			t.Errorf("a new client's exposition lacks %s:\n%s", want, text)
		}
	}
}

func init() { testenv.RegisterChild("lease-metrics-late-provider", childLateProvider) }

// childLateProvider makes a Client on the global meter provider before the
// program installs one (otel.SetMeterProvider), as a program that builds
// its clients first does, then prints the exposition (each line prefixed
// "0: "), loses a lease and prints it again ("1: ").
func childLateProvider() int {
	f := newFakeRedis()
	c, err := NewClient(f, &Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	mp, reg, err := obstest.NewProvider()
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	otel.SetMeterProvider(mp)
	print := func(prefix string) {
		text, err := obstest.Exposition(reg)
		if err != nil {
			fmt.Println("error:", err)
		}
		for line := range strings.Lines(text) {
			fmt.Print(prefix, line)
		}
	}
	print("0: ")
	l, err := c.Acquire(context.Background(), "late", 100*time.Millisecond)
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	f.steal("late")
	<-l.Done()
	print("1: ")
	fmt.Println("done")
	return 0
}

// TestMetricsProviderInstalledAfterClient: a Client made before the
// program installs its meter provider still exports every series at 0
// from the first scrape, and counts the first loss.
func TestMetricsProviderInstalledAfterClient(t *testing.T) {
	child := testenv.StartChild(t, "lease-metrics-late-provider")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out strings.Builder
	for {
		line, err := child.Expect(ctx, "")
		if err != nil {
			t.Fatalf("child output ended before done: %v\n%s", err, out.String())
		}
		if line == "done" {
			break
		}
		out.WriteString(line + "\n")
	}
	if err := child.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
	text := out.String()
	var want []string
	for _, cause := range []string{CauseExpired, CauseMissing, CauseStolen} {
		want = append(want, `0: lease_lost_total\{cause="`+cause+`"\} 0`)
	}
	want = append(want, `0: lease_acquired_total 0`, `1: lease_acquired_total 1`,
		`1: lease_lost_total\{cause="stolen"\} 1`, `1: lease_lost_total\{cause="expired"\} 0`)
	for _, w := range want {
		if !regexp.MustCompile(`(?m)^` + w + `$`).MatchString(text) {
			t.Errorf("exposition lacks %s:\n%s", w, text)
		}
	}
}

// TestMetricsCountsNeverGoDown: the counters sum every Client on the
// provider, and a closed Client's counts stay in them.
func TestMetricsCountsNeverGoDown(t *testing.T) {
	mp, scrape := obstest.Provider(t)
	ctx := context.Background()
	f := newFakeRedis()
	var cs []*Client
	for _, name := range []string{"a", "b"} {
		c, err := NewClient(f, &Options{MeterProvider: mp})
		if err != nil {
			t.Fatal(err)
		}
		release(t, mustAcquire(t, c, name, time.Second))
		cs = append(cs, c)
	}
	want := regexp.MustCompile(`(?m)^lease_acquired_total 2$`)
	if text := scrape(); !want.MatchString(text) {
		t.Fatalf("two clients' grants: want %s in\n%s", want, text)
	}
	cs[0].Close(ctx)
	if text := scrape(); !want.MatchString(text) {
		t.Fatalf("after one client closed: want %s in\n%s", want, text)
	}
	cs[1].Close(ctx)
}
