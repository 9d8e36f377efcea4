package main

import (
	"flag"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/fencekit/fencekit/lease"
	"github.com/fencekit/fencekit/lease/zklease"
)

func init() { backends["zookeeper"] = addZooKeeperFlags }

// envZooKeeper names the ZooKeeper servers.
const envZooKeeper = "FENCECTL_ZOOKEEPER"

// zkSession is fencectl's own session timeout: it holds no lease.
const zkSession = 10 * time.Second

// addZooKeeperFlags adds the connection flag of -backend zookeeper.
func addZooKeeperFlags(fs *flag.FlagSet) func(conn) (*store, error) {
	servers := fs.String("zookeeper", envOr(envZooKeeper, "127.0.0.1:2181"),
		"with -backend zookeeper: the ensemble's host:port, comma-separated (env "+envZooKeeper+")")
	return func(c conn) (*store, error) { return connectZooKeeper(c, *servers) }
}

// connectZooKeeper connects the ZooKeeper backend: package zklease.
func connectZooKeeper(c conn, servers string) (*store, error) {
	var list []string
	for _, s := range strings.Split(servers, ",") {
		if s = strings.TrimSpace(s); s != "" {
			list = append(list, s)
		}
	}
	if len(list) == 0 {
		return nil, usagef("-zookeeper %q: want host:port, comma-separated", servers)
	}
	zc, _, err := zk.Connect(list, zkSession, zk.WithLogger(zkLogger{}))
	if err != nil {
		return nil, usagef("-zookeeper %q: %v", servers, err)
	}
	leases, err := newLeaseClient(func(o *lease.Options) (*lease.Client, error) { return zklease.New(zc, o) }, c.prefix)
	if err != nil {
		zc.Close()
		return nil, err
	}
	return &store{leases: leases, close: zc.Close}, nil
}

// zkLogger discards go-zookeeper's connection messages: a server that
// does not answer shows as the command's timeout error.
type zkLogger struct{}

func (zkLogger) Printf(string, ...any) {}
