package metricstest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel"

	"github.com/fencekit/fencekit/blobfence"
	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/obs"
	"github.com/fencekit/fencekit/internal/testenv"
	"github.com/fencekit/fencekit/lease"
	"github.com/fencekit/fencekit/lease/redislease"
	"github.com/fencekit/fencekit/sqlfence"
)

// global is the registry behind the process's global meter provider,
// installed once (the OpenTelemetry global can be set once per process).
var global *prometheus.Registry

func TestMain(m *testing.M) {
	if !testenv.IsChild() { // a child installs its own, late
		mp, reg, err := NewProvider()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		otel.SetMeterProvider(mp)
		global = reg
	}
	testenv.Main(m)
}

var quiet = slog.New(slog.DiscardHandler)

// provider returns a meter provider of the test's own and its scrape.
func provider(t *testing.T) (*lease.Options, func() string) {
	t.Helper()
	mp, reg, err := NewProvider()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mp.Shutdown(context.Background()) })
	return &lease.Options{MeterProvider: mp, Logger: quiet, KeyPrefix: "fkm"}, func() string {
		text, err := Exposition(reg)
		if err != nil {
			t.Fatal(err)
		}
		return text
	}
}

func mustMatch(t *testing.T, text string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !regexp.MustCompile(`(?m)^` + w + `$`).MatchString(text) {
			t.Errorf("exposition lacks %s:\n%s", w, text)
		}
	}
}

// lockKey is the Redis lock key of name under prefix (redislease's
// package doc).
func lockKey(prefix, name string) string { return prefix + ":{" + name + "}:lock" }

// steal overwrites name's lock key with another holder, as a second
// process that took the lease would.
func steal(t testing.TB, rdb *redis.Client, prefix, name string) {
	if err := rdb.Set(context.Background(), lockKey(prefix, name), "999:someone-else:ffff", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
}

// TestLeaseSeriesAtZeroFromTheStart: a new Client exports lease_lost_total
// for every cause at 0, so that increase() sees the first loss.
func TestLeaseSeriesAtZeroFromTheStart(t *testing.T) {
	opts, scrape := provider(t)
	env := testenv.Redis(t)
	if _, err := redislease.New(env.Client, opts); err != nil {
		t.Fatal(err)
	}
	mustMatch(t, scrape(), `lease_acquired_total 0`, `lease_lost_total\{cause="expired"\} 0`,
		`lease_lost_total\{cause="missing"\} 0`, `lease_lost_total\{cause="stolen"\} 0`)
}

// TestLeaseExposition: grants, a loss, heartbeats and acquire latencies
// read as a scrape shows them.
func TestLeaseExposition(t *testing.T) {
	opts, scrape := provider(t)
	opts.RenewInterval = 20 * time.Millisecond
	env := testenv.Redis(t)
	c, err := redislease.New(env.Client, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	t.Cleanup(func() { c.Close(ctx) })
	for i := range 3 {
		l, err := c.Acquire(ctx, env.Name("m-"+strconv.Itoa(i)), time.Second)
		if err != nil {
			t.Fatal(err)
		}
		l.Release(ctx)
	}
	l, err := c.Acquire(ctx, env.Name("m-lost"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(70 * time.Millisecond) // a few heartbeats
	env.Client.Del(ctx, lockKey(opts.KeyPrefix, l.Name()))
	select {
	case <-l.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the lease outlived its deleted key by 5s")
	}
	text := scrape()
	mustMatch(t, text, `lease_acquired_total 4`, `lease_lost_total\{cause="missing"\} 1`,
		`lease_heartbeat_latency_seconds_count\{result="ok"\} [1-9][0-9]*`,
		`lease_heartbeat_latency_seconds_count\{result="missing"\} 1`,
		`lease_acquire_latency_seconds_count\{result="ok"\} 4`,
		`# TYPE lease_heartbeat_latency_seconds histogram`)
}

// TestLeaseCountsNeverGoDown: the counters sum every Client on the
// provider, and a closed Client's counts stay in them.
func TestLeaseCountsNeverGoDown(t *testing.T) {
	opts, scrape := provider(t)
	env := testenv.Redis(t)
	ctx := context.Background()
	var cs []*lease.Client
	for _, name := range []string{"a", "b"} {
		c, err := redislease.New(env.Client, opts)
		if err != nil {
			t.Fatal(err)
		}
		l, err := c.Acquire(ctx, env.Name(name), time.Second)
		if err != nil {
			t.Fatal(err)
		}
		l.Release(ctx)
		cs = append(cs, c)
	}
	mustMatch(t, scrape(), `lease_acquired_total 2`)
	cs[0].Close(ctx)
	mustMatch(t, scrape(), `lease_acquired_total 2`)
	cs[1].Close(ctx)
}

const envRedis = "METRICSTEST_REDIS"

func init() { testenv.RegisterChild("late-provider", childLateProvider) }

// childLateProvider makes a Client on the global meter provider before the
// program installs one, as a program that builds its clients first does,
// then prints the exposition (each line prefixed "0: "), loses a lease to
// another holder and prints it again ("1: ").
func childLateProvider() int {
	rdb := redis.NewClient(&redis.Options{Addr: os.Getenv(envRedis)})
	c, err := redislease.New(rdb, &lease.Options{Logger: quiet, KeyPrefix: "fkm", RenewInterval: 20 * time.Millisecond})
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	mp, reg, err := NewProvider()
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	otel.SetMeterProvider(mp)
	print := func(prefix string) {
		text, err := Exposition(reg)
		if err != nil {
			fmt.Println("error:", err)
		}
		for line := range strings.Lines(text) {
			fmt.Print(prefix, line)
		}
	}
	print("0: ")
	name := "late-" + strconv.Itoa(os.Getpid())
	l, err := c.Acquire(context.Background(), name, 5*time.Second)
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	steal(testingTB{}, rdb, "fkm", name)
	<-l.Done()
	print("1: ")
	rdb.Del(context.Background(), lockKey("fkm", name), "fkm:{"+name+"}:token")
	fmt.Println("done")
	return 0
}

// testingTB lets the child call steal, which only ever calls Fatal.
type testingTB struct{ testing.TB }

func (testingTB) Fatal(args ...any) { fmt.Println(append([]any{"error:"}, args...)...); os.Exit(1) }

// TestLeaseProviderInstalledAfterClient: a Client made before the program
// installs its meter provider still exports every series at 0 from the
// first scrape, and counts the first loss.
func TestLeaseProviderInstalledAfterClient(t *testing.T) {
	env := testenv.Redis(t)
	child := testenv.StartChild(t, "late-provider", envRedis+"="+env.Addr)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
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
	mustMatch(t, out.String(), `0: lease_lost_total\{cause="expired"\} 0`, `0: lease_lost_total\{cause="missing"\} 0`,
		`0: lease_lost_total\{cause="stolen"\} 0`, `0: lease_acquired_total 0`, `1: lease_acquired_total 1`,
		`1: lease_lost_total\{cause="stolen"\} 1`, `1: lease_lost_total\{cause="expired"\} 0`)
}

// staleRejected reads fencekit_stale_rejected_total{store} on the global
// provider.
func staleRejected(t *testing.T, store string) float64 { return counter(t, global, store) }

// TestStaleSeriesBothStores: fencekit_stale_rejected_total has a series per
// store from the first scrape after registration, and the counter counts
// into it.
func TestStaleSeriesBothStores(t *testing.T) {
	obs.Global()
	text, err := Exposition(global)
	if err != nil {
		t.Fatal(err)
	}
	mustMatch(t, text, `fencekit_stale_rejected_total\{store="postgres"\} [0-9]+`, `fencekit_stale_rejected_total\{store="s3"\} [0-9]+`,
		`# HELP fencekit_stale_rejected_total Writes refused because a newer fencing token was already accepted, by store.`)
	before := staleRejected(t, obs.StoreS3)
	obs.Global().Add(obs.StoreS3)
	obs.Global().Add(obs.StoreS3)
	if got := staleRejected(t, obs.StoreS3) - before; got != 2 {
		t.Fatalf("two Add calls added %v", got)
	}
}

// TestStaleRejectedPostgres: every refused stale write counts once in
// fencekit_stale_rejected_total{store="postgres"}; accepted writes and a
// missing row do not.
func TestStaleRejectedPostgres(t *testing.T) {
	pg := testenv.PostgresMigrated(t)
	ctx := context.Background()
	if _, err := pg.Pool.Exec(ctx, `CREATE TABLE docs (id int PRIMARY KEY, body text, lock_version bigint NOT NULL DEFAULT 0)`); err != nil {
		t.Fatal(err)
	}
	if _, err := pg.Pool.Exec(ctx, `INSERT INTO docs (id, body) VALUES (1, '')`); err != nil {
		t.Fatal(err)
	}
	docs, err := sqlfence.NewTable("docs", "id", "lock_version", "body")
	if err != nil {
		t.Fatal(err)
	}
	before := staleRejected(t, obs.StorePostgres)
	if err := sqlfence.Claim(ctx, pg.Pool, "docs", 5); err != nil {
		t.Fatal(err)
	}
	if err := docs.Update(ctx, pg.Pool, 1, 5, "v5"); err != nil {
		t.Fatal(err)
	}
	if got := staleRejected(t, obs.StorePostgres) - before; got != 0 {
		t.Fatalf("accepted writes counted %v refusals", got)
	}
	refusals := []error{sqlfence.Claim(ctx, pg.Pool, "docs", 4), docs.Update(ctx, pg.Pool, 1, 4, "v4"), docs.Upsert(ctx, pg.Pool, 1, 3, "v3")}
	for i, err := range refusals {
		if !errors.Is(err, fence.ErrStale) {
			t.Fatalf("write %d: %v, want stale", i, err)
		}
	}
	if err := docs.Update(ctx, pg.Pool, 9, 6, "x"); !errors.Is(err, sqlfence.ErrNoRow) {
		t.Fatalf("missing row: %v", err)
	}
	if got := staleRejected(t, obs.StorePostgres) - before; got != float64(len(refusals)) {
		t.Fatalf(`fencekit_stale_rejected_total{store="postgres"} rose by %v, want %d`, got, len(refusals))
	}
}

// TestStaleRejectedS3: every put and delete refused as stale adds one to
// fencekit_stale_rejected_total{store="s3"}; accepted writes add nothing.
func TestStaleRejectedS3(t *testing.T) {
	env := testenv.S3(t)
	s, err := blobfence.New(env.Client, env.Bucket, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	before := staleRejected(t, obs.StoreS3)
	if err := s.Put(ctx, "k", []byte("B"), 34); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, "k", []byte("A late"), 33); !errors.Is(err, fence.ErrStale) {
		t.Fatalf("stale put: %v", err)
	}
	if err := s.Delete(ctx, "k", 30); !errors.Is(err, fence.ErrStale) {
		t.Fatalf("stale delete: %v", err)
	}
	if err := s.Put(ctx, "k", []byte("B again"), 34); err != nil {
		t.Fatal(err)
	}
	if got := staleRejected(t, obs.StoreS3) - before; got != 2 {
		t.Fatalf(`fencekit_stale_rejected_total{store="s3"} rose by %v; want 2 (one put, one delete)`, got)
	}
}
