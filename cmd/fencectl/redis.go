package main

import (
	"context"
	"flag"
	"fmt"
	"github.com/fencekit/fencekit/internal/valid"
	"log/slog"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/lease"
	"github.com/fencekit/fencekit/lease/redislease"
)

var quietLogger = slog.New(slog.DiscardHandler)

func init() { backends["redis"] = addRedisFlags }

// addRedisFlags adds the Redis connection flags.
func addRedisFlags(fs *flag.FlagSet) func(conn) (*store, error) {
	addr := fs.String("redis", envOr(envRedisAddr, defRedisAddr),
		"Redis: host:port, a redis:// or rediss:// URL, or with -cluster comma-separated seed addresses (env "+envRedisAddr+")")
	cluster := fs.Bool("cluster", false, "connect to a Redis Cluster (SCAN then covers every master)")
	return func(c conn) (*store, error) { return connectRedis(c, *addr, *cluster) }
}

// connectRedis connects the Redis backend: package redislease. A bad address is a usage error; a
// Cluster node reached without -cluster is an error saying so (its keys
// are spread over masters: one node's answers would be partial).
func connectRedis(c conn, addr string, cluster bool) (*store, error) {
	t := c.timeout
	var rdb redis.UniversalClient
	switch {
	case cluster:
		opts := &redis.ClusterOptions{Addrs: strings.Split(addr, ",")}
		if strings.Contains(addr, "://") {
			o, err := redis.ParseClusterURL(addr)
			if err != nil {
				return nil, usagef("-redis %q: %v", addr, err)
			}
			opts = o
		}
		opts.ContextTimeoutEnabled = true
		opts.DialTimeout, opts.ReadTimeout, opts.WriteTimeout = t, t, t
		rdb = redis.NewClusterClient(opts)
	case strings.Contains(addr, "://"):
		opts, err := redis.ParseURL(addr)
		if err != nil {
			return nil, usagef("-redis %q: %v", addr, err)
		}
		opts.ContextTimeoutEnabled = true
		opts.DialTimeout, opts.ReadTimeout, opts.WriteTimeout = t, t, t
		rdb = redis.NewClient(opts)
	default:
		if addr == "" || strings.Contains(addr, ",") {
			return nil, usagef("-redis %q: want one host:port (several addresses need -cluster)", addr)
		}
		rdb = redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true, DialTimeout: t, ReadTimeout: t, WriteTimeout: t})
	}
	leases, err := newLeaseClient(func(o *lease.Options) (*lease.Client, error) { return redislease.New(rdb, o) }, c.prefix)
	if err != nil {
		rdb.Close()
		return nil, err
	}
	if !cluster {
		if err := refuseClusterNode(rdb, addr, t); err != nil {
			rdb.Close()
			return nil, err
		}
	}
	releases := func(ctx context.Context, name string) (<-chan fence.Token, error) {
		return redisReleases(ctx, rdb, c, name)
	}
	return &store{leases: leases, close: func() { rdb.Close() }, releases: releases}, nil
}

// refuseClusterNode fails when the server is a Redis Cluster node.
func refuseClusterNode(rdb redis.UniversalClient, addr string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	info, err := rdb.Info(ctx, "cluster").Result()
	if err != nil {
		return fmt.Errorf("redis %s: %w", addr, err)
	}
	if strings.Contains(info, "cluster_enabled:1") {
		return fmt.Errorf("redis %s is a Redis Cluster node: add -cluster (one node holds only some of the leases)", addr)
	}
	return nil
}

// redisReleases listens to name's release channel (redislease's package doc:
// <prefix>:{<name>}:released, each message the released lock key's value
// "<token>:<identity>:<owner id>"): release --force always publishes
// there, a holder's release when someone waits.
func redisReleases(ctx context.Context, rdb redis.UniversalClient, c conn, name string) (<-chan fence.Token, error) {
	ps := rdb.Subscribe(ctx, c.prefix+":{"+name+"}:released")
	rctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	if _, err := ps.Receive(rctx); err != nil {
		ps.Close()
		return nil, fmt.Errorf("subscribe to %s's releases: %w", name, err)
	}
	out := make(chan fence.Token)
	go func() {
		defer ps.Close()
		msgs := ps.Channel()
		for {
			select {
			case <-ctx.Done():
				return
			case m := <-msgs:
				head, _, _ := strings.Cut(m.Payload, ":")
				tok, _ := valid.ParseToken(head) // 0 for a value fencekit did not write
				select {
				case out <- tok:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return out, nil
}
