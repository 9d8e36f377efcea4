package zklease

import (
	"encoding/binary"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
)

// proxy forwards TCP connections on a loopback port to a ZooKeeper server,
// packet by packet. Cut closes every connection and refuses new ones until
// Heal: to the client, the server is gone; to the server, the session's
// connection closed, and the session lives until its timeout.
type proxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	cut   bool
	conns []net.Conn

	// breakOn, when not 0, is a request opcode: the connection carrying the
	// next reply to such a request is closed instead of forwarding it, and
	// with cutOnBreak the proxy is cut.
	breakOn    atomic.Int32
	cutOnBreak atomic.Bool
}

// startProxy listens on a free loopback port; it stops at cleanup.
func startProxy(t testing.TB, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target}
	go p.serve()
	t.Cleanup(func() {
		ln.Close()
		p.Cut()
	})
	return p
}

func (p *proxy) Addr() string { return p.ln.Addr().String() }

func (p *proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.cut {
			p.mu.Unlock()
			c.Close()
			continue
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.conns = append(p.conns, c, s)
		p.mu.Unlock()
		var ops sync.Map // xid -> opcode of the requests in flight
		go p.forward(s, c, func(pkt []byte) bool {
			ops.Store(int32(binary.BigEndian.Uint32(pkt[0:4])), int32(binary.BigEndian.Uint32(pkt[4:8])))
			return true
		})
		go p.forward(c, s, func(pkt []byte) bool {
			op, _ := ops.LoadAndDelete(int32(binary.BigEndian.Uint32(pkt[0:4])))
			if op == nil || op.(int32) != p.breakOn.Load() || !p.breakOn.CompareAndSwap(op.(int32), 0) {
				return true
			}
			if p.cutOnBreak.Load() {
				p.Cut()
			}
			return false
		})
	}
}

// forward copies length-prefixed packets from src to dst while pass
// accepts them; the first packet (the session handshake) and packets too
// short to carry an xid pass unseen. It closes both ends when done.
func (p *proxy) forward(dst, src net.Conn, pass func(pkt []byte) bool) {
	defer dst.Close()
	defer src.Close()
	var hdr [4]byte
	for first := true; ; first = false {
		if _, err := io.ReadFull(src, hdr[:]); err != nil {
			return
		}
		pkt := make([]byte, binary.BigEndian.Uint32(hdr[:]))
		if _, err := io.ReadFull(src, pkt); err != nil {
			return
		}
		if !first && len(pkt) >= 8 && !pass(pkt) {
			return
		}
		if _, err := dst.Write(append(hdr[:], pkt...)); err != nil {
			return
		}
	}
}

// BreakOnReply closes the connection that carries the next reply to a
// request with opcode op, instead of forwarding that reply: the request
// took effect, and the client cannot know.
func (p *proxy) BreakOnReply(op int32) { p.breakOn.Store(op) }

// CutOnReply is BreakOnReply, and the proxy is cut then: the server went
// away right after it carried out the request.
func (p *proxy) CutOnReply(op int32) {
	p.cutOnBreak.Store(true)
	p.breakOn.Store(op)
}

// Cut closes the proxied connections and refuses new ones.
func (p *proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// Heal accepts connections again.
func (p *proxy) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = false
}
