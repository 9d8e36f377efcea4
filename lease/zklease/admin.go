package zklease

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/lease"
)

// What operators' tools (cmd/fencectl -backend zookeeper) need beyond a
// *lease.Client: a listing, a forced release and Bump. keyPrefix is
// lease.Options.KeyPrefix ("" for [lease.DefaultKeyPrefix]).

// Names returns, sorted, the names of the leases under keyPrefix (granted
// or bumped once, held or not) that match the glob pattern: '*' any run of
// characters, '?' one, everything else literal. One round trip. A nil
// conn, a bad prefix or a pattern that can match no name
// (lease.CheckPattern) is an error matching lease.ErrInvalid, and nothing
// is sent.
func Names(ctx context.Context, conn *zk.Conn, keyPrefix, pattern string) ([]string, error) {
	b, err := newBackend("Names", conn, keyPrefix)
	if err != nil {
		return nil, err
	}
	if err := lease.CheckPattern(pattern); err != nil {
		return nil, fmt.Errorf("zklease: Names: %w", err)
	}
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
		if err == nil && lease.ValidateName(n) == nil && match.MatchString(n) {
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

// ForceReleased is what [ForceRelease] found and did.
type ForceReleased struct {
	Released bool        // the holder node was deleted
	Held     bool        // the lease was held
	Holder   fence.Token // the holder's token
	Identity string      // the holder's lease.Options.Identity
}

// ForceRelease deletes name's holder node, whoever holds it, or only if
// its token is only (when not 0), so that the name can be granted again at
// once; the holder sees its lease lost at its next renewal. Three round
// trips: the name's node (token and identity), its child, the delete.
func ForceRelease(ctx context.Context, conn *zk.Conn, keyPrefix, name string, only fence.Token) (ForceReleased, error) {
	if err := lease.ValidateName(name); err != nil {
		return ForceReleased{}, fmt.Errorf("zklease: ForceRelease: %w", err)
	}
	b, err := newBackend("ForceRelease", conn, keyPrefix)
	if err != nil {
		return ForceReleased{}, err
	}
	dir := b.lockDir(name)
	st, data, err := b.get(ctx, dir)
	if errors.Is(err, zk.ErrNoNode) {
		return ForceReleased{}, nil
	}
	if err != nil {
		return ForceReleased{}, err
	}
	last, identity, err := lastToken(dir, st, data)
	if err != nil || st.NumChildren == 0 {
		return ForceReleased{}, err
	}
	r := ForceReleased{Held: true, Holder: last, Identity: identity}
	if only != 0 && only != r.Holder {
		return r, nil
	}
	kids, err := call(ctx, b, func() ([]string, error) {
		kids, _, err := b.conn.Children(dir)
		return kids, err
	}, nil)
	if err != nil {
		return r, err
	}
	for _, k := range kids {
		if err := b.deleteNode(ctx, dir+"/"+k); err != nil && !errors.Is(err, lease.ErrLost) {
			return r, fmt.Errorf("zklease: force release %q: %w", name, err)
		}
	}
	r.Released = len(kids) > 0
	return r, nil
}
