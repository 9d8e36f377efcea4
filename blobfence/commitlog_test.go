package blobfence_test

import (
	"bytes"
	"encoding/xml"
	"io"
	"net/http"
	"sync"

	"github.com/fencekit/fencekit/blobfence"
	"github.com/fencekit/fencekit/fence"
)

// commitLog is a proxy transport that records, per object, the token of
// every write the server accepted (PUT, CompleteMultipartUpload), in the
// order the server accepted them: it sends one write at a time, so the
// order it sees replies in is the order the server applied them. Reads go
// through unserialized. The log is the truth a race test audits, whatever
// the writers believe they replaced.
type commitLog struct {
	writing sync.Mutex // held across each write's round trip
	mu      sync.Mutex // guards the maps
	uploads map[string]fence.Token
	tokens  map[string][]fence.Token // URL path -> accepted tokens, in order
}

func newCommitLog() *commitLog {
	return &commitLog{uploads: map[string]fence.Token{}, tokens: map[string][]fence.Token{}}
}

func (l *commitLog) proxy() *s3Proxy { return &s3Proxy{transport: l} }

// accepted returns the tokens the server accepted for path, in order.
func (l *commitLog) accepted(path string) []fence.Token {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.tokens[path]
}

func (l *commitLog) RoundTrip(r *http.Request) (*http.Response, error) {
	q := r.URL.Query()
	put := r.Method == http.MethodPut && !q.Has("partNumber")
	create := r.Method == http.MethodPost && q.Has("uploads")
	complete := r.Method == http.MethodPost && q.Has("uploadId")
	if !put && !create && !complete {
		return proxyTransport.RoundTrip(r)
	}
	tok, _ := fence.ParseToken(r.Header.Get("X-Amz-Meta-" + blobfence.DefaultMetadataKey))
	if !create { // creating an upload writes nothing: no need to serialize it
		l.writing.Lock()
		defer l.writing.Unlock()
	}
	resp, err := proxyTransport.RoundTrip(r)
	if err != nil || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil || bytes.Contains(body, []byte("<Error>")) {
		return resp, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case create:
		var out struct{ UploadId string }
		if err := xml.Unmarshal(body, &out); err != nil {
			return nil, err
		}
		l.uploads[out.UploadId] = tok
	case complete:
		l.tokens[r.URL.Path] = append(l.tokens[r.URL.Path], l.uploads[q.Get("uploadId")])
	default:
		l.tokens[r.URL.Path] = append(l.tokens[r.URL.Path], tok)
	}
	return resp, nil
}
