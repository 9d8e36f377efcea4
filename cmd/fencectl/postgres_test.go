package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencekit/fencekit/internal/testenv"
	"github.com/fencekit/fencekit/lease"
	"github.com/fencekit/fencekit/lease/pglease"
)

// TestPostgresBackend runs the lease commands on pglease's table: status
// and list with the holder's identity, watch, release --force, and bump
// refused with the reason.
func TestPostgresBackend(t *testing.T) {
	pg := testenv.PostgresMigrated(t)
	ctx := context.Background()
	e := []string{envPostgresURL + "=" + pg.URL}
	c, err := pglease.New(pg.Pool, &lease.Options{Identity: "pg-worker/7", Logger: quietLogger})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(ctx) })
	held := acquire(t, c, "orders/eu", 3*time.Second) // renewed every second: sees a forced release soon
	done := acquire(t, c, "orders/us", time.Minute)
	if err := done.Release(ctx); err != nil {
		t.Fatal(err)
	}
	acquire(t, c, "invoices_2", time.Minute) // '_' is literal in a pattern

	st := decode[[]leaseStatus](t, runWant(t, e, 0, "status", "-json", "-backend", "postgres", "orders/eu", "never"))
	if len(st) != 2 || !st[0].Held || st[0].Holder != uint64(held.Token()) || st[0].Identity != "pg-worker/7" || st[1].Held || st[1].Last != 0 {
		t.Errorf("status: %+v", st)
	}
	ls := decode[[]leaseStatus](t, runWant(t, e, 0, "list", "-json", "-backend", "postgres", "orders/*"))
	if len(ls) != 2 || ls[0].Name != "orders/eu" || !ls[0].Held || ls[1].Name != "orders/us" || ls[1].Held || ls[1].Last != uint64(done.Token()) {
		t.Errorf("list orders/*: %+v", ls)
	}
	if ls := decode[[]leaseStatus](t, runWant(t, e, 0, "list", "-json", "-backend", "postgres", "invoices?2")); len(ls) != 1 {
		t.Errorf("list invoices?2: %+v", ls)
	}
	if ls := decode[[]leaseStatus](t, runWant(t, e, 0, "list", "-json", "-backend", "postgres", "invoices%")); len(ls) != 0 {
		t.Errorf("list invoices%%: %+v, want '%%' literal", ls)
	}

	args := func(a ...string) []string { return append(a, "-backend", "postgres") }
	checkForcedRelease(t, e, args, "orders/eu", "pg-worker/7", held)
	runWant(t, e, 0, "release", "--force", "-backend", "postgres", "orders/eu") // not held: nothing to do
	r := runWant(t, e, exitFailed, "bump", "-backend", "postgres", "orders/eu", "--to", "5")
	if !strings.Contains(r.stderr, "not supported") {
		t.Errorf("bump on postgres: %s", r.stderr)
	}
	runWant(t, e, exitUsage, "status", "-backend", "nosuch", "x")
}

// checkForcedRelease watches name, held by held of identity, and forces
// its release (args adds the backend's flags): the watch prints held, then
// release; the holder's Context ends with ErrLost.
func checkForcedRelease(t *testing.T, e []string, args func(...string) []string, name, identity string, held *lease.Lease) {
	t.Helper()
	ch, cmd := lines(t, e, args("watch", "-json", "-count", "2", name)...)
	if ev := readEvent(t, ch); ev.Event != evHeld || ev.Identity != identity {
		t.Errorf("watch: %+v, want held by %s", ev, identity)
	}
	r := runWant(t, e, 0, args("release", "--force", name)...)
	if !strings.Contains(r.stdout, identity) {
		t.Errorf("release --force: %s", r.stdout)
	}
	if ev := readEvent(t, ch); ev.Event != evRelease || ev.Token != uint64(held.Token()) {
		t.Errorf("watch after release --force: %+v, want release", ev)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("watch exit: %v", err)
	}
	select {
	case <-held.Done():
		if !errors.Is(held.Err(), lease.ErrLost) {
			t.Errorf("holder ended with %v, want ErrLost", held.Err())
		}
	case <-time.After(time.Minute):
		t.Error("the holder did not see its lease gone")
	}
}
