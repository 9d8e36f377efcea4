package render_test

import (
	"os"

	"github.com/fencekit/fencekit/sim"
	"github.com/fencekit/fencekit/sim/render"
)

// A one-client run printed as a terminal timeline.
func ExampleText() {
	res, _ := sim.Run(&sim.Config{
		TTL:     10e9,
		Storage: sim.StorageClaim,
		Clients: []sim.ClientSpec{{Name: "A", Step: 1e9}},
	})
	render.Text(os.Stdout, "one writer", res)
	// Output:
	// one writer
	// TTL 10s, heartbeat none. Times are virtual seconds; "write A1/1" is A's first write, carrying token 1.
	// Tokens start at 1 to stay readable; fencekit's Redis and PostgreSQL leases issue microsecond timestamps (about 1.8e15).
	// The lease column is who the lease service says holds the lease ("A:1": A, token 1; "-": nobody); ┃ marks a paused process.
	// Fencing ON: the storage applies the write check and the claim: a read records the reader's token, and any read or write with an older token is refused.
	//
	//          │ fencing ON
	// time     │ lease ┆ A
	// ─────────┼──────────────────────────
	//       0s │ A:1   ┆
	//       0s │ A:1   ┆ acquired 1
	//       0s │ A:1   ┆ read "" claims 1
	//       1s │ A:1   ┆ write A1/1 ok
	//       1s │ -     ┆ released
	//
	// Fencing ON:
	//   • SAFE: 1 write(s) accepted, 0 rejected, none lost, tokens never went backwards.
	//   • Final value of "file": "A1".
}
