package bench

import (
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/fencekit/fencekit/internal/testenv"
	"github.com/fencekit/fencekit/lease"
	"github.com/fencekit/fencekit/lease/zklease"
)

// newZooKeeperIssuer starts a private standalone ZooKeeper (fsync on) and
// returns a zklease client of it with session timeout issuerTTL.
func newZooKeeperIssuer(b *testing.B, p *probe, opts *lease.Options) (*lease.Client, error) {
	e := testenv.StartZooKeeperEnsemble(b, 1)
	dial := func(network, addr string, timeout time.Duration) (net.Conn, error) {
		c, err := net.DialTimeout(network, addr, timeout)
		if err != nil {
			return nil, err
		}
		return zkProbeConn{c, p}, nil
	}
	conn, _, err := zk.Connect(e.Servers, issuerTTL, zk.WithDialer(dial), zk.WithLogger(testenv.ZKLogger))
	if err != nil {
		return nil, err
	}
	b.Cleanup(conn.Close)
	return zklease.New(conn, opts)
}

// zkProbeConn counts the requests written (a positive xid: not the
// handshake or pings) and marks each renewal (a multi: the version check)
// as it is sent; renewals run back to back, so the gaps between sends are
// the renewals' latencies.
type zkProbeConn struct {
	net.Conn
	p *probe
}

const zkOpMulti = 14

func (c zkProbeConn) Write(b []byte) (int, error) {
	if len(b) >= 12 && int32(binary.BigEndian.Uint32(b[4:8])) > 0 {
		c.p.sent.Add(1)
		if binary.BigEndian.Uint32(b[8:12]) == zkOpMulti {
			c.p.mark()
		}
	}
	return c.Conn.Write(b)
}
