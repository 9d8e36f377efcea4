package zklease

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/leasearg"
)

// Bump writes the leader's time to <root>/clock to read it, then sets the
// name's token floor to to, in a transaction that fails if a grant came
// between; three round trips. It refuses a held name (so that the
// holder's token stays what Inspect shows) and a to more than
// leasearg.MaxAhead above the leader's clock and above the name's tokens:
// tokens ahead of the clock would not be recovered if the name's node
// were lost.
func (b *backend) Bump(ctx context.Context, name string, to fence.Token) (before, after fence.Token, err error) {
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
		last, identity, err := lastToken(dir, st, data)
		if err != nil {
			return 0, 0, err
		}
		if st.NumChildren > 0 {
			return 0, 0, fmt.Errorf("held by token %v of %q; bump it when it is free", last, identity)
		}
		if to <= last {
			return last, last, nil
		}
		now, err := b.leaderTime(ctx)
		if err != nil {
			return 0, 0, err
		}
		if err := leasearg.CheckAhead(to, now); err != nil {
			return 0, 0, err
		}
		nst, err := call(ctx, b, func() (*zk.Stat, error) { return b.conn.Set(dir, dirData(to, identity), st.Version) }, nil)
		if errors.Is(err, zk.ErrBadVersion) && attempt < 3 {
			continue // granted meanwhile: read again
		}
		if err != nil {
			return 0, 0, err
		}
		return last, tokenAt(to, nst.Mtime), nil
	}
}

// leaderTime returns the leader's clock, to the millisecond: the mtime the
// leader stamps on a write of <root>/clock (ZooKeeper has no request that
// reads the time).
func (b *backend) leaderTime(ctx context.Context) (time.Time, error) {
	path := b.root + "/clock"
	for attempt := 0; ; attempt++ {
		st, err := call(ctx, b, func() (*zk.Stat, error) { return b.conn.Set(path, nil, -1) }, nil)
		if errors.Is(err, zk.ErrNoNode) && attempt == 0 {
			if err := b.makeDirs(ctx, path); err != nil {
				return time.Time{}, err
			}
			continue
		}
		if err != nil {
			return time.Time{}, fmt.Errorf("set %s: %w", path, err)
		}
		return time.UnixMilli(st.Mtime), nil
	}
}
