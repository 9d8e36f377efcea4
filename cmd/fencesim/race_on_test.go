//go:build race

package main

// raceEnabled skips checks too slow under the race detector.
const raceEnabled = true
