// Package lease grants named leases, each with a fencing token, renews them
// in the background and says, through a context, when one is lost. It is
// the generic client: the store is a [Backend] from an issuer package,
// lease/redislease, lease/pglease, lease/etcdlease or lease/zklease, each
// of whose New returns the same *Client.
//
// # Lifecycle
//
//	c, err := redislease.New(rdb, nil)                    // or pglease.New(pool, nil)...; sends nothing
//	if err != nil { ... }                                 // nil client, bad option
//	defer c.Close(context.WithoutCancel(ctx))             // at shutdown: ends and deletes every lease
//	l, err := c.Acquire(ctx, "invoices", 10*time.Second)  // one round trip
//	if errors.Is(err, lease.ErrNotAcquired) { ... }       // someone else has it
//	if err != nil { ... }
//	defer l.Release(context.WithoutCancel(ctx))           // one round trip
//	err = work(l.Context(), l.Token())                    // write with the token
//
// Acquire grants the lease only if nobody holds it and issues the token;
// when the lease is held it returns a [*NotAcquiredError] carrying the
// holder's token, identity and remaining TTL, from the same round trip.
// [Client.AcquireWait] waits for a release notification or the holder's
// expiry instead.
//
// The heartbeat, in plain words: a Client keeps its leases in one heap
// sorted by when each needs attention next, under one timer. When the
// timer rings, every lease whose renewal is due (or due within
// RenewInterval/8) is renewed in one batch: one call of [Backend].Renew
// (Redis: one pipeline of compare-and-extend scripts, one round trip per
// node). Leases renewed together stay together, so many leases
// cost a few round trips per RenewInterval (default TTL/3). Between
// renewals a lease costs a heap entry: no goroutine, no timer of its own.
//
// The lease's local deadline is the time the last confirmed acquire or
// renew request was sent, plus the TTL, minus a drift margin (default
// TTL/100 + 2ms): it is earlier than the moment the store can expire the
// grant (an acquire reply that comes after it yields a lease that has
// already ended). Renewal errors are retried until that deadline; a reply saying
// the grant is gone or belongs to someone else ends the lease at once. When
// the lease ends, [Lease.Context] is cancelled with the cause ([ErrLost]
// wrapped in a [*LostError], or [ErrReleased]), [Lease.Done] closes (once),
// [Lease.Err] returns the cause and the lease leaves the Client's heap.
//
// [Lease.Release] ends the lease locally first, whatever its context is,
// then deletes the grant if it is still the lease's and wakes the
// [Client.AcquireWait] callers, in one round trip. With a context that is
// already done it sends nothing: the grant expires at its TTL.
// [Client.Close] ends every lease of the client at once, deletes their
// grants, and leaves no goroutine behind.
//
// [Client.Inspect] reads who holds a name (its token and Options.Identity),
// in one round trip, changing nothing. Every backend stores the identity
// with each grant; the loss log line and [*LostError] name it and the
// backend that lost the lease.
//
// # What Context cannot do
//
// Context ends before the store can grant the lease to someone else only in a
// process that runs. A process paused by a GC, a VM suspension or SIGSTOP
// past its deadline still believes, for a moment after it resumes, that
// its earlier check of Context was valid, and may write. That is why each
// grant has a token: storage that remembers the highest token it accepted
// (fence.Check, sqlfence, blobfence) refuses the paused writer.
//
// # Metrics and logs
//
// Through the OpenTelemetry metric API (Options.MeterProvider, default the
// global provider): lease_acquired (counter), lease_lost (counter, with
// attribute cause = expired, missing or stolen), lease_heartbeat_latency and
// lease_acquire_latency (histograms in seconds, attribute result). With the
// Prometheus exporter they read lease_acquired_total, lease_lost_total,
// lease_heartbeat_latency_seconds and lease_acquire_latency_seconds;
// lease_acquired and lease_lost have their series at 0 from the first
// scrape, also when the provider is installed after the Client was made. A lost lease
// is logged at warning level with its cause and reason, and so, at most
// once a minute, is a heartbeat p99 latency above a tenth of the TTL.
//
// # testing/synctest
//
// A Client runs on the clock it was made with: made inside a synctest
// bubble, its timer is the bubble's, and it must be used only in that
// bubble. Tests make their Client inside the bubble.
package lease
