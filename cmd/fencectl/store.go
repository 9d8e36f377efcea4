package main

import (
	"context"
	"errors"
	"flag"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/leasearg"
	"github.com/fencekit/fencekit/lease"
)

// store is one lease issuer as the lease commands (status, list, watch,
// release, bump) see it. Each backend is one file (redis.go, postgres.go,
// ...) that adds its connection flags and registers in backends; the
// commands call its *lease.Client (Inspect, Names, ForceRelease, Bump).
type store struct {
	leases *lease.Client // quiet, with -prefix
	close  func()        // closes the issuer's connection
	// releases, when not nil, reports the tokens of name's releases as
	// the issuer announces them (Redis), until ctx ends.
	releases func(ctx context.Context, name string) (<-chan fence.Token, error)
}

// conn is what a backend needs to connect: the request bound and the key
// prefix of the application's lease.Options.
type conn struct {
	timeout time.Duration
	prefix  string
}

// backends are the -backend choices, registered by each backend's file:
// addFlags adds its connection flags and returns its connect function.
var backends = map[string]func(fs *flag.FlagSet) func(conn) (*store, error){}

// storeFlags are the flags of the lease commands.
type storeFlags struct {
	backend *string
	prefix  *string
	timeout *time.Duration
	connect map[string]func(conn) (*store, error)
}

func addStoreFlags(fs *flag.FlagSet) *storeFlags {
	names := slices.Sorted(maps.Keys(backends))
	f := &storeFlags{connect: map[string]func(conn) (*store, error){}}
	f.backend = fs.String("backend", "redis", "the lease issuer: "+strings.Join(names, ", "))
	f.prefix = fs.String("prefix", leasearg.DefaultKeyPrefix, "the key prefix the application's lease.Options.KeyPrefix set")
	f.timeout = timeoutFlag(fs)
	for _, n := range names {
		f.connect[n] = backends[n](fs)
	}
	return f
}

// open connects to the chosen backend. A bad flag is a usage error.
func (f *storeFlags) open() (*store, error) {
	connect, ok := f.connect[*f.backend]
	if !ok {
		return nil, usagef("-backend %q: want one of %s", *f.backend, strings.Join(slices.Sorted(maps.Keys(f.connect)), ", "))
	}
	if *f.timeout <= 0 {
		return nil, usagef("-timeout %v must be positive", *f.timeout)
	}
	if _, err := leasearg.KeyPrefix(*f.prefix); err != nil {
		return nil, usagef("-prefix: %v", err)
	}
	return connect(conn{timeout: *f.timeout, prefix: *f.prefix})
}

// inspect reads name's lease, bounded by the request timeout.
func inspect(ctx context.Context, s *store, timeout time.Duration, name string) (lease.Info, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return s.leases.Inspect(ctx, name)
}

// newLeaseClient makes the lease client of a store: quiet, with prefix.
func newLeaseClient(newClient func(*lease.Options) (*lease.Client, error), prefix string) (*lease.Client, error) {
	c, err := newClient(&lease.Options{KeyPrefix: prefix, Logger: quietLogger})
	if errors.Is(err, lease.ErrInvalid) {
		return nil, usagef("%v", err)
	}
	return c, err
}
