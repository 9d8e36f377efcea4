package main

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fencekit/fencekit/internal/leasearg"
	"github.com/fencekit/fencekit/internal/testenv"
	"github.com/fencekit/fencekit/lease"
	"github.com/fencekit/fencekit/lease/pglease"
)

// TestPostgresBackend runs the lease commands on pglease's table: status
// and list with the holder's identity, watch, release --force, and bump
// (checkBump).
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
	checkBump(t, e, c, "postgres", "orders/eu")
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

// TestAdvisoryBackend runs the lease commands on pglease.NewAdvisory's
// leases: status and list see the lock (REMAINING no expiry), and release
// --force ends the holder's session, so its Context ends with ErrLost.
func TestAdvisoryBackend(t *testing.T) {
	pg := testenv.PostgresMigrated(t)
	ctx := context.Background()
	e := []string{envPostgresURL + "=" + pg.URL}
	c, err := pglease.NewAdvisory(pg.Pool, &lease.Options{Identity: "adv-worker/3", Logger: quietLogger})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(ctx) })
	held := acquire(t, c, "jobs/nightly", 3*time.Second) // renewed every second: sees the ended session soon
	done := acquire(t, c, "jobs/hourly", time.Minute)
	if err := done.Release(ctx); err != nil {
		t.Fatal(err)
	}
	st := decode[[]leaseStatus](t, runWant(t, e, 0, "status", "-json", "-backend", "postgres-advisory", "jobs/nightly", "jobs/hourly"))
	if len(st) != 2 || !st[0].Held || st[0].Holder != uint64(held.Token()) || st[0].Identity != "adv-worker/3" || st[1].Held || st[1].Last != uint64(done.Token()) {
		t.Errorf("status: %+v", st)
	}
	if r := runWant(t, e, 0, "status", "-backend", "postgres-advisory", "jobs/nightly"); !strings.Contains(r.stdout, "no expiry") {
		t.Errorf("status of an advisory lease: %s, want no expiry", r.stdout)
	}
	ls := decode[[]leaseStatus](t, runWant(t, e, 0, "list", "-json", "-backend", "postgres-advisory", "jobs/*"))
	if len(ls) != 2 || ls[0].Name != "jobs/hourly" || ls[1].Name != "jobs/nightly" || !ls[1].Held {
		t.Errorf("list jobs/*: %+v", ls)
	}
	// The table mode does not see advisory leases: -backend picks the mode.
	if ls := decode[[]leaseStatus](t, runWant(t, e, 0, "list", "-json", "-backend", "postgres", "jobs/*")); len(ls) != 0 {
		t.Errorf("list -backend postgres: %+v, want none", ls)
	}
	r := runWant(t, e, exitFailed, "release", "--force", "--token", "1", "-backend", "postgres-advisory", "jobs/nightly")
	if held.Err() != nil {
		t.Fatalf("release --force --token 1 of a lease held by %d ended it: %v (%s)", held.Token(), held.Err(), r.stdout)
	}
	r = runWant(t, e, 0, "release", "--force", "-backend", "postgres-advisory", "jobs/nightly")
	if !strings.Contains(r.stdout, "adv-worker/3") {
		t.Errorf("release --force: %s", r.stdout)
	}
	select {
	case <-held.Done():
		if !errors.Is(held.Err(), lease.ErrLost) {
			t.Errorf("the holder's lease ended with %v, want ErrLost", held.Err())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the holder's lease still live 10s after release --force ended its session")
	}
	checkBump(t, e, c, "postgres-advisory", "jobs/nightly")
}

// checkBump bumps the free lease name on backend to a token half a second
// ahead of the clock: c's next grant is above it, and a second bump of
// the name, now held, is refused naming the holder.
func checkBump(t *testing.T, e []string, c *lease.Client, backend, name string) {
	t.Helper()
	to := uint64(time.Now().Add(leasearg.MaxAhead / 2).UnixMicro())
	b := decode[bumpResult](t, runWant(t, e, 0, "bump", "-json", "-backend", backend, name, "--to", strconv.FormatUint(to, 10)))
	if !b.Changed || b.After != to {
		t.Errorf("bump -backend %s --to %d: %+v", backend, to, b)
	}
	l := acquire(t, c, name, time.Minute)
	if uint64(l.Token()) <= to {
		t.Errorf("-backend %s: token after bump --to %d: %v, want above", backend, to, l.Token())
	}
	r := runWant(t, e, exitFailed, "bump", "-backend", backend, name, "--to", strconv.FormatUint(to+1e6, 10))
	if !strings.Contains(r.stderr, "held by token "+l.Token().String()) {
		t.Errorf("bump -backend %s of a held lease: %s, want refused naming the holder", backend, r.stderr)
	}
	if n := strings.Count(r.stderr, strconv.Quote(name)); n != 1 {
		t.Errorf("bump -backend %s of a held lease: %s names the lease %d times, want once", backend, r.stderr, n)
	}
}
