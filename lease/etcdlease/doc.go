// Package etcdlease issues fencekit leases from etcd: the same
// *lease.Client as Redis's (Do, Campaign, Inspect, metrics, loss
// signalling), made with [New].
//
//	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints})
//	c, err := etcdlease.New(cli, nil)
//	l, err := c.Acquire(ctx, "invoices", 10*time.Second) // whole seconds
//
// A grant is an etcd lease with the TTL (TTLs are whole seconds: another
// TTL is refused with an error wrapping lease.ErrInvalid, nothing sent)
// and the key <KeyPrefix>/lease/<name> attached to it, created in a
// transaction only if absent. The token is that key's create revision:
// etcd's revision counts every write of the cluster, is replicated by Raft
// before any reply, and never goes back, so each grant of a name has a
// greater token than every earlier one, with no clock involved. The same
// transaction writes <KeyPrefix>/token/<name>, whose mod revision is the
// last token issued (Inspect's Last). Restoring a snapshot older than the
// last grants would reissue tokens: restore with etcdutl's --bump-revision
// moving the revision to the current time in µs, and --mark-compacted
// (docs/operations.md, "Writes refused as stale"; TestRestoreRecovery).
//
// Round trips: Acquire two (lease grant, then the transaction), a refusal
// two more (the holder's TTL, and revoking the unused lease, in parallel);
// a batch of renewals two (keepalives on one stream, then one transaction
// that checks every key); Release one (revoking the lease deletes the key
// and wakes the waiters); Inspect one, two when the name is held (the
// holder's TTL). AcquireWait watches the key for its deletion.
//
// Deadlines: the lease.Client counts a lease's local deadline from just
// before the grant or keepalive request is sent, minus the drift margin;
// etcd's leader counts the lease's expiry from when it processed that
// request (later), by its own monotonic clock, and extends every lease
// when a new leader takes over. So etcd keeps the key at least until the
// local deadline plus the margin. The leader revokes expired leases every
// 500ms, so a key outlives its TTL by up to half a second. etcd raises a
// TTL below its minimum (1.5 election timeouts, rounded up to seconds: 2s
// with the default 1s election timeout) to that minimum: safe, but a dead
// holder is then taken over later than its TTL.
//
// A renewal is lost when the keepalive finds the etcd lease gone (expired
// or revoked) or when the key is gone or belongs to another lease (deleted
// by hand): both are checked on every renewal.
package etcdlease
