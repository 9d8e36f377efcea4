package blobfence_test

import (
	"net/http"
	"strings"
	"sync"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/valid"
)

// commitLog is a proxy transport that records, per object, every PUT the
// server accepted, in the order the server accepted them: it sends one PUT
// at a time, so the order it sees replies in is the order the server
// applied them. Reads go through unserialized. The log is the truth a race
// test audits, whatever the writers believe.
type commitLog struct {
	writing sync.Mutex          // held across each write's round trip
	mu      sync.Mutex          // guards writes
	writes  map[string][]logged // URL path -> accepted writes, in order
}

// logged is one accepted write: its token, and whether it was a tombstone.
type logged struct {
	tok     fence.Token
	deleted bool
}

func newCommitLog() *commitLog { return &commitLog{writes: map[string][]logged{}} }

func (l *commitLog) proxy() *s3Proxy { return &s3Proxy{transport: l} }

// accepted returns the tokens of the writes the server accepted for path,
// in order.
func (l *commitLog) accepted(path string) []fence.Token {
	var toks []fence.Token
	for _, w := range l.log(path) {
		toks = append(toks, w.tok)
	}
	return toks
}

func (l *commitLog) log(path string) []logged {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.writes[path]
}

func (l *commitLog) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method != http.MethodPut {
		return proxyTransport.RoundTrip(r)
	}
	tok, _ := valid.ParseToken(r.Header.Get("X-Amz-Meta-" + tokenMetadata))
	deleted := strings.HasPrefix(r.Header.Get("X-Amz-Meta-"+tokenMetadata+"-Write"), "2 del ")
	l.writing.Lock()
	defer l.writing.Unlock()
	resp, err := proxyTransport.RoundTrip(r)
	if err != nil || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.writes[r.URL.Path] = append(l.writes[r.URL.Path], logged{tok, deleted})
	return resp, nil
}
