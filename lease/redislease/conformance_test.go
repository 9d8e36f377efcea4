package redislease_test

import (
	"context"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fencekit/fencekit/internal/leasetest"
	"github.com/fencekit/fencekit/internal/testenv"
	"github.com/fencekit/fencekit/lease"
	"github.com/fencekit/fencekit/lease/redislease"
)

// The conformance suite of internal/leasetest, run on this issuer: every
// issuer's package runs the same list of cases through leasetest.Run with
// its own factory.

const (
	envRedisAddr   = "LEASETEST_REDIS_ADDR"
	envRedisPrefix = "LEASETEST_REDIS_PREFIX"
)

var redisIssuer = leasetest.Issuer{
	Name: "redis",
	TTL:  time.Second,
	Open: func(t testing.TB) leasetest.Namespace { return redisNS{testenv.Redis(t)} },
	FromEnv: func(context.Context) (*lease.Client, error) {
		rdb := redis.NewClient(&redis.Options{Addr: os.Getenv(envRedisAddr)})
		return redislease.New(rdb, &lease.Options{KeyPrefix: os.Getenv(envRedisPrefix)})
	},
}

func init() { leasetest.Register(redisIssuer) }

func TestConformance(t *testing.T) { leasetest.Run(t, redisIssuer) }

type redisNS struct{ env *testenv.RedisEnv }

func (ns redisNS) Env() []string {
	return []string{envRedisAddr + "=" + ns.env.Addr, envRedisPrefix + "=" + ns.env.Prefix}
}

func (ns redisNS) Client(t testing.TB, opts *lease.Options) *leasetest.Conn {
	rdb := redis.NewClient(&redis.Options{Addr: ns.env.Addr})
	t.Cleanup(func() { rdb.Close() })
	var sent atomic.Int64
	rdb.AddHook(countHook{&sent})
	o := lease.Options{}
	if opts != nil {
		o = *opts
	}
	o.KeyPrefix = ns.env.Prefix
	c, err := redislease.New(rdb, &o)
	if err != nil {
		t.Fatal(err)
	}
	leasetest.CloseAtCleanup(t, c)
	return &leasetest.Conn{Client: c, Cut: func() { rdb.Close() }, Sent: sent.Load}
}

// countHook counts the commands and pipelines a go-redis client sends.
type countHook struct{ n *atomic.Int64 }

func (h countHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h countHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { h.n.Add(1); return next(ctx, cmd) }
}

func (h countHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { h.n.Add(1); return next(ctx, cmds) }
}
