//go:build race

package blobfence

// raceEnabled: the race detector makes sync.Pool drop items at random, so
// allocation limits that rely on a pool are looser under it.
const raceEnabled = true
