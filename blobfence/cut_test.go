package blobfence_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/testenv"
)

// cutProxy is a loopback TCP proxy in front of an S3 server that cuts the
// first cuts connections carrying a PUT after forwarding after bytes of
// them (the request line and headers, then part of the body). It looks
// for the PUT at a connection's start only: its client must not reuse
// connections (a PUT after a GET on one connection went uncut).
type cutProxy struct {
	addr  string
	after int
	cuts  atomic.Int32 // PUT connections still to cut
	cut   atomic.Int32 // connections cut
	wg    sync.WaitGroup
}

func startCutProxy(t *testing.T, target string, after, cuts int) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{addr: ln.Addr().String(), after: after}
	p.cuts.Store(int32(cuts))
	p.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.wg.Go(func() { p.serve(c, target) })
		}
	})
	t.Cleanup(func() { ln.Close(); p.wg.Wait() })
	return p
}

func (p *cutProxy) serve(c net.Conn, target string) {
	defer c.Close()
	s, err := net.Dial("tcp", target)
	if err != nil {
		return
	}
	defer s.Close()
	go func() { io.Copy(c, s); c.Close() }()
	buf := make([]byte, 4096)
	sent, cutting := 0, false
	for {
		n, err := c.Read(buf)
		if n > 0 {
			if sent == 0 && bytes.HasPrefix(buf[:n], []byte("PUT ")) && p.cuts.Add(-1) >= 0 {
				cutting = true
			}
			chunk := buf[:n]
			if cutting && sent+n > p.after {
				chunk = chunk[:p.after-sent]
			}
			if _, werr := s.Write(chunk); werr != nil {
				return
			}
			sent += len(chunk)
			if cutting && sent >= p.after {
				p.cut.Add(1)
				return // both ends close: the server sees half a body, the client a reset
			}
		}
		if err != nil {
			return
		}
	}
}

// TestPutCutMidBody: a put whose connection is cut part way through the
// body (a loopback proxy in front of the server) is sent again by the
// store, and the object holds the whole body with its token; the SDK
// hashed that body (io.Copy, envelopeReader.WriteTo) for the signature the
// server checked. Fencing holds after it: an older token is refused, a
// newer one written.
func TestPutCutMidBody(t *testing.T) {
	env := testenv.S3(t)
	u, err := url.Parse(env.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	p := startCutProxy(t, u.Host, 64<<10, 2)
	client := pooledClient(&testenv.S3Env{Endpoint: "http://" + p.addr, AccessKey: env.AccessKey, SecretKey: env.SecretKey}, 0)
	s := mustNew(t, client, env.Bucket, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	body := bytes.Repeat([]byte("0123456789abcdef"), 16<<10) // 256 KiB
	for i := range body {
		body[i] ^= byte(i / 4096)
	}
	if _, err := s.PutReader(ctx, "cut", io.NewSectionReader(bytes.NewReader(body), 0, int64(len(body))), 5); err != nil {
		t.Fatalf("put with its first attempts cut mid-body: %v", err)
	}
	if n := p.cut.Load(); n == 0 {
		t.Fatal("the proxy cut no PUT")
	}
	t.Logf("%d PUT connections cut after %d bytes", p.cut.Load(), p.after)
	got, tok, err := s.Get(ctx, "cut")
	if err != nil || tok != 5 || !bytes.Equal(got, body) {
		t.Fatalf("stored after the cuts: %d bytes, token %v, %v; want the %d-byte body, token 5", len(got), tok, err, len(body))
	}
	if err := s.Put(ctx, "cut", []byte("older"), 4); !errors.Is(err, fence.ErrStale) {
		t.Fatalf("put with token 4 after 5: %v; want fence.ErrStale", err)
	}
	if err := s.Put(ctx, "cut", []byte("newer"), 6); err != nil {
		t.Fatal(err)
	}
	wantStored(t, s, "cut", "newer", 6)
}
