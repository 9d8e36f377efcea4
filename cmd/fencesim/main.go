// Command fencesim replays the fencing problem in a deterministic
// simulator: with no arguments it runs Kleppmann's GC-pause scenario with
// fencing off and on and prints both timelines side by side.
//
// Usage:
//
//	fencesim [SCENARIO] [-ttl D] [-heartbeat D] [-pause D] [-work D] [-delay D]
//	         [-drift F] [-seed N] [-fencing both|on|off] [-json] [-html FILE]
//	fencesim explore [-runs N] [-seed N] [distribution flags] [-show N]
//	fencesim replay -seed N [distribution flags] [-fencing both|on|off] [-json] [-html FILE]
//	fencesim list
//
// Scenarios: kleppmann (default), crash, heartbeat, pause-heartbeat, drift.
// Durations need a unit (45s, 300ms) and must not be negative. Bad flags
// exit with status 2; an exploration that finds a violation with fencing
// on exits with status 1 and names the seed.
package main

import "os"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}
