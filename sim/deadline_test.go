package sim_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/lease"
	"github.com/fencekit/fencekit/sim"
)

// grantAll is the smallest lease.Backend: it grants every Acquire and
// Renew at once. The test below only reads the Client's own deadline
// arithmetic, which is the same whatever the store.
type grantAll struct{ tok fence.Token }

func (*grantAll) Name() string { return "grant-all" }
func (b *grantAll) Acquire(_ context.Context, name string, ttl time.Duration, _ string) (*lease.Grant, error) {
	b.tok++
	return &lease.Grant{Name: name, Token: b.tok, TTL: ttl}, nil
}
func (*grantAll) Renew(context.Context, []*lease.Grant) []error      { return nil }
func (*grantAll) Release(context.Context, *lease.Grant) error        { return nil }
func (*grantAll) Watch(context.Context, string) (lease.Watch, error) { return nil, context.Canceled }
func (*grantAll) Inspect(context.Context, string) (lease.Info, error) {
	return lease.Info{}, nil
}
func (*grantAll) Close(context.Context) error { return nil }

// TestDeadlineRuleMatchesLease holds the simulated lease to the real
// one's rule (DESIGN.md "Simulator"): a holder's lease ends at the send
// time of its acquire plus the TTL minus the drift margin. The real side
// is lease.Client.Acquire and Lease.Deadline with default options, on a
// synctest clock so that no time passes during the call; the simulated
// side is the validity a KindAcquired event reports, counted from the
// acquire request's send time.
func TestDeadlineRuleMatchesLease(t *testing.T) {
	for _, ttl := range []time.Duration{time.Second, 7300 * time.Millisecond, 10 * time.Second, time.Minute} {
		var real time.Duration
		synctest.Test(t, func(t *testing.T) {
			c, err := lease.NewClient(&grantAll{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			sent := time.Now()
			l, err := c.Acquire(t.Context(), "x", ttl)
			if err != nil {
				t.Fatal(err)
			}
			real = l.Deadline().Sub(sent)
			l.Release(t.Context())
		})
		for _, delay := range []time.Duration{0, 100 * time.Millisecond} {
			res, err := sim.Run(&sim.Config{TTL: ttl, DelayMin: delay, DelayMax: delay,
				Clients: []sim.ClientSpec{{Name: "A", Step: time.Millisecond}}})
			if err != nil {
				t.Fatal(err)
			}
			var sent, simulated time.Duration = -1, -1
			for _, e := range res.Events {
				switch e.Kind {
				case sim.KindGranted: // the lease service got the request sent at e.Sent
					sent = e.Sent
				case sim.KindAcquired:
					simulated = e.At + e.Dur - sent
				}
			}
			if simulated != real {
				t.Errorf("TTL %v, delay %v: simulated lease lasts %v from the acquire's send, lease.Client's %v", ttl, delay, simulated, real)
			}
		}
	}
}
