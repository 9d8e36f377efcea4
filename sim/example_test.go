package sim_test

import (
	"context"
	"fmt"

	"github.com/fencekit/fencekit/sim"
)

// Kleppmann's scenario with fencing: A's write after its pause is rejected.
func ExampleScenario_Run() {
	sc, _ := sim.Lookup("kleppmann")
	p := sc.Defaults // TTL 10s, heartbeat 3s, A pauses 15s
	p.Storage = sim.StorageClaim
	res, err := sc.Run(p)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range res.Summary() {
		fmt.Println(s)
	}
	// Output:
	// SAFE: 1 write(s) accepted, 1 rejected, none lost, tokens never went backwards.
	// A's write A1 (token 33) was REJECTED as stale at 17.5s: the storage had already seen token 34, claimed by B's read at 10.5s.
	// A was paused from 2.4s to 17.4s (15s) holding lease 33, which expired at 10.1s, during the pause: A did not know.
	// Final value of "file": "B1".
}

// Exploring random schedules: fencing on never lets a stale write through.
func ExampleExplore() {
	p := sim.DefaultExploreParams()
	p.Runs, p.Seed = 300, 7
	rep, err := sim.Explore(context.Background(), p, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("fencing on, violations:", rep.Tally(sim.StorageClaim).Violations)
	fmt.Println("fencing off found violations:", rep.Tally(sim.StorageOff).Violations > 0)
	// Output:
	// fencing on, violations: 0
	// fencing off found violations: true
}

// Run takes a hand-written configuration.
func ExampleRun() {
	res, err := sim.Run(&sim.Config{
		TTL:     10e9, // 10s
		Storage: sim.StorageClaim,
		Clients: []sim.ClientSpec{
			{Name: "A", Step: 2e9, Pauses: []sim.Pause{{At: 1e9, For: 20e9}}},
			{Name: "B", Start: 3e9, Step: 1e9},
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, w := range res.Writes {
		fmt.Printf("%s token %d accepted=%v\n", res.Clients[w.Client], w.Token, w.Accepted)
	}
	// Output:
	// B token 2 accepted=true
	// A token 1 accepted=false
}
