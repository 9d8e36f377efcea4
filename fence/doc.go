// Package fence is the core of fencekit: the fencing token, the stale-write
// error, and the one rule that decides whether a write is stale.
//
// A lease (a lock with a time-to-live) cannot by itself keep two processes
// from writing at once: a holder that is paused (garbage collection, VM
// suspension, CPU throttling) for longer than its TTL wakes up still
// believing it holds the lock while a second holder already runs. Fencing
// closes that gap. Every grant of a lease carries a [Token] strictly greater
// than every earlier grant's, the writer attaches the token to each write,
// and the storage rejects any write whose token is older than one it has
// already accepted for the same resource:
//
//	accept a write carrying t  ⇔  no write carrying a token > t was accepted before
//
// Equal tokens are the same holder writing again and are accepted. [Check]
// is the single definition of that rule; the adapters (sqlfence, blobfence)
// and the simulator either call it or express it in SQL or in conditional
// writes whose behaviour is tested against it. A rejected write is reported
// as a [*StaleError], which unwraps to [ErrStale]:
//
//	if errors.Is(err, fence.ErrStale) { ... }      // any stale write
//	var se *fence.StaleError
//	if errors.As(err, &se) { log(se.Current) }     // who fenced us out
//
// Bad input to any fencekit call is an error matching [ErrInvalid].
//
// The package depends on nothing but the standard library.
package fence
