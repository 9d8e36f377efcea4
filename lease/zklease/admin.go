package zklease

import (
	"context"
	"errors"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/leasearg"
	"github.com/fencekit/fencekit/lease"
)

// The operator calls of lease.Client (lease.Operator): a listing, a
// forced release and Bump (bump.go).

var _ lease.Operator = (*backend)(nil)

// Names lists the children of <root>/lease (names granted or bumped once,
// held or not), one round trip.
func (b *backend) Names(ctx context.Context, pattern string) ([]string, error) {
	match := globRegexp(pattern)
	dir := b.root + "/lease"
	kids, err := call(ctx, b, func() ([]string, error) {
		kids, _, err := b.conn.Children(dir)
		return kids, err
	}, nil)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var names []string
	for _, k := range kids {
		n, err := url.PathUnescape(k)
		if err == nil && leasearg.Name(n) == nil && match.MatchString(n) {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names, nil
}

// globRegexp compiles a glob of '*' and '?' to an anchored regexp.
func globRegexp(glob string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString(`\A`)
	for _, r := range glob {
		switch r {
		case '*':
			b.WriteString(`.*`)
		case '?':
			b.WriteString(`.`)
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	b.WriteString(`\z`)
	return regexp.MustCompile(b.String())
}

// ForceRelease deletes name's holder node, so that the name can be granted
// again at once; the holder sees its lease lost at its next renewal.
// Three round trips: the name's node (token and identity), its child, the
// delete. Remaining is -1: the node lasts as long as its session.
func (b *backend) ForceRelease(ctx context.Context, name string, only fence.Token) (lease.Info, error) {
	dir := b.lockDir(name)
	st, data, err := b.get(ctx, dir)
	if errors.Is(err, zk.ErrNoNode) {
		return lease.Info{}, nil
	}
	if err != nil {
		return lease.Info{}, err
	}
	last, identity, err := lastToken(dir, st, data)
	if err != nil || st.NumChildren == 0 {
		return lease.Info{}, err
	}
	info := lease.Info{Held: true, Holder: last, Identity: identity, Remaining: -1}
	if only != 0 && only != info.Holder {
		return info, nil
	}
	kids, err := call(ctx, b, func() ([]string, error) {
		kids, _, err := b.conn.Children(dir)
		return kids, err
	}, nil)
	if err != nil {
		return lease.Info{}, err
	}
	for _, k := range kids {
		if err := b.deleteNode(ctx, dir+"/"+k); err != nil && !errors.Is(err, lease.ErrLost) {
			return lease.Info{}, err
		}
	}
	if len(kids) == 0 {
		return lease.Info{}, nil // released meanwhile
	}
	return info, nil
}
