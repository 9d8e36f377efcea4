package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/lease"
)

// store is one lease issuer as the lease commands (status, list, watch,
// release, bump) see it. Each backend is one file (redis.go, postgres.go,
// ...) that adds its connection flags and registers in backends; it reads
// leases through what its issuer package exports, never a copy of its
// layout.
type store interface {
	// client inspects leases (one round trip each).
	client() *lease.Client
	// names returns, sorted, the lease names that match the glob pattern.
	names(ctx context.Context, pattern string) ([]string, error)
	// forceRelease ends name's lease whoever holds it, or only if its
	// holder has token only (when not 0).
	forceRelease(ctx context.Context, name string, only fence.Token) (releaseResult, error)
	// bump raises name's token counter to target, never lowering it.
	bump(ctx context.Context, name string, target fence.Token) (bumpResult, error)
	// releases reports the tokens of name's releases as the store
	// announces them, until ctx ends; nil when it announces none.
	releases(ctx context.Context, name string) (<-chan fence.Token, error)
	close() error
}

// conn is what a backend needs to connect: the request bound and the key
// prefix of the application's lease.Options.
type conn struct {
	timeout time.Duration
	prefix  string
}

// backends are the -backend choices, registered by each backend's file:
// addFlags adds its connection flags and returns its connect function.
var backends = map[string]func(fs *flag.FlagSet) func(conn) (store, error){}

// errUnsupported is returned by a store for a command its issuer cannot do.
var errUnsupported = errors.New("not supported by this backend")

// storeFlags are the flags of the lease commands.
type storeFlags struct {
	backend *string
	prefix  *string
	timeout *time.Duration
	connect map[string]func(conn) (store, error)
}

func addStoreFlags(fs *flag.FlagSet) *storeFlags {
	names := slices.Sorted(maps.Keys(backends))
	f := &storeFlags{connect: map[string]func(conn) (store, error){}}
	f.backend = fs.String("backend", "redis", "the lease issuer: "+strings.Join(names, ", "))
	f.prefix = fs.String("prefix", lease.DefaultKeyPrefix, "the key prefix the application's lease.Options.KeyPrefix set")
	f.timeout = timeoutFlag(fs)
	for _, n := range names {
		f.connect[n] = backends[n](fs)
	}
	return f
}

// open connects to the chosen backend. A bad flag is a usage error.
func (f *storeFlags) open() (store, error) {
	connect, ok := f.connect[*f.backend]
	if !ok {
		return nil, usagef("-backend %q: want one of %s", *f.backend, strings.Join(slices.Sorted(maps.Keys(f.connect)), ", "))
	}
	if *f.timeout <= 0 {
		return nil, usagef("-timeout %v must be positive", *f.timeout)
	}
	if _, err := lease.KeyPrefix(*f.prefix); err != nil {
		return nil, usagef("-prefix: %v", err)
	}
	return connect(conn{timeout: *f.timeout, prefix: *f.prefix})
}

// inspect reads name's lease, bounded by the request timeout.
func inspect(ctx context.Context, s store, timeout time.Duration, name string) (lease.Info, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return s.client().Inspect(ctx, name)
}

// newLeaseClient makes the lease client of a store: quiet, with prefix.
func newLeaseClient(newClient func(*lease.Options) (*lease.Client, error), prefix string) (*lease.Client, error) {
	c, err := newClient(&lease.Options{KeyPrefix: prefix, Logger: quietLogger})
	if errors.Is(err, lease.ErrInvalid) {
		return nil, usagef("%v", err)
	}
	return c, err
}

// unsupported is the error of a command a backend cannot do.
func unsupported(backend, what, why string) error {
	return fmt.Errorf("%s on -backend %s: %w: %s", what, backend, errUnsupported, why)
}
