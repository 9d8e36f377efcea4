package sim

import (
	"fmt"
	"strings"
)

// Storage is how the simulated storage treats the tokens that reads and
// writes carry. The zero value is [StorageOff].
type Storage uint8

const (
	// StorageOff accepts every write: no fencing.
	StorageOff Storage = iota
	// StorageWrites applies the write check alone, Kleppmann's rule: a
	// write carrying token t is accepted only if no write carrying a token
	// above t was accepted before. Reads claim nothing, so a late write
	// from an old holder still lands while the new holder is working, and
	// the new holder's write then silently replaces it (a lost update).
	StorageWrites
	// StorageClaim is fencekit's storage: the write check plus the claim.
	// The first access after acquiring (here the read) records the
	// holder's token, so writes with older tokens are refused from then
	// on, even before the new holder writes anything ([fencetest.Store]
	// Claim and Put; sqlfence.Claim for PostgreSQL).
	StorageClaim
	// StorageCheckThenWrite has StorageClaim's rules but is not atomic: the
	// writer asks the storage to check its token, and on "ok" sends the
	// write in a second request, which the storage applies without checking
	// again (as a SELECT followed by an UPDATE outside one transaction
	// would). A holder paused between the check and the write slips
	// through, and its write sets the stored token back to its own.
	StorageCheckThenWrite
)

var storageNames = [...]string{
	StorageOff:            "off",
	StorageWrites:         "writes",
	StorageClaim:          "claim",
	StorageCheckThenWrite: "check-then-write",
}

// Storages returns every storage mode, in the order the docs teach them.
func Storages() []Storage {
	return []Storage{StorageOff, StorageWrites, StorageClaim, StorageCheckThenWrite}
}

// String returns the mode's name as the -fencing flag spells it: "off",
// "writes", "claim" or "check-then-write".
func (s Storage) String() string {
	if int(s) < len(storageNames) {
		return storageNames[s]
	}
	return fmt.Sprintf("storage(%d)", int(s))
}

// Fenced reports whether the storage checks tokens at all.
func (s Storage) Fenced() bool { return s != StorageOff }

// Describe says in one sentence what the storage does with tokens.
func (s Storage) Describe() string {
	switch s {
	case StorageOff:
		return "the storage accepts every write"
	case StorageWrites:
		return "the storage applies the write check only: it refuses a write whose token is below one it has accepted"
	case StorageClaim:
		return "the storage applies the write check and the claim: a read records the reader's token, and any read or write with an older token is refused"
	case StorageCheckThenWrite:
		return "the storage checks the token (write check and claim) in one request and applies the write in a second, without checking again"
	}
	return s.String()
}

// ParseStorage parses a storage mode by name (see [Storage.String]); "on"
// is accepted for "claim". The error lists the known names.
func ParseStorage(name string) (Storage, error) {
	if name == "on" {
		return StorageClaim, nil
	}
	for _, s := range Storages() {
		if s.String() == name {
			return s, nil
		}
	}
	names := make([]string, 0, len(storageNames))
	for _, s := range Storages() {
		names = append(names, s.String())
	}
	return 0, fmt.Errorf("sim: unknown storage %q (known: %s)", name, strings.Join(names, ", "))
}
