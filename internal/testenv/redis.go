package testenv

import (
	"context"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"
)

// RedisEnv is one test's view of the shared Redis server.
type RedisEnv struct {
	// Addr is the server's host:port.
	Addr string
	// Client is a client of the server, closed at cleanup.
	Client *redis.Client
	// Prefix is unique to this test, made of [a-z0-9-] only. Every key whose
	// name contains it is deleted at cleanup, so build key and lease names
	// with [RedisEnv.Name].
	Prefix string
}

var redisServer resolved

// Redis returns the test's Redis environment. The server is found through
// FENCEKIT_REDIS_ADDR (default 127.0.0.1:6379); see the package doc for what
// happens when it is unreachable.
func Redis(tb testing.TB) *RedisEnv {
	tb.Helper()
	redisServer.once.Do(func() {
		addr, _ := getenv(EnvRedisAddr, DefaultRedisAddr)
		redisServer.where, redisServer.err = addr, pingRedis(addr)
	})
	if redisServer.err != nil {
		unavailable(tb, "Redis", redisServer.where, EnvRedisAddr, redisServer.err)
	}
	env := &RedisEnv{
		Addr:   redisServer.where,
		Client: redis.NewClient(&redis.Options{Addr: redisServer.where}),
		Prefix: "fk-" + uniqueID(tb),
	}
	tb.Cleanup(func() {
		if err := DeleteRedisKeys(context.Background(), env.Client, "*"+env.Prefix+"*"); err != nil {
			tb.Errorf("testenv: clean up Redis keys of %s: %v", env.Prefix, err)
		}
		env.Client.Close()
	})
	return env
}

// Name returns a key or lease name unique to this test: Prefix-suffix.
func (e *RedisEnv) Name(suffix string) string { return e.Prefix + "-" + suffix }

// DeleteRedisKeys deletes every key matching pattern, scanning in batches.
func DeleteRedisKeys(ctx context.Context, c redis.UniversalClient, pattern string) error {
	iter := c.Scan(ctx, 0, pattern, 500).Iterator()
	for iter.Next(ctx) {
		// DEL one key at a time: keys of one test may live in different
		// cluster slots.
		if err := c.Del(ctx, iter.Val()).Err(); err != nil {
			return err
		}
	}
	return iter.Err()
}

func pingRedis(addr string) error {
	c := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: dialTimeout, MaxRetries: -1})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), dialTimeout)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("PING: %w", err)
	}
	return nil
}
