// Package redislease issues fencekit leases from Redis 7.0 or later (a
// single node, Sentinel, Cluster or Ring, through go-redis v9; acquire.lua
// uses SET with both NX and GET): the same *lease.Client
// as every issuer's (Do, TryDo, Campaign, Inspect, metrics, loss
// signalling), made with [New].
//
//	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379", ContextTimeoutEnabled: true})
//	c, err := redislease.New(rdb, nil) // sends nothing
//	l, err := c.Acquire(ctx, "invoices", 10*time.Second)
//
// Acquire, renew (a batch: one pipeline per node), release and inspect are
// one Lua script each, one round trip. Concurrent acquires, renewals and
// releases of one Client share round trips: a call that finds none in
// flight goes out at once; one that finds one in flight waits for it and
// then goes, with every call that arrived meanwhile, as one pipeline
// (lease.Options.NoBatch turns this off). A call whose context ends while
// it waits returns at once, its request not sent.
//
// # Keys
//
// A lease named N uses <prefix>:{N}:lock (value
// "<token>:<identity>:<owner id>", with the TTL), <prefix>:{N}:token and the
// pub/sub channel <prefix>:{N}:released, where prefix is
// lease.Options.KeyPrefix (default "fencekit"); the hash tag {N} puts both
// keys in one Redis Cluster slot.
//
// # Tokens
//
// The token is max(counter + 1, Redis server time in microseconds), kept in
// the counter key, which never expires. On one Redis node it increases
// strictly whatever the clock does. If the counter is lost (restart without
// persistence, FLUSHALL, failover to a replica that missed the last
// grants), the next token is the new node's time in microseconds, larger
// than every earlier token as long as the nodes' clocks disagree by less
// than the time between the lost grant and the next one. Tokens are about
// 1.8e15 today: below 2^53, the largest integer Lua's doubles hold exactly;
// 2^53 - 1 is the largest token, and a counter at or above it, or one that
// is not plain ASCII digits, makes Acquire fail with an error naming the
// key.
//
// # What Redis must keep
//
// The lease's deadline assumes Redis keeps the key until it expires. A
// failover to a replica that missed the grant or the last renewal (Redis
// replicates asynchronously), a restart without persistence, FLUSHALL or an
// eviction (run Redis with maxmemory-policy noeviction) can let someone
// else take the lease while Context is live, until the next heartbeat sees
// the key missing or stolen. Tokens still increase across those events, so
// fenced storage still refuses the older holder.
//
// # go-redis timeouts
//
// Each renewal batch carries the earliest deadline of its leases; the
// Client's timer ends a lease at its deadline even when the request is
// stuck, but go-redis bounds a request's socket I/O by its ReadTimeout
// unless the client was made with ContextTimeoutEnabled: true. Set it so
// that a stuck renewal also gives up at the deadline, not up to ReadTimeout
// later. When go-redis resends an acquire after losing its reply (it
// retries timeouts and EOFs), the resent copy recognises the first copy's
// grant as its own and returns it. A resent release finds the key its first copy
// deleted, so Release returns a *lease.LostError (cause missing) although
// this release deleted the key: it is released either way (TestResentCallsKeepOneHolder;
// batched calls are resent as a whole pipeline, with the same outcomes).
package redislease
