package etcdlease

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/valid"
	"github.com/fencekit/fencekit/lease"
)

// What operators' tools (cmd/fencectl) need beyond a *lease.Client: a
// listing and a forced release. prefix is lease.Options.KeyPrefix.

// Names returns, sorted, the names under prefix that have a holder or a
// token key and match the glob pattern ('*' any run of characters, '?'
// one, '[...]' a class; as path.Match, but '*' also matches '/'). A nil
// client, a bad prefix (lease.KeyPrefix; "" is the default) or pattern
// (lease.CheckPattern, path.Match) is an error matching lease.ErrInvalid,
// and nothing is sent.
func Names(ctx context.Context, cli *clientv3.Client, prefix, pattern string) ([]string, error) {
	prefix, err := checkArgs("Names", cli, prefix)
	if err != nil {
		return nil, err
	}
	if err := lease.CheckPattern(pattern); err != nil {
		return nil, fmt.Errorf("etcdlease: Names: %w", err)
	}
	if _, err := path.Match(pattern, ""); err != nil {
		return nil, valid.Invalid("etcdlease: Names: pattern %.40q: %v", pattern, err)
	}
	b := &backend{prefix: prefix}
	set := map[string]bool{}
	for _, dir := range []string{b.holderKey(""), b.tokenKey("")} {
		resp, err := cli.Get(ctx, dir, clientv3.WithPrefix(), clientv3.WithKeysOnly())
		if err != nil {
			return nil, err
		}
		for _, kv := range resp.Kvs {
			name := strings.TrimPrefix(string(kv.Key), dir)
			if lease.ValidateName(name) == nil && globMatch(pattern, name) {
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

// checkArgs checks the client, prefix and names an operator function fn
// was passed, and returns the prefix to use.
func checkArgs(fn string, cli *clientv3.Client, prefix string, names ...string) (string, error) {
	if cli == nil {
		return "", valid.Invalid("etcdlease: %s: nil *clientv3.Client", fn)
	}
	prefix, err := lease.OperatorArgs(prefix, names...)
	if err != nil {
		return "", fmt.Errorf("etcdlease: %s: %w", fn, err)
	}
	return prefix, nil
}

// globMatch is path.Match with '/' as an ordinary character.
func globMatch(pattern, name string) bool {
	const sep = "\x00" // not in names (ValidateName) nor, once swapped, in the pattern's '/'
	ok, _ := path.Match(strings.ReplaceAll(pattern, "/", sep), strings.ReplaceAll(name, "/", sep))
	return ok
}

// ForceReleased is what [ForceRelease] found and did.
type ForceReleased struct {
	Released  bool          // the holder's etcd lease was revoked
	Held      bool          // the lease was held
	Holder    fence.Token   // the holder's token
	Identity  string        // the holder's lease.Options.Identity
	Remaining time.Duration // its remaining TTL before the release (whole seconds)
}

// ForceRelease ends the lease name whoever holds it, or only if its holder
// has token only (when not 0): it revokes the holder's etcd lease, which
// deletes the holder key and wakes the waiters' watches. The holder sees
// the lease gone at its next renewal. A nil client, a bad prefix
// (lease.KeyPrefix; "" is the default) or name is an error matching
// lease.ErrInvalid, and nothing is sent.
func ForceRelease(ctx context.Context, cli *clientv3.Client, prefix, name string, only fence.Token) (ForceReleased, error) {
	prefix, err := checkArgs("ForceRelease", cli, prefix, name)
	if err != nil {
		return ForceReleased{}, err
	}
	b := &backend{cli: cli, prefix: prefix}
	resp, err := cli.Get(ctx, b.holderKey(name))
	if err != nil || len(resp.Kvs) == 0 {
		return ForceReleased{}, err
	}
	kv := resp.Kvs[0]
	r := ForceReleased{Held: true, Holder: fence.Token(kv.CreateRevision), Identity: string(kv.Value), Remaining: -1}
	if kv.Lease != 0 {
		r.Remaining = b.remaining(ctx, clientv3.LeaseID(kv.Lease))
	}
	if only != 0 && only != r.Holder {
		return r, nil
	}
	if kv.Lease == 0 { // a key put by hand, without a lease
		_, err = cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(b.holderKey(name)), "=", kv.CreateRevision)).
			Then(clientv3.OpDelete(b.holderKey(name))).Commit()
	} else {
		_, err = cli.Revoke(ctx, clientv3.LeaseID(kv.Lease))
	}
	if errors.Is(err, rpctypes.ErrLeaseNotFound) {
		return ForceReleased{}, nil // it expired meanwhile
	}
	r.Released = err == nil
	return r, err
}
