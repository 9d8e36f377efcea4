package zklease

import (
	"context"
	"encoding/binary"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/fencekit/fencekit/internal/leasetest"
	"github.com/fencekit/fencekit/internal/testenv"
	"github.com/fencekit/fencekit/lease"
)

const (
	envServers = "LEASETEST_ZK_SERVERS"
	envPrefix  = "LEASETEST_ZK_PREFIX"
)

// zkTTL is the suite's TTL and the session timeout of its clients (the
// rule of the package doc: TTL = session timeout). The harness's servers
// tick every 100ms, so a session expires within 100ms of its timeout.
const zkTTL = 2 * time.Second

var zkIssuer = leasetest.Issuer{
	Name:   "zookeeper",
	TTL:    zkTTL,
	Grants: 2000,
	Open:   func(t testing.TB) leasetest.Namespace { return zkNS{testenv.ZooKeeper(t)} },
	FromEnv: func(context.Context) (*lease.Client, error) {
		// As a user connects: no dialer, no proxy, the library's logger.
		conn, _, err := zk.Connect(strings.Split(os.Getenv(envServers), ","), zkTTL)
		if err != nil {
			return nil, err
		}
		return New(conn, &lease.Options{KeyPrefix: os.Getenv(envPrefix)})
	},
}

func init() { leasetest.Register(zkIssuer) }

func TestMain(m *testing.M) { testenv.MainWithServers(m, testenv.EnvZooKeeper) }

func TestConformance(t *testing.T) { leasetest.Run(t, zkIssuer) }

type zkNS struct{ env *testenv.ZooKeeperEnv }

func (ns zkNS) Env() []string {
	return []string{envServers + "=" + strings.Join(ns.env.Servers, ","), envPrefix + "=" + prefixOf(ns.env)}
}

// prefixOf is the KeyPrefix that puts a client's nodes under env.Root.
func prefixOf(env *testenv.ZooKeeperEnv) string { return strings.TrimPrefix(env.Root, "/") }

// Client connects through a proxy (Cut drops its connections and refuses
// new ones, as a network partition would: the session lives on until it
// expires) and counts the requests the connection sends.
func (ns zkNS) Client(t testing.TB, opts *lease.Options) *leasetest.Conn {
	p := startProxy(t, ns.env.Servers[0])
	conn, sent := dialCounting(t, []string{p.Addr()}, zkTTL)
	o := lease.Options{}
	if opts != nil {
		o = *opts
	}
	o.KeyPrefix = prefixOf(ns.env)
	c, err := New(conn, &o)
	if err != nil {
		t.Fatal(err)
	}
	leasetest.CloseAtCleanup(t, c)
	return &leasetest.Conn{Client: c, Cut: p.Cut, Sent: sent.Load}
}

// dialCounting connects to servers with session timeout st and counts the
// requests sent (packets with a positive xid: not the handshake, pings or
// watch resets). The connection is closed at cleanup.
func dialCounting(t testing.TB, servers []string, st time.Duration) (*zk.Conn, *atomic.Int64) {
	t.Helper()
	sent := new(atomic.Int64)
	dial := func(network, addr string, timeout time.Duration) (net.Conn, error) {
		c, err := net.DialTimeout(network, addr, timeout)
		if err != nil {
			return nil, err
		}
		return &countingConn{Conn: c, sent: sent}, nil
	}
	conn, _, err := zk.Connect(servers, st, zk.WithDialer(dial), zk.WithLogger(testenv.ZKLogger))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	return conn, sent
}

// countingConn counts the request packets written: go-zookeeper writes
// each packet whole, length first, then the xid.
type countingConn struct {
	net.Conn
	sent *atomic.Int64
}

func (c *countingConn) Write(b []byte) (int, error) {
	if len(b) >= 8 && int32(binary.BigEndian.Uint32(b[4:8])) > 0 {
		c.sent.Add(1)
	}
	return c.Conn.Write(b)
}
