// Package lease grants named leases stored in Redis, each with a fencing
// token, renews them in the background and says, through a context, when
// one is lost.
//
// # Lifecycle
//
//	c, err := lease.New(rdb, nil)                         // sends nothing
//	if err != nil { ... }                                 // nil client, bad option
//	defer c.Close(context.WithoutCancel(ctx))             // at shutdown: ends and deletes every lease
//	l, err := c.Acquire(ctx, "invoices", 10*time.Second)  // one round trip
//	if errors.Is(err, lease.ErrNotAcquired) { ... }       // someone else has it
//	if err != nil { ... }
//	defer l.Release(context.WithoutCancel(ctx))           // one round trip
//	err = work(l.Context(), l.Token())                    // write with the token
//
// Acquire runs one Lua script that sets the lock key only if it is absent
// (with the TTL) and issues the token; when the lease is held it returns a
// [*NotAcquiredError] carrying the holder's remaining TTL, from the same
// round trip. [Client.AcquireWait] waits for a release notification or the
// holder's expiry instead.
//
// The heartbeat, in plain words: a Client keeps its leases in one heap
// sorted by when each needs attention next, under one timer. When the
// timer rings, every lease whose renewal is due (or due within
// RenewInterval/8) is renewed in one batch: one pipeline of
// compare-and-extend scripts, one round trip (one per node with a Redis
// Cluster client). Leases renewed together stay together, so many leases
// cost a few round trips per RenewInterval (default TTL/3). Between
// renewals a lease costs a heap entry: no goroutine, no timer of its own.
//
// The lease's local deadline is the time the last confirmed acquire or
// renew request was sent, plus the TTL, minus a drift margin (default
// TTL/100 + 2ms): it is earlier than the moment Redis can expire the key
// (an acquire reply that comes after it yields a lease that has already
// ended). Renewal errors are retried until that deadline; a reply saying
// the key is gone or belongs to someone else ends the lease at once. When
// the lease ends, [Lease.Context] is cancelled with the cause ([ErrLost]
// wrapped in a [*LostError], or [ErrReleased]), [Lease.Done] closes (once),
// [Lease.Err] returns the cause and the lease leaves the Client's heap.
//
// [Lease.Release] ends the lease locally first, whatever its context is,
// then deletes the key if it is still the lease's and publishes the
// release, in one round trip. With a context that is already done it sends
// nothing: the key expires at its TTL. [Client.Close] ends every lease of
// the client at once, deletes their keys, and leaves no goroutine behind.
//
// [Client.Inspect] reads who holds a name, in one round trip, changing
// nothing.
//
// The Redis scripts are one [Backend]: [NewClient] makes the same Client
// (heartbeat, deadlines, Context, metrics, Close) over any store that keeps
// the Backend contract (lease/etcdlease, lease/pglease).
//
// # What Context cannot do
//
// Context ends before Redis can grant the lease to someone else only in a
// process that runs. A process paused by a GC, a VM suspension or SIGSTOP
// past its deadline still believes, for a moment after it resumes, that
// its earlier check of Context was valid, and may write. That is why each
// grant has a token: storage that remembers the highest token it accepted
// (fence.Check, sqlfence, blobfence) refuses the paused writer.
//
// The deadline also assumes Redis keeps the key until it expires. A
// failover to a replica that missed the grant or the last renewal (Redis
// replicates asynchronously), a restart without persistence, FLUSHALL or an
// eviction (run Redis with maxmemory-policy noeviction) can let someone
// else take the lease while Context is live, until the next heartbeat sees
// the key missing or stolen. Tokens still increase across those events, so
// fenced storage still refuses the older holder.
//
// # Tokens
//
// The token is max(counter + 1, Redis server time in microseconds), kept in
// the counter key <prefix>:{<name>}:token, which never expires. On one
// Redis node it increases strictly whatever the clock does. If the counter
// is lost (restart without persistence, FLUSHALL, failover to a replica
// that missed the last grants), the next token is the new node's time in
// microseconds, larger than every earlier token as long as the nodes'
// clocks disagree by less than the time between the lost grant and the
// next one. Tokens are about 1.8e15 today: below 2^53, the largest integer
// Lua's doubles hold exactly, and far below [fence.MaxToken]; 2^53 - 1 is
// the largest token, and a counter at or above it, or one that is not
// plain ASCII digits, makes Acquire fail with an error naming the key.
//
// # Keys
//
// A lease named N uses <prefix>:{N}:lock (value "<token>:<owner id>"),
// <prefix>:{N}:token and the pub/sub channel <prefix>:{N}:released; the
// hash tag {N} puts both keys in one Redis Cluster slot. Names are 1 to 512
// bytes of UTF-8 without braces, whitespace or control characters
// ([ValidateName]). The client may be a *redis.Client, *redis.ClusterClient,
// *redis.Ring or a failover client: any [RedisClient].
//
// # Metrics and logs
//
// Through the OpenTelemetry metric API (Options.MeterProvider, default the
// global provider): lease_acquired (counter), lease_lost (counter, with
// attribute cause = expired, missing or stolen), lease_heartbeat_latency and
// lease_acquire_latency (histograms in seconds, attribute result). With the
// Prometheus exporter they read lease_acquired_total, lease_lost_total,
// lease_heartbeat_latency_seconds and lease_acquire_latency_seconds;
// lease_lost has a series at 0 for each cause from the start. A lost lease
// is logged at warning level with its cause and reason, and so, at most
// once a minute, is a heartbeat p99 latency above a tenth of the TTL.
//
// # go-redis timeouts
//
// Each renewal batch carries the earliest deadline of its leases; the
// Client's timer ends a lease at its deadline even when the request is
// stuck, but go-redis bounds a request's socket I/O by its ReadTimeout
// unless the client was made with ContextTimeoutEnabled: true. Set it so
// that a stuck renewal also gives up at the deadline, not up to ReadTimeout
// later.
//
// # testing/synctest
//
// A Client runs on the clock it was made with: made inside a synctest
// bubble, its timer is the bubble's, and it must be used only in that
// bubble. Tests make their Client inside the bubble.
package lease
