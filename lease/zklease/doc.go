// Package zklease issues fencekit leases from ZooKeeper: the same
// *lease.Client as the other issuers' (Do, TryDo, Campaign, Inspect,
// metrics, loss signalling), made with [New] on a go-zookeeper connection.
//
//	conn, _, err := zk.Connect([]string{"127.0.0.1:2181"}, 10*time.Second)
//	c, err := zklease.New(conn, nil)
//	l, err := c.Acquire(ctx, "invoices", 10*time.Second) // at most the session timeout
//
// # TTL and session timeout
//
// Use a TTL equal to the session timeout passed to zk.Connect, within the
// server's minSessionTimeout and maxSessionTimeout (4s and 40s with the
// default 2s tick). Every lease of a Client is an ephemeral node of conn's
// one session, deleted by the server when it has heard nothing from the
// session for the timeout: a longer TTL would let the Context outlive the
// node; a shorter one is safe, but a crashed holder is taken over only when
// its session expires. A timeout outside the bounds is granted as the
// nearest bound, silently, and go-zookeeper does not report it, so zklease
// cannot check the rule (docs/leases.md, "Choosing an issuer").
//
// Deadlines: the lease.Client counts a lease's local deadline from just
// before the grant or renewal request is sent, minus the drift margin; the
// server restarts the session's timer on every request it receives, later.
// A renewal is a transaction (a version check of the holder node), so the
// leader confirms the session: a follower's read may not know yet that it
// expired. A lease that ends without a Release (lost locally while the
// session lived on) has its node deleted TTL after the last request sent
// for it, as a Redis key would expire.
//
// # Nodes and tokens
//
// /<KeyPrefix>/lease/<name> (the name %-escaped) is persistent; its data is
// "floor F" and the last holder's identity. A grant is one transaction
// that sets its data and creates its only child, the holder node
// lock-<random>-<sequence>, ephemeral, and that commits only if the data
// version is still the one Acquire read with no child, so that two grants
// cannot both commit. Its token is max(F + 1, the node's mtime × 1000): F
// is the previous token, and the mtime is the time in ms the leader
// stamped on the transaction. This is the hybrid logical clock of Redis and
// PostgreSQL, on the leader's clock. Tokens grow across session expiries
// and leader changes whatever the clocks do (F is committed with the
// grant), and across a deleted name node or a wiped ensemble as long as
// the leaders' clocks are closer than the time between the last grant and
// the next (docs/leases.md, "Tokens"). A node without data (never granted,
// or lost and created again) counts as F = the last µs of its mtime's
// millisecond: every lost grant was stamped in that millisecond or before,
// so the next token is above it. lease.Client.Bump raises F. A node in the
// earlier form, "<base>\n<identity>" with tokens base + zxid, is read as
// such and continues above its last token; a zklease of that earlier form
// refuses a node in this one (an error, no grant): upgrade every client of
// a name together.
//
// Waiting: AcquireWait queues an ephemeral sequential ticket under
// /<KeyPrefix>/wait/<name> and watches only the ticket before its own; the
// first in line watches the holder node. A release or a holder's expiry
// wakes one waiter, not all of them.
//
// Round trips: Acquire two (read, transaction), a refusal one, a name's
// first grant a few more (it creates the name's node); a batch of renewals
// one (the checks are sent together); Release one; Inspect one. A grant
// whose reply was lost, or came after its ctx ended, is deleted in the
// background: nobody would release it.
//
// Operators use the Client's Inspect, Names, ForceRelease (three round
// trips) and Bump (three), as fencectl -backend zookeeper does.
package zklease
