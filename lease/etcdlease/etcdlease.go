package etcdlease

import (
	"context"
	"errors"
	"sync"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/leasearg"
	"github.com/fencekit/fencekit/internal/valid"
	"github.com/fencekit/fencekit/lease"
)

// New returns a lease client whose leases are etcd leases and keys of
// cli's cluster, under <KeyPrefix>/lease/ and <KeyPrefix>/token/. opts may
// be nil for the defaults. New sends nothing.
//
// Errors: an error wrapping [lease.ErrInvalid] for a nil client or an
// invalid option.
func New(cli *clientv3.Client, opts *lease.Options) (*lease.Client, error) {
	if cli == nil {
		return nil, valid.Invalid("etcdlease: New: nil *clientv3.Client")
	}
	prefix := leasearg.DefaultKeyPrefix
	if opts != nil && opts.KeyPrefix != "" {
		prefix = opts.KeyPrefix
	}
	return lease.NewClient(&backend{cli: cli, prefix: prefix}, opts)
}

// maxTxnOps is etcd's default limit of operations in one transaction
// (--max-txn-ops); renewal checks are sent in chunks of it.
const maxTxnOps = 128

// expiryCheck is how often etcd's leader revokes expired leases: a refusal
// whose holder's TTL reads 0 waits that long before trying again.
const expiryCheck = 500 * time.Millisecond

type backend struct {
	cli    *clientv3.Client
	prefix string
}

var _ lease.Backend = (*backend)(nil)

// grant is a Grant's Value: the etcd lease and the holder key.
type grant struct {
	id  clientv3.LeaseID
	key string
}

func (b *backend) holderKey(name string) string { return b.prefix + "/lease/" + name }
func (b *backend) tokenKey(name string) string  { return b.prefix + "/token/" + name }

// Name is "etcd".
func (b *backend) Name() string { return "etcd" }

// Close has nothing to end: every goroutine the backend starts ends before
// the call that started it returns, or with the Watch that started it.
func (b *backend) Close(context.Context) error { return nil }

// Acquire grants an etcd lease, then creates the holder key on it if the
// key is absent, two round trips; the key's value is identity. When held,
// it reads the holder's TTL and revokes the unused lease (in parallel, one
// more round trip).
func (b *backend) Acquire(ctx context.Context, name string, ttl time.Duration, identity string) (*lease.Grant, error) {
	if ttl%time.Second != 0 {
		return nil, valid.Invalid("etcdlease: TTL %v: etcd lease TTLs are whole seconds", ttl)
	}
	lg, err := b.cli.Grant(ctx, int64(ttl/time.Second))
	if err != nil {
		return nil, err
	}
	key := b.holderKey(name)
	resp, err := b.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, identity, clientv3.WithLease(lg.ID)), clientv3.OpPut(b.tokenKey(name), "")).
		Else(clientv3.OpGet(key)).
		Commit()
	if err != nil {
		return nil, err // the key may have been created: it expires with the lease
	}
	if resp.Succeeded {
		return &lease.Grant{Name: name, Token: fence.Token(resp.Header.Revision), TTL: ttl, Value: grant{id: lg.ID, key: key}}, nil
	}
	na := &lease.NotAcquiredError{Name: name, Remaining: -1}
	var wg sync.WaitGroup
	wg.Go(func() { b.cli.Revoke(ctx, lg.ID) }) // else it expires at its TTL
	if kvs := resp.Responses[0].GetResponseRange().Kvs; len(kvs) == 1 {
		na.Holder, na.Identity = fence.Token(kvs[0].CreateRevision), string(kvs[0].Value)
		if kvs[0].Lease != 0 {
			na.Remaining = b.remaining(ctx, clientv3.LeaseID(kvs[0].Lease))
		}
	}
	wg.Wait()
	return nil, na
}

// remaining reads the TTL left to lease id, in whole seconds as etcd
// reports it; when it reads 0 (or fails), the lease ends within etcd's
// expiry check period.
func (b *backend) remaining(ctx context.Context, id clientv3.LeaseID) time.Duration {
	r, err := b.cli.TimeToLive(ctx, id)
	if err != nil || r.TTL <= 0 {
		return expiryCheck
	}
	return time.Duration(r.TTL) * time.Second
}

// Renew sends the batch's keepalives on one stream, then checks every
// holder key in one transaction (per maxTxnOps keys): two round trips.
func (b *backend) Renew(ctx context.Context, batch []*lease.Grant) []error {
	errs := make([]error, len(batch))
	ttls, err := b.keepAlive(ctx, batch)
	if err != nil {
		fill(errs, err)
		return errs
	}
	for lo := 0; lo < len(batch); lo += maxTxnOps {
		hi := min(lo+maxTxnOps, len(batch))
		ops := make([]clientv3.Op, 0, hi-lo)
		for _, g := range batch[lo:hi] {
			ops = append(ops, clientv3.OpGet(g.Value.(grant).key, clientv3.WithKeysOnly()))
		}
		resp, err := b.cli.Txn(ctx).Then(ops...).Commit()
		if err != nil {
			fill(errs[lo:], err)
			return errs
		}
		for i, r := range resp.Responses {
			g := batch[lo+i]
			errs[lo+i] = check(g, ttls[g.Value.(grant).id], r.GetResponseRange().Kvs)
		}
	}
	return errs
}

// check turns a keepalive's TTL and a read of the holder key into the
// renewal's outcome.
func check(g *lease.Grant, ttl int64, kvs []*mvccpb.KeyValue) error {
	id := g.Value.(grant).id
	switch {
	case len(kvs) == 0 || ttl <= 0:
		return &lease.LostError{Cause: lease.CauseMissing}
	case kvs[0].Lease != int64(id) || kvs[0].CreateRevision != int64(g.Token):
		return &lease.LostError{Cause: lease.CauseStolen}
	}
	return nil
}

// keepAlive sends one keepalive per grant on one LeaseKeepAlive stream and
// returns the TTL etcd answered for each lease (0: the lease is gone).
func (b *backend) keepAlive(ctx context.Context, batch []*lease.Grant) (map[clientv3.LeaseID]int64, error) {
	sctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	stream, err := pb.NewLeaseClient(b.cli.ActiveConnection()).LeaseKeepAlive(sctx)
	if err != nil {
		return nil, toErr(err)
	}
	for _, g := range batch {
		if err := stream.Send(&pb.LeaseKeepAliveRequest{ID: int64(g.Value.(grant).id)}); err != nil {
			return nil, toErr(err)
		}
	}
	if err := stream.CloseSend(); err != nil {
		return nil, toErr(err)
	}
	ttls := make(map[clientv3.LeaseID]int64, len(batch))
	for range batch {
		r, err := stream.Recv()
		if err != nil {
			return nil, toErr(err)
		}
		ttls[clientv3.LeaseID(r.ID)] = r.TTL
	}
	return ttls, nil
}

// toErr turns a raw gRPC error into etcd's typed error (rpctypes).
func toErr(err error) error {
	if e := rpctypes.Error(err); e != nil {
		return e
	}
	return err
}

func fill(errs []error, err error) {
	for i := range errs {
		errs[i] = err
	}
}

// Release revokes g's etcd lease, which deletes the holder key (waking the
// waiters' watches), one round trip. A key deleted by hand while the etcd
// lease lived is not noticed here (the renewals notice it).
func (b *backend) Release(ctx context.Context, g *lease.Grant) error {
	_, err := b.cli.Revoke(ctx, g.Value.(grant).id)
	if errors.Is(err, rpctypes.ErrLeaseNotFound) {
		return &lease.LostError{Cause: lease.CauseMissing}
	}
	return err
}

// Inspect reads the holder and token keys in one transaction, and the
// holder's TTL when held (a second round trip).
func (b *backend) Inspect(ctx context.Context, name string) (lease.Info, error) {
	resp, err := b.cli.Txn(ctx).Then(clientv3.OpGet(b.holderKey(name)), clientv3.OpGet(b.tokenKey(name))).Commit()
	if err != nil {
		return lease.Info{}, err
	}
	var info lease.Info
	if kvs := resp.Responses[1].GetResponseRange().Kvs; len(kvs) == 1 {
		info.Last = fence.Token(kvs[0].ModRevision)
	}
	if kvs := resp.Responses[0].GetResponseRange().Kvs; len(kvs) == 1 {
		info.Held, info.Holder, info.Identity, info.Remaining = true, fence.Token(kvs[0].CreateRevision), string(kvs[0].Value), -1
		if kvs[0].Lease != 0 {
			r, err := b.cli.TimeToLive(ctx, clientv3.LeaseID(kvs[0].Lease))
			if err != nil {
				return lease.Info{}, err
			}
			info.Remaining = time.Duration(max(r.TTL, 0)) * time.Second
		}
	}
	return info, nil
}

// Watch watches the holder key for deletions, from the revision at which
// etcd confirms the watch: a release after AcquireWait's next attempt is
// seen. clientv3 resumes the watch on another member after a failure.
func (b *backend) Watch(ctx context.Context, name string) (lease.Watch, error) {
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	ch := b.cli.Watch(wctx, b.holderKey(name), clientv3.WithFilterPut(), clientv3.WithCreatedNotify())
	select {
	case r, ok := <-ch:
		if !ok || r.Err() != nil || !r.Created {
			cancel()
			return nil, errors.Join(errors.New("etcdlease: watch not created"), r.Err())
		}
	case <-ctx.Done():
		cancel()
		return nil, ctx.Err()
	}
	return &watch{ch: ch, cancel: cancel}, nil
}

type watch struct {
	ch     clientv3.WatchChan // nil once closed: Wait then only ends with ctx
	cancel context.CancelFunc
}

// Wait returns on a deletion of the key, or once (spuriously) when the
// watch ends with an error (a compaction); afterwards only ctx ends it.
func (w *watch) Wait(ctx context.Context) error {
	select {
	case _, ok := <-w.ch:
		if !ok {
			w.ch = nil
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (w *watch) Close() error {
	w.cancel()
	return nil
}
