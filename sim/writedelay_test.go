package sim

import (
	"testing"
	"time"
)

// TestWriteDelayMakesTheWriteLate: A's write, sent in time but held in the
// network past its lease (no heartbeat), lands over B's without fencing and
// is refused with the claim; without the delay the run is safe.
func TestWriteDelayMakesTheWriteLate(t *testing.T) {
	sc, err := Lookup("kleppmann")
	if err != nil {
		t.Fatal(err)
	}
	p := sc.Defaults
	p.Heartbeat, p.Pause, p.WriteDelay = 0, 0, 15*time.Second
	off, err := sc.Run(p)
	if err != nil {
		t.Fatal(err)
	}
	if off.Violation() == nil || len(off.Lost()) != 1 {
		t.Fatalf("fencing off: violation %v, lost %v; want tokens backwards and B's write lost\n%v", off.Violation(), off.Lost(), off.Summary())
	}
	a := off.Writes[0]
	if a.Client != 0 || a.At-a.Sent != p.WriteDelay+p.Delay {
		t.Fatalf("A's write took %v in the network, want %v", a.At-a.Sent, p.WriteDelay+p.Delay)
	}
	p.Storage = StorageClaim
	on, err := sc.Run(p)
	if err != nil {
		t.Fatal(err)
	}
	if on.Violation() != nil || len(on.Lost()) != 0 || on.Writes[0].Accepted {
		t.Fatalf("write + claim: %v", on.Summary())
	}
	p.Storage, p.WriteDelay = StorageOff, 0
	safe, err := sc.Run(p)
	if err != nil {
		t.Fatal(err)
	}
	if safe.Violation() != nil || len(safe.Lost()) != 0 {
		t.Fatalf("no write delay: %v", safe.Summary())
	}
}

// TestWriteDelayHoldsTheFirstWriteOnly checks that a client's later writes
// take the plain message delay, and that a negative delay is refused.
func TestWriteDelayHoldsTheFirstWriteOnly(t *testing.T) {
	cfg := &Config{TTL: time.Minute, DelayMin: 10 * time.Millisecond, DelayMax: 10 * time.Millisecond,
		Clients: []ClientSpec{{Writes: 3, Step: time.Second, WriteDelay: 2 * time.Second}}}
	res, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Writes) != 3 {
		t.Fatalf("%d writes, want 3", len(res.Writes))
	}
	for i, want := range []time.Duration{2010 * time.Millisecond, 10 * time.Millisecond, 10 * time.Millisecond} {
		if got := res.Writes[i].At - res.Writes[i].Sent; got != want {
			t.Errorf("write %d took %v, want %v", i, got, want)
		}
	}
	cfg.Clients[0].WriteDelay = -time.Second
	if _, err := Run(cfg); err == nil {
		t.Fatal("a negative WriteDelay: want an error")
	}
}
