package zklease

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/join"
	"github.com/fencekit/fencekit/internal/leasearg"
	"github.com/fencekit/fencekit/internal/valid"
	"github.com/fencekit/fencekit/lease"
)

// New returns a lease client whose leases are ephemeral znodes of conn's
// session, under /<KeyPrefix>/lease/<name> (waiters' tickets under
// /<KeyPrefix>/wait/<name>). opts may be nil for the defaults. New sends
// nothing.
//
// Every TTL passed to the client's Acquire must be at most the session
// timeout the server granted conn (see the package doc): zklease cannot
// check it, go-zookeeper does not report the granted timeout.
//
// Errors: an error wrapping [lease.ErrInvalid] for a nil conn, a KeyPrefix
// that is not a ZooKeeper path, or an invalid option.
func New(conn *zk.Conn, opts *lease.Options) (*lease.Client, error) {
	var prefix string
	if opts != nil {
		prefix = opts.KeyPrefix
	}
	b, err := newBackend("New", conn, prefix)
	if err != nil {
		return nil, err
	}
	return lease.NewClient(b, opts)
}

// newBackend checks the conn and prefix ("" for the default) that the
// function fn was passed.
func newBackend(fn string, conn *zk.Conn, prefix string) (*backend, error) {
	if conn == nil {
		return nil, valid.Invalid("zklease: %s: nil *zk.Conn", fn)
	}
	prefix, err := leasearg.KeyPrefix(prefix)
	if err != nil {
		return nil, fmt.Errorf("zklease: %s: %w", fn, err)
	}
	for _, part := range strings.Split(prefix, "/") {
		if part == "" || part == "." || part == ".." {
			return nil, valid.Invalid("zklease: %s: Options.KeyPrefix %q is not a ZooKeeper path without its leading slash (an empty, . or .. part)", fn, prefix)
		}
	}
	if prefix == "zookeeper" || strings.HasPrefix(prefix, "zookeeper/") {
		return nil, valid.Invalid("zklease: %s: Options.KeyPrefix %q is under ZooKeeper's own /zookeeper tree", fn, prefix)
	}
	stop, cancel := context.WithCancel(context.Background())
	return &backend{conn: conn, root: "/" + prefix, stop: stop, cancel: cancel}, nil
}

var acl = zk.WorldACL(zk.PermAll)

type backend struct {
	conn *zk.Conn
	root string

	// The requests and background deletes the backend starts, joined by
	// Close; stop ends the deletes' retries (see retry).
	bg     join.Group
	stop   context.Context
	cancel context.CancelFunc

	mu   sync.Mutex
	live map[*expiry]struct{} // the expiries not yet ended, for Close
}

var _ lease.Backend = (*backend)(nil)

// grant is a Grant's Value: the holder node's path and its expiry.
type grant struct {
	path string
	exp  *expiry
}

func (b *backend) Name() string { return "zookeeper" }

// lockDir is the name's node: its data is the floor of the last grant's
// token and that grant's identity (see lastToken); its one child, while
// held, is the holder node.
func (b *backend) lockDir(name string) string { return b.root + "/lease/" + escape(name) }

// waitDir holds the tickets of the name's waiters (see watch.go).
func (b *backend) waitDir(name string) string { return b.root + "/wait/" + escape(name) }

// escape makes a lease name one znode name: '/' and every byte outside
// [A-Za-z0-9-._~] are %-escaped, and "." and ".." (not znode names) too.
func escape(name string) string {
	switch name {
	case ".":
		return "%2E"
	case "..":
		return "%2E%2E"
	}
	return url.PathEscape(name)
}

// Acquire reads the name's node and, when it has no holder, sets its data
// and creates the holder node in one transaction that only commits if the
// node's data version is still the one read (no grant in between): two
// round trips, a few more for a name's first grant (it creates the node and
// its missing ancestors). A refusal takes one. The token is
// max(last token + 1, the transaction's time in µs), the time the leader
// stamped on it (the name node's mtime, in ms), as in lastToken.
func (b *backend) Acquire(ctx context.Context, name string, ttl time.Duration, identity string) (*lease.Grant, error) {
	dir := b.lockDir(name)
	for attempt := 0; ; attempt++ {
		st, data, err := b.get(ctx, dir)
		if errors.Is(err, zk.ErrNoNode) && attempt == 0 {
			if err := b.makeDirs(ctx, dir); err != nil {
				return nil, err
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		last, holder, err := lastToken(dir, st, data)
		if err != nil {
			return nil, err
		}
		if st.NumChildren > 0 {
			// Remaining -1: the holder's node lasts as long as its session.
			return nil, &lease.NotAcquiredError{Name: name, Holder: last, Identity: holder, Remaining: -1}
		}
		sent := time.Now()
		token, path, err := b.grant(ctx, dir, st.Version, last, identity)
		if errors.Is(err, zk.ErrBadVersion) && attempt < 3 {
			continue // granted to someone else since the read: read again
		}
		if err != nil {
			return nil, err
		}
		return &lease.Grant{Name: name, Token: token, TTL: ttl, Value: grant{path, b.newExpiry(path, ttl, sent)}}, nil
	}
}

// get reads a node's data and Stat.
func (b *backend) get(ctx context.Context, path string) (*zk.Stat, []byte, error) {
	type res struct {
		st   *zk.Stat
		data []byte
	}
	r, err := call(ctx, b, func() (res, error) {
		data, st, err := b.conn.Get(path)
		return res{st, data}, err
	}, nil)
	return r.st, r.data, err
}

// makeDirs creates path's missing ancestors and path, empty and persistent.
func (b *backend) makeDirs(ctx context.Context, path string) error {
	for i := 1; i <= len(path); i++ {
		if i < len(path) && path[i] != '/' {
			continue
		}
		p := path[:i]
		_, err := call(ctx, b, func() (string, error) { return b.conn.Create(p, nil, zk.FlagPersistent, acl) }, nil)
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("zklease: create %s: %w", p, err)
		}
	}
	return nil
}

// grant runs the grant transaction on dir, read at data version version
// with last token last. A holder node created after ctx ended, or whose
// reply was lost, is deleted in the background: nobody would release it.
func (b *backend) grant(ctx context.Context, dir string, version int32, last fence.Token, identity string) (fence.Token, string, error) {
	nonce, err := newNonce()
	if err != nil {
		return 0, "", err
	}
	node := dir + "/lock-" + nonce + "-"
	type res struct {
		token fence.Token
		path  string
	}
	r, err := call(ctx, b, func() (res, error) {
		rs, err := b.conn.Multi(
			&zk.SetDataRequest{Path: dir, Data: dirData(last, identity), Version: version},
			&zk.CreateRequest{Path: node, Data: []byte(identity), Acl: acl, Flags: zk.FlagEphemeralSequential})
		if err != nil {
			return res{}, err
		}
		return res{tokenAt(last, rs[0].Stat.Mtime), rs[1].String}, nil
	}, func(r res, err error) {
		switch {
		case err == nil:
			b.retry(func() error { return b.conn.Delete(r.path, -1) })
		case unknownOutcome(err):
			b.sweep(dir, nonce)
		}
	})
	if unknownOutcome(err) {
		b.bg.Go(func() { b.sweep(dir, nonce) })
	}
	return r.token, r.path, err
}

// unknownOutcome reports whether a request that failed with err may have
// been carried out: the connection broke after it was sent.
func unknownOutcome(err error) bool {
	return errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, zk.ErrClosing)
}

func newNonce() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("zklease: random node name: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// Renew checks each holder node with a transaction of one version check,
// all sent at once (one round trip). A transaction goes through the
// leader, which refuses it when the session has expired; a read could be
// answered by a follower that has not yet seen the expiry. Reaching the
// server also restarts the session's timer.
func (b *backend) Renew(ctx context.Context, batch []*lease.Grant) []error {
	errs := make([]error, len(batch))
	var wg sync.WaitGroup
	for i, g := range batch {
		gr := g.Value.(grant)
		if !gr.exp.touch() {
			errs[i] = &lease.LostError{Cause: lease.CauseMissing, Err: errExpired}
			continue
		}
		path := gr.path
		wg.Go(func() {
			_, err := call(ctx, b, func() ([]zk.MultiResponse, error) {
				return b.conn.Multi(&zk.CheckVersionRequest{Path: path, Version: -1})
			}, nil)
			errs[i] = lost(err)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return errs
		}
	}
	return nil
}

// lost turns the error of a request on a holder node into a
// [*lease.LostError] when the node is definitely gone.
func lost(err error) error {
	if errors.Is(err, zk.ErrNoNode) || errors.Is(err, zk.ErrSessionExpired) {
		return &lease.LostError{Cause: lease.CauseMissing, Err: err}
	}
	return err
}

// Release deletes the holder node, one round trip; the first waiter,
// watching it, wakes. When the outcome is unknown (the connection broke,
// ctx ended), the delete is retried in the background: the lease has
// ended, and its node must not hold the name for the session's life.
func (b *backend) Release(ctx context.Context, g *lease.Grant) error {
	gr := g.Value.(grant)
	gr.exp.end()
	return b.deleteNode(ctx, gr.path)
}

// deleteNode deletes path, retrying in the background when the outcome is
// unknown.
func (b *backend) deleteNode(ctx context.Context, path string) error {
	del := func() error { return b.conn.Delete(path, -1) }
	_, err := call(ctx, b, func() (struct{}, error) { return struct{}{}, del() }, func(_ struct{}, err error) {
		if unknownOutcome(err) {
			b.retry(del)
		}
	})
	if unknownOutcome(err) {
		b.bg.Go(func() { b.retry(del) })
	}
	return lost(err)
}

// Inspect reads the name's node, one round trip: held while it has a
// child; the last token as lastToken reads it.
func (b *backend) Inspect(ctx context.Context, name string) (lease.Info, error) {
	dir := b.lockDir(name)
	st, data, err := b.get(ctx, dir)
	if errors.Is(err, zk.ErrNoNode) {
		return lease.Info{}, nil
	}
	if err != nil {
		return lease.Info{}, err
	}
	last, identity, err := lastToken(dir, st, data)
	if err != nil {
		return lease.Info{}, err
	}
	info := lease.Info{Last: last}
	if st.NumChildren > 0 {
		info.Held, info.Holder, info.Identity, info.Remaining = true, info.Last, identity, -1
	}
	return info, nil
}

// dirData is a name node's data: "floor", the floor of the grant's token,
// a newline, and the grant's identity.
func dirData(floor fence.Token, identity string) []byte {
	return []byte("floor " + floor.String() + "\n" + identity)
}

// tokenAt is the token of a grant whose name node data holds floor and
// whose transaction the leader stamped mtime (ms since 1970): a hybrid
// logical clock, above floor whatever the clock does and, when the name's
// node is lost, the leader's time in µs.
func tokenAt(floor fence.Token, mtime int64) fence.Token {
	return max(floor+1, fence.Token(max(mtime, 0))*1000)
}

// lastToken reads a name node (Stat and data): the token of its last grant
// or bump, and that grant's identity. A node without data (never granted,
// or its counter lost: deleted and created again, a wiped ensemble) gives
// the last µs of the millisecond the leader stamped on it, and "": every
// lost grant came before that write, in that millisecond or an earlier
// one, so its token is below the end of that millisecond. Data of
// the earlier form "<base>\n<identity>" gives base + Mzxid (the token was
// the grant's zxid plus a base), and the next grant continues above it.
func lastToken(dir string, st *zk.Stat, data []byte) (fence.Token, string, error) {
	if len(data) == 0 {
		return fence.Token(max(st.Mtime, 0)+1)*1000 - 1, "", nil
	}
	head, identity, ok := strings.Cut(string(data), "\n")
	digits, floor := strings.CutPrefix(head, "floor ")
	n, err := strconv.ParseUint(digits, 10, 63)
	switch {
	case !ok || err != nil:
		return 0, "", fmt.Errorf("zklease: %s holds %q, not a token floor and an identity: not written by zklease", dir, short(data))
	case floor:
		return tokenAt(fence.Token(n), st.Mtime), identity, nil
	default:
		return fence.Token(n) + fence.Token(st.Mzxid), identity, nil
	}
}

func short(b []byte) []byte {
	if len(b) > 64 {
		return b[:64]
	}
	return b
}

// call runs fn, a go-zookeeper request (they take no context and return
// when the reply comes or the connection breaks), in a goroutine that b's
// Close joins, and returns its result, or ctx's error when ctx ends first.
// A result that arrives after that is passed to late, when not nil, to
// undo what the request did. Once b is closed it sends nothing.
func call[T any](ctx context.Context, b *backend, fn func() (T, error), late func(T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	var zero T
	ch := make(chan result, 1)
	var taken atomic.Bool // by the caller (it gave up: late runs) or by the goroutine (the result is sent)
	started := b.bg.Go(func() {
		v, err := fn()
		if taken.CompareAndSwap(false, true) {
			ch <- result{v, err}
		} else if late != nil {
			late(v, err)
		}
	})
	if !started {
		return zero, errClosed
	}
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		if !taken.CompareAndSwap(false, true) { // the result came meanwhile
			r := <-ch
			return r.v, r.err
		}
		return zero, ctx.Err()
	}
}

// errClosed is what a request made after Close returns.
var errClosed = errors.New("zklease: backend closed, nothing sent")

// Close deletes the holder nodes of the grants whose expiry is pending (a
// lease lost while its session lived on: nobody else will), then waits
// for the requests and background deletes in flight, until ctx ends: then
// it stops the deletes' retries and returns an error counting the
// requests still waiting for ZooKeeper (each ends when the server answers
// or go-zookeeper gives up on the connection).
func (b *backend) Close(ctx context.Context) error {
	b.mu.Lock()
	live := make([]*expiry, 0, len(b.live))
	for e := range b.live {
		live = append(live, e)
	}
	b.mu.Unlock()
	for _, e := range live {
		e.expireNow()
	}
	n := b.bg.Close(ctx)
	b.cancel()
	if n > 0 {
		return fmt.Errorf("zklease: close: %d requests still wait for ZooKeeper: %w", n, ctx.Err())
	}
	return nil
}
