//go:build !race

package blobfence

// raceEnabled: see race_on_test.go.
const raceEnabled = false
