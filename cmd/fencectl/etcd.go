package main

import (
	"flag"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/fencekit/fencekit/lease"
	"github.com/fencekit/fencekit/lease/etcdlease"
)

func init() { backends["etcd"] = addEtcdFlags }

const (
	envEtcdEndpoints = "ETCDCTL_ENDPOINTS" // etcdctl's own
	defEtcdEndpoints = "http://127.0.0.1:2379"
)

// addEtcdFlags adds the etcd connection flag of -backend etcd.
func addEtcdFlags(fs *flag.FlagSet) func(conn) (*store, error) {
	endpoints := fs.String("etcd", envOr(envEtcdEndpoints, defEtcdEndpoints),
		"with -backend etcd: comma-separated client URLs (env "+envEtcdEndpoints+")")
	return func(c conn) (*store, error) { return connectEtcd(c, *endpoints) }
}

// connectEtcd connects the etcd backend: package etcdlease.
func connectEtcd(c conn, endpoints string) (*store, error) {
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
	return &store{leases: leases, close: func() { cli.Close() }}, nil
}
