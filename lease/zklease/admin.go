package zklease

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"

	"github.com/go-zookeeper/zk"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/lease"
)

// The operator's calls (fencectl -backend zookeeper). Read a lease with the
// Client's Inspect; these list names and end a stuck lease.

// Names returns the names of every lease ever granted or bumped under
// keyPrefix ("" for [lease.DefaultKeyPrefix]), sorted: one round trip.
func Names(ctx context.Context, conn *zk.Conn, keyPrefix string) ([]string, error) {
	b, err := newBackend(conn, keyPrefix)
	if err != nil {
		return nil, err
	}
	dir := b.root + "/lease"
	kids, err := call(ctx, func() ([]string, error) {
		kids, _, err := b.conn.Children(dir)
		return kids, err
	}, nil)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(kids))
	for _, k := range kids {
		if n, err := url.PathUnescape(k); err == nil && lease.ValidateName(n) == nil {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names, nil
}

// ForceRelease deletes name's holder node, so that the name can be granted
// again at once; the holder sees its lease lost at its next renewal. It
// returns the holder's token, 0 when nobody held it. Three round trips:
// the name's node (the token), its child, the delete.
func ForceRelease(ctx context.Context, conn *zk.Conn, keyPrefix, name string) (fence.Token, error) {
	if err := lease.ValidateName(name); err != nil {
		return 0, err
	}
	b, err := newBackend(conn, keyPrefix)
	if err != nil {
		return 0, err
	}
	dir := b.lockDir(name)
	st, data, err := b.get(ctx, dir)
	if errors.Is(err, zk.ErrNoNode) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	base, _, err := parseDir(dir, data)
	if err != nil {
		return 0, err
	}
	kids, err := call(ctx, func() ([]string, error) {
		kids, _, err := b.conn.Children(dir)
		return kids, err
	}, nil)
	if err != nil || len(kids) == 0 {
		return 0, err
	}
	for _, k := range kids {
		err := b.deleteNode(ctx, dir+"/"+k)
		if err != nil && !errors.Is(err, lease.ErrLost) {
			return 0, fmt.Errorf("zklease: force release %q: %w", name, err)
		}
	}
	return base + fence.Token(st.Mzxid), nil
}
