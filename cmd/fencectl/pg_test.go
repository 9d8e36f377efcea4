package main

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/testenv"
	"github.com/fencekit/fencekit/lease"
	"github.com/fencekit/fencekit/sqlfence"
)

func TestPGStatus(t *testing.T) {
	pg := testenv.PostgresMigrated(t)
	ctx := context.Background()
	e := []string{envPostgresURL + "=" + pg.URL}
	for i, res := range []string{"invoices", "reports/daily"} {
		if err := sqlfence.Claim(ctx, pg.Pool, res, fence.Token(100+i)); err != nil {
			t.Fatal(err)
		}
	}
	r := runWant(t, e, 0, "pg-status", "-json")
	rows := decode[[]guardRow](t, r)
	if len(rows) != 2 || rows[0].Resource != "invoices" || rows[0].Token != 100 || rows[1].Token != 101 || rows[0].UpdatedAt == nil ||
		time.Since(*rows[0].UpdatedAt) > time.Hour {
		t.Errorf("pg-status: %s", r.stdout)
	}
	r = runWant(t, e, 0, "pg-status", "-json", "reports/daily", "never")
	rows = decode[[]guardRow](t, r)
	if len(rows) != 2 || rows[0].Resource != "never" || rows[0].Token != 0 || rows[0].UpdatedAt != nil || rows[1].Token != 101 {
		t.Errorf("pg-status of two resources: %s", r.stdout)
	}
	r = runWant(t, e, 0, "pg-status", "never", "invoices")
	if !strings.Contains(r.stdout, "never claimed") || !strings.Contains(r.stdout, "100") {
		t.Errorf("text pg-status:\n%s", r.stdout)
	}

	// A database without fencekit's tables: every command that reads them
	// fails saying what to do, once.
	bare := []string{envPostgresURL + "=" + testenv.Postgres(t).URL}
	for _, args := range [][]string{{"pg-status"}, {"status", "-backend", "postgres", "job"}, {"list", "-backend", "postgres-advisory"}} {
		r = runWant(t, bare, exitFailed, args...)
		if strings.Count(r.stderr, "apply fencekit's migrations") != 1 {
			t.Errorf("fencectl %s on a database without fencekit's tables: %s", strings.Join(args, " "), r.stderr)
		}
	}
}

// TestRunbookCounterLostWithAClockBehind follows docs/operations.md's repair
// after Redis lost a token counter while its clock was an hour behind the
// tokens it had issued: new grants are fenced out; bump --time does not
// lift them over the storage's token, and a bump --to it is refused,
// changing nothing, with an error that says until when to wait.
func TestRunbookCounterLostWithAClockBehind(t *testing.T) {
	renv := testenv.Redis(t)
	pg := testenv.PostgresMigrated(t)
	ctx := context.Background()
	e := []string{envRedisAddr + "=" + renv.Addr, envPostgresURL + "=" + pg.URL}
	c := newLeases(t, renv.Client, nil)
	name := renv.Name("orders")
	counter := counterKey(name)
	write := func(l *lease.Lease) error {
		return sqlfence.InTx(ctx, pg.Pool, name, l.Token(), func(tx pgx.Tx) error { return nil })
	}

	// Tokens issued while the clock ran an hour ahead (as a counter this
	// high would be), then the counter is lost.
	ahead := uint64(time.Now().Add(time.Hour).UnixMicro())
	if err := renv.Client.Set(ctx, counter, strconv.FormatUint(ahead, 10), 0).Err(); err != nil {
		t.Fatal(err)
	}
	l := acquire(t, c, name, time.Minute)
	if err := write(l); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := renv.Client.Del(ctx, counter).Err(); err != nil {
		t.Fatal(err)
	}
	l = acquire(t, c, name, time.Minute)
	if err := write(l); !errors.Is(err, fence.ErrStale) {
		t.Fatalf("a grant after the loss wrote with %v: %v, want stale (the symptom)", l.Token(), err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}

	// The repair: bump --time, then (still refused) --to the storage's token.
	runWant(t, e, 0, "bump", name, "--time")
	l = acquire(t, c, name, time.Minute)
	if err := write(l); !errors.Is(err, fence.ErrStale) {
		t.Fatalf("after bump --time, a grant (%v) below the storage's token wrote: %v, want stale", l.Token(), err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	rows := decode[[]guardRow](t, runWant(t, e, 0, "pg-status", "-json", name))
	if len(rows) != 1 || rows[0].Token != ahead+1 {
		t.Fatalf("pg-status: %+v, want token %d", rows, ahead+1)
	}
	r := runWant(t, e, exitFailed, "bump", name, "--to", strconv.FormatUint(rows[0].Token, 10))
	if !strings.Contains(r.stderr, "wait until the server's clock passes") {
		t.Errorf("bump --to a token an hour ahead: %s, want refused saying until when to wait", r.stderr)
	}
	if v, err := renv.Client.Get(ctx, counter).Uint64(); err != nil || v != uint64(l.Token()) {
		t.Errorf("counter after the refused bump: %v, %v; want %v", v, err, l.Token())
	}
}
