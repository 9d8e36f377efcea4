package zklease

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/lease"
)

// Bump makes every later grant of name, under keyPrefix ("" for
// [lease.DefaultKeyPrefix]), carry a token greater than to, and never
// lowers them: for switching to ZooKeeper from an issuer whose tokens are
// greater (docs/leases.md, "Switching issuers"). A token is the name's
// base plus the grant's zxid; Bump raises the base so that the next zxid
// lands above to, in one transaction that fails if a grant came between.
// It returns the name's last token (Inspect's Last) before and after; the
// two are equal when the tokens were already above to.
//
// Errors: an error wrapping [lease.ErrInvalid] for a bad name or prefix;
// an error naming the holder when the name is held (bump it when free, so
// that the holder's token stays what Inspect shows); ZooKeeper's error
// otherwise.
func Bump(ctx context.Context, conn *zk.Conn, keyPrefix, name string, to fence.Token) (before, after fence.Token, err error) {
	if err := lease.ValidateName(name); err != nil {
		return 0, 0, fmt.Errorf("zklease: Bump: %w", err)
	}
	if err := to.Validate(); err != nil {
		return 0, 0, fmt.Errorf("zklease: Bump %q: %w", name, err)
	}
	b, err := newBackend("Bump", conn, keyPrefix)
	if err != nil {
		return 0, 0, err
	}
	dir := b.lockDir(name)
	for attempt := 0; ; attempt++ {
		st, data, err := b.get(ctx, dir)
		if errors.Is(err, zk.ErrNoNode) && attempt == 0 {
			if err := b.makeDirs(ctx, dir); err != nil {
				return 0, 0, err
			}
			continue
		}
		if err != nil {
			return 0, 0, err
		}
		base, identity, err := parseDir(dir, data)
		if err != nil {
			return 0, 0, err
		}
		last := base + fence.Token(st.Mzxid)
		if st.NumChildren > 0 {
			return 0, 0, fmt.Errorf("zklease: Bump %q: held by token %v of %q; bump it when it is free", name, last, identity)
		}
		if st.Version == 0 {
			last = 0
		}
		if to <= last || to <= base {
			return last, last, nil
		}
		// The next zxid exceeds this node's Mzxid: base + zxid > to.
		nb := to - min(to, fence.Token(st.Mzxid))
		nst, err := call(ctx, func() (*zk.Stat, error) { return b.conn.Set(dir, dirData(nb, identity), st.Version) }, nil)
		if errors.Is(err, zk.ErrBadVersion) && attempt < 3 {
			continue // granted meanwhile: read again
		}
		if err != nil {
			return 0, 0, fmt.Errorf("zklease: Bump %q: %w", name, err)
		}
		return last, nb + fence.Token(nst.Mzxid), nil
	}
}
