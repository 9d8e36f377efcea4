package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fencekit/fencekit/lease"
	"github.com/fencekit/fencekit/lease/redislease"
)

// redisFlags are the connection flags of the Redis commands.
type redisFlags struct {
	addr    string
	cluster bool
	prefix  string
	timeout *time.Duration
}

func addRedisFlags(fs *flag.FlagSet) *redisFlags {
	f := &redisFlags{}
	fs.StringVar(&f.addr, "redis", envOr(envRedisAddr, defRedisAddr),
		"Redis: host:port, a redis:// or rediss:// URL, or with -cluster comma-separated seed addresses (env "+envRedisAddr+")")
	fs.BoolVar(&f.cluster, "cluster", false, "connect to a Redis Cluster (SCAN then covers every master)")
	fs.StringVar(&f.prefix, "prefix", lease.DefaultKeyPrefix, "the key prefix the application's lease.Options.KeyPrefix set")
	f.timeout = timeoutFlag(fs)
	return f
}

// redisConn is an open Redis connection and the lease client on it.
type redisConn struct {
	rdb     redis.UniversalClient
	leases  *lease.Client
	prefix  string
	timeout time.Duration
}

// connect opens the connection (nothing is sent yet). A bad address or
// prefix is a usage error.
func (f *redisFlags) connect() (*redisConn, error) {
	if *f.timeout <= 0 {
		return nil, usagef("-timeout %v must be positive", *f.timeout)
	}
	var rdb redis.UniversalClient
	switch {
	case f.cluster:
		opts := &redis.ClusterOptions{Addrs: strings.Split(f.addr, ",")}
		if strings.Contains(f.addr, "://") {
			o, err := redis.ParseClusterURL(f.addr)
			if err != nil {
				return nil, usagef("-redis %q: %v", f.addr, err)
			}
			opts = o
		}
		opts.ContextTimeoutEnabled = true
		opts.DialTimeout, opts.ReadTimeout, opts.WriteTimeout = *f.timeout, *f.timeout, *f.timeout
		rdb = redis.NewClusterClient(opts)
	case strings.Contains(f.addr, "://"):
		opts, err := redis.ParseURL(f.addr)
		if err != nil {
			return nil, usagef("-redis %q: %v", f.addr, err)
		}
		opts.ContextTimeoutEnabled = true
		opts.DialTimeout, opts.ReadTimeout, opts.WriteTimeout = *f.timeout, *f.timeout, *f.timeout
		rdb = redis.NewClient(opts)
	default:
		if f.addr == "" || strings.Contains(f.addr, ",") {
			return nil, usagef("-redis %q: want one host:port (several addresses need -cluster)", f.addr)
		}
		rdb = redis.NewClient(&redis.Options{Addr: f.addr, ContextTimeoutEnabled: true,
			DialTimeout: *f.timeout, ReadTimeout: *f.timeout, WriteTimeout: *f.timeout})
	}
	leases, err := redislease.New(rdb, &lease.Options{KeyPrefix: f.prefix, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		rdb.Close()
		if errors.Is(err, lease.ErrInvalid) {
			return nil, usagef("%v", err)
		}
		return nil, err
	}
	return &redisConn{rdb: rdb, leases: leases, prefix: f.prefix, timeout: *f.timeout}, nil
}

func (c *redisConn) Close() error { return c.rdb.Close() }

// call runs fn with a context bounded by the request timeout.
func (c *redisConn) call(ctx context.Context, fn func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	return fn(ctx)
}

// The key layout of package lease (lease/doc.go, "Keys"): a lease named N
// is <prefix>:{N}:lock ("<token>:<owner>"), <prefix>:{N}:token (the
// counter) and the channel <prefix>:{N}:released. A test holds this to
// what lease writes.
const (
	suffixLock     = "lock"
	suffixCounter  = "token"
	suffixReleased = "released"
)

func (c *redisConn) key(name, suffix string) string {
	return c.prefix + ":{" + name + "}:" + suffix
}

// inspect reads name's lease through package lease, one round trip.
func (c *redisConn) inspect(ctx context.Context, name string) (info lease.Info, err error) {
	err = c.call(ctx, func(ctx context.Context) error {
		info, err = c.leases.Inspect(ctx, name)
		return err
	})
	return info, err
}

// names returns the names of the leases with a lock key or a token
// counter whose name matches the glob pattern, sorted, scanning every
// master of a cluster. Keys under the prefix that are not a lease's are
// skipped. Each SCAN page is bounded by the request timeout, not the
// whole scan.
func (c *redisConn) names(ctx context.Context, pattern string) ([]string, error) {
	match := globEscape(c.prefix) + ":{" + pattern + "}:*"
	var (
		mu  sync.Mutex
		set = map[string]bool{}
	)
	scan := func(ctx context.Context, rdb redis.Cmdable) error {
		iter := rdb.Scan(ctx, 0, match, 1000).Iterator()
		for iter.Next(ctx) {
			if name, ok := c.nameOf(iter.Val()); ok {
				mu.Lock()
				set[name] = true
				mu.Unlock()
			}
		}
		return iter.Err()
	}
	var err error
	if cc, ok := c.rdb.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error { return scan(ctx, node) })
	} else {
		err = scan(ctx, c.rdb)
	}
	if err != nil {
		return nil, fmt.Errorf("SCAN %s: %w", match, err)
	}
	names := make([]string, 0, len(set))
	for n := range set {
		names = append(names, n)
	}
	slices.Sort(names)
	return names, nil
}

// nameOf returns the lease name of a lock or counter key.
func (c *redisConn) nameOf(key string) (string, bool) {
	rest, ok := strings.CutPrefix(key, c.prefix+":{")
	if !ok {
		return "", false
	}
	i := strings.LastIndex(rest, "}:")
	if i < 0 {
		return "", false
	}
	name, suffix := rest[:i], rest[i+2:]
	if suffix != suffixLock && suffix != suffixCounter || lease.ValidateName(name) != nil {
		return "", false
	}
	return name, true
}

// globEscape quotes Redis glob's special characters.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '*', '?', '[', ']', '\\':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
