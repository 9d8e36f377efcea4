// Command fencesim replays the fencing problem in a deterministic
// simulator: with no arguments it runs Kleppmann's GC-pause scenario with
// fencing off and on and prints both timelines side by side.
//
// Usage (fencesim help lists every subcommand):
//
//	fencesim [SCENARIO] [-ttl D] [-heartbeat D] [-pause D] [-pause-at D] [-work D] [-delay D]
//	         [-write-delay D] [-drift F] [-seed N] [-fencing MODES] [-json] [-html FILE]
//	fencesim explore [-runs N] [-seed N] [distribution flags] [-fencing MODES] [-show N] [-json]
//	fencesim replay -seed N [distribution flags] [-fencing MODES] [-json] [-html FILE]
//	fencesim sweep [-pause LIST] [-heartbeat LIST] [-drift LIST] [-fencing MODES] [-runs N] [-format csv|json] [-svg FILE]
//	fencesim list
//
// Scenarios: kleppmann (default), check-then-write, crash, heartbeat,
// pause-heartbeat, drift. MODES are storage modes side by side, separated
// by commas: off, writes (the write check only), claim (write check and
// claim, also "on"), check-then-write (a non-atomic check); "both" is the
// scenario's own comparison. The same scenario against real servers is
// cmd/fencereal. sweep runs explore over a grid of pause/TTL, heartbeat/TTL
// and drift and writes outcome counts as CSV or JSON, and the violation map
// as SVG. The playground (the simulator in a browser page) is
// cmd/fenceplay. Durations need a unit (45s,
// 300ms) and must not be negative. Bad flags exit with status 2; an
// exploration that finds a violation with fencing on exits with status 1
// and names the seed.
package main

import "os"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}
