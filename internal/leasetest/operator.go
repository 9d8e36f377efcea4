package leasetest

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/lease"
)

// testOperator checks that the operator calls of a Client behave alike on
// every issuer: Names lists the names granted once, ForceRelease ends
// only the holder it was given, Bump refuses a held name and a token far
// above the store's clock and raises the next grant's token, or says
// through lease.ErrUnsupported that the issuer cannot.
func testOperator(t *testing.T, iss Issuer) {
	ns := iss.Open(t)
	op, holder := ns.Client(t, quiet), ns.Client(t, quiet)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ttl := 10 * iss.TTL // no expiry during the test, even on a loaded machine

	held, err := holder.Acquire(ctx, "ops/held", ttl)
	if err != nil {
		t.Fatal(err)
	}
	free, err := holder.Acquire(ctx, "ops/free", ttl)
	if err != nil {
		t.Fatal(err)
	}
	if err := free.Release(ctx); err != nil {
		t.Fatal(err)
	}
	other, err := holder.Acquire(ctx, "other", ttl)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Release(ctx)

	if names, err := op.Names(ctx, "ops/*"); err != nil || !slices.Equal(names, []string{"ops/free", "ops/held"}) {
		t.Errorf(`Names("ops/*") = %q, %v; want ops/free and ops/held`, names, err)
	}
	if names, err := op.Names(ctx, "nothing*"); err != nil || len(names) != 0 {
		t.Errorf(`Names("nothing*") = %q, %v; want none`, names, err)
	}

	// ForceRelease of another token than the holder's ends nothing.
	info, err := op.ForceRelease(ctx, "ops/held", held.Token()+1)
	if err != nil || !info.Held || info.Holder != held.Token() || info.Identity == "" {
		t.Errorf("ForceRelease of another token: %+v, %v; want the holder %v with its identity", info, err, held.Token())
	}
	if info, err := op.Inspect(ctx, "ops/held"); err != nil || !info.Held || info.Holder != held.Token() {
		t.Fatalf("after ForceRelease of another token: %+v, %v; want still held by %v", info, err, held.Token())
	}
	info, err = op.ForceRelease(ctx, "ops/held", held.Token())
	if err != nil || !info.Held || info.Holder != held.Token() {
		t.Errorf("ForceRelease of the holder's token: %+v, %v; want the holder %v", info, err, held.Token())
	}
	if info, err := op.Inspect(ctx, "ops/held"); err != nil || info.Held {
		t.Errorf("after ForceRelease: %+v, %v; want free", info, err)
	}
	if info, err := op.ForceRelease(ctx, "never", 0); err != nil || info.Held {
		t.Errorf("ForceRelease of a name never granted: %+v, %v; want not held", info, err)
	}
	if info, err := op.Inspect(ctx, "other"); err != nil || !info.Held || info.Holder != other.Token() {
		t.Errorf("another name after the ForceReleases: %+v, %v; want still held by %v", info, err, other.Token())
	}

	testBump(ctx, t, iss, op, ttl, other)
}

// testBump bumps ops/free, granted and released once by testOperator, and
// held, held by another client.
func testBump(ctx context.Context, t *testing.T, iss Issuer, op *Conn, ttl time.Duration, held *lease.Lease) {
	last, err := op.Inspect(ctx, "ops/free")
	if err != nil {
		t.Fatal(err)
	}
	far := fence.Token(time.Now().Add(time.Hour).UnixMicro())
	_, _, err = op.Bump(ctx, "ops/free", max(far, last.Last+fence.Token(time.Hour.Microseconds())))
	if iss.NoBump {
		if !errors.Is(err, lease.ErrUnsupported) || strings.Count(err.Error(), "lease:") != 1 {
			t.Errorf("Bump: %v, want one error matching lease.ErrUnsupported that says lease: once", err)
		}
		return
	}
	if !errors.Is(err, lease.ErrInvalid) || !strings.Contains(err.Error(), "ahead of the server's clock") {
		t.Errorf("Bump an hour ahead: %v, want ErrInvalid saying it is ahead of the server's clock", err)
	}
	_, _, err = op.Bump(ctx, held.Name(), fence.Token(time.Now().UnixMicro()))
	if err == nil || errors.Is(err, lease.ErrInvalid) || !strings.Contains(err.Error(), "held by token "+held.Token().String()) {
		t.Errorf("Bump of a held name: %v, want an error naming the holder's token %v", err, held.Token())
	}
	if info, err := op.Inspect(ctx, held.Name()); err != nil || !info.Held || info.Holder != held.Token() || info.Last != held.Token() {
		t.Errorf("after a refused Bump of a held name: %+v, %v; want held by %v, Last unchanged", info, err, held.Token())
	}
	if info, err := op.Inspect(ctx, "ops/free"); err != nil || info.Last != last.Last {
		t.Errorf("after a refused Bump: %+v, %v; want Last %v unchanged", info, err, last.Last)
	}
	to := fence.Token(time.Now().UnixMicro())
	before, after, err := op.Bump(ctx, "ops/free", to)
	if err != nil || before != last.Last || after < max(to, before) {
		t.Fatalf("Bump(%v) = %v, %v, %v; want before %v, after at least both", to, before, after, err, last.Last)
	}
	l, err := op.Acquire(ctx, "ops/free", ttl)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	if l.Token() <= after {
		t.Errorf("token %v after a Bump to %v (after %v); want above", l.Token(), to, after)
	}
}
