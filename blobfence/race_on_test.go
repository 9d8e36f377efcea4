//go:build race

package blobfence

// raceEnabled: the race detector makes sync.Pool drop items at random, so
// allocation counts that rely on a pool mean nothing under it.
const raceEnabled = true
