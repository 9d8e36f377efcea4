package main

import (
	"context"
	"errors"
	"flag"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/lease"
	"github.com/fencekit/fencekit/lease/etcdlease"
)

func init() { backends["etcd"] = addEtcdFlags }

const (
	envEtcdEndpoints = "ETCDCTL_ENDPOINTS" // etcdctl's own
	defEtcdEndpoints = "http://127.0.0.1:2379"
)

// addEtcdFlags adds the etcd connection flag of -backend etcd.
func addEtcdFlags(fs *flag.FlagSet) func(conn) (store, error) {
	endpoints := fs.String("etcd", envOr(envEtcdEndpoints, defEtcdEndpoints),
		"with -backend etcd: comma-separated client URLs (env "+envEtcdEndpoints+")")
	return func(c conn) (store, error) { return connectEtcd(c, *endpoints) }
}

// etcdStore is the etcd backend: package etcdlease.
type etcdStore struct {
	conn
	cli    *clientv3.Client
	leases *lease.Client
}

func connectEtcd(c conn, endpoints string) (store, error) {
	if endpoints == "" {
		return nil, usagef("-etcd is empty: want client URLs")
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: strings.Split(endpoints, ","), DialTimeout: c.timeout, Logger: zap.NewNop()})
	if err != nil {
		return nil, usagef("-etcd %q: %v", endpoints, err)
	}
	leases, err := newLeaseClient(func(o *lease.Options) (*lease.Client, error) { return etcdlease.New(cli, o) }, c.prefix)
	if err != nil {
		cli.Close()
		return nil, err
	}
	return &etcdStore{conn: c, cli: cli, leases: leases}, nil
}

func (s *etcdStore) client() *lease.Client { return s.leases }
func (s *etcdStore) close() error          { return s.cli.Close() }

func (s *etcdStore) names(ctx context.Context, pattern string) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	names, err := etcdlease.Names(ctx, s.cli, s.prefix, pattern)
	if errors.Is(err, lease.ErrInvalid) {
		return nil, usagef("%v", err)
	}
	return names, err
}

func (s *etcdStore) forceRelease(ctx context.Context, name string, only fence.Token) (releaseResult, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	r, err := etcdlease.ForceRelease(ctx, s.cli, s.prefix, name, only)
	return releaseResult{Name: name, Released: r.Released, Held: r.Held, Holder: uint64(r.Holder), Identity: r.Identity,
		RemainingMS: max(ms(r.Remaining), -1)}, err
}

func (s *etcdStore) bump(context.Context, string, fence.Token) (bumpResult, error) {
	return bumpResult{}, unsupported("etcd", "bump", etcdNoBump)
}

// etcdNoBump says why bump cannot serve etcd, and what to do instead.
const etcdNoBump = "its tokens are etcd revisions, which only writes advance; " +
	"to move past tokens the storage already saw, use new resource names (docs/leases.md, \"Switching issuers\")"

// releases: none; watch polls (before each TTL can run out).
func (s *etcdStore) releases(context.Context, string) (<-chan fence.Token, error) { return nil, nil }
