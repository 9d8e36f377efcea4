package etcdlease

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/leasearg"
	"github.com/fencekit/fencekit/internal/valid"
	"github.com/fencekit/fencekit/lease"
)

// The operator calls of lease.Client (lease.Operator): a listing and a
// forced release; Bump is unsupported.

var _ lease.Operator = (*backend)(nil)

// Names lists the names that have a holder or a token key; the pattern
// may also hold '[...]' classes, as path.Match, but '*' also matches '/'.
// Two round trips.
func (b *backend) Names(ctx context.Context, pattern string) ([]string, error) {
	if _, err := path.Match(pattern, ""); err != nil {
		return nil, valid.Invalid("pattern %.40q: %v", pattern, err)
	}
	set := map[string]bool{}
	for _, dir := range []string{b.holderKey(""), b.tokenKey("")} {
		resp, err := b.cli.Get(ctx, dir, clientv3.WithPrefix(), clientv3.WithKeysOnly())
		if err != nil {
			return nil, err
		}
		for _, kv := range resp.Kvs {
			name := strings.TrimPrefix(string(kv.Key), dir)
			if leasearg.Name(name) == nil && globMatch(pattern, name) {
				set[name] = true
			}
		}
	}
	names := make([]string, 0, len(set))
	for n := range set {
		names = append(names, n)
	}
	slices.Sort(names)
	return names, nil
}

// globMatch is path.Match with '/' as an ordinary character.
func globMatch(pattern, name string) bool {
	const sep = "\x00" // not in names (leasearg.Name) nor, once swapped, in the pattern's '/'
	ok, _ := path.Match(strings.ReplaceAll(pattern, "/", sep), strings.ReplaceAll(name, "/", sep))
	return ok
}

// ForceRelease revokes the holder's etcd lease, which deletes the holder
// key and wakes the waiters' watches. The holder sees the lease gone at
// its next renewal.
func (b *backend) ForceRelease(ctx context.Context, name string, only fence.Token) (lease.Info, error) {
	resp, err := b.cli.Get(ctx, b.holderKey(name))
	if err != nil || len(resp.Kvs) == 0 {
		return lease.Info{}, err
	}
	kv := resp.Kvs[0]
	info := lease.Info{Held: true, Holder: fence.Token(kv.CreateRevision), Identity: string(kv.Value), Remaining: -1}
	if kv.Lease != 0 {
		info.Remaining = b.remaining(ctx, clientv3.LeaseID(kv.Lease))
	}
	if only != 0 && only != info.Holder {
		return info, nil
	}
	if kv.Lease == 0 { // a key put by hand, without a lease
		_, err = b.cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(b.holderKey(name)), "=", kv.CreateRevision)).
			Then(clientv3.OpDelete(b.holderKey(name))).Commit()
	} else {
		_, err = b.cli.Revoke(ctx, clientv3.LeaseID(kv.Lease))
	}
	if errors.Is(err, rpctypes.ErrLeaseNotFound) {
		return lease.Info{}, nil // it expired meanwhile
	}
	if err != nil {
		return lease.Info{}, err
	}
	return info, nil
}

// Bump is unsupported: etcd's tokens are revisions, which only writes
// advance.
func (b *backend) Bump(context.Context, string, fence.Token) (before, after fence.Token, err error) {
	return 0, 0, fmt.Errorf("%w: Bump on etcd: its tokens are revisions, which only writes advance; "+
		"restore a snapshot with etcdutl snapshot restore --bump-revision (docs/operations.md, \"Writes refused as stale\"), "+
		"or use new resource names", lease.ErrUnsupported)
}
