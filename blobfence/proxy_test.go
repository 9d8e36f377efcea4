package blobfence_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/fencekit/fencekit/internal/testenv"
)

// s3Proxy is an HTTP layer in front of the test's S3 server that changes
// requests and replies the way some S3-compatible servers and proxies do.
// It signs each changed request again with the test's credentials, so the
// server accepts it.
type s3Proxy struct {
	request   func(*http.Request)        // may change a request before it is signed and sent
	reply     func(*http.Response) error // may change a reply
	transport http.RoundTripper          // nil: http.DefaultTransport
}

// client starts the proxy in front of env's server and returns a client of
// it; the proxy stops at cleanup.
func (p *s3Proxy) client(t testing.TB, env *testenv.S3Env) *s3.Client {
	target, err := url.Parse(env.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	signer := v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true })
	creds := aws.Credentials{AccessKeyID: env.AccessKey, SecretAccessKey: env.SecretKey}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			r := pr.Out
			r.URL.Scheme, r.URL.Host, r.Host = target.Scheme, target.Host, target.Host
			if p.request != nil {
				p.request(r)
			}
			r.Header.Del("Authorization")
			if err := signer.SignHTTP(r.Context(), creds, r, r.Header.Get("X-Amz-Content-Sha256"), "s3", "us-east-1", time.Now()); err != nil {
				t.Errorf("proxy: sign: %v", err)
			}
		},
		ModifyResponse: p.reply,
		Transport:      p.transport,
	}
	if rp.Transport == nil {
		rp.Transport = proxyTransport
	}
	srv := httptest.NewServer(rp)
	t.Cleanup(srv.Close)
	return pooledClient(&testenv.S3Env{Endpoint: srv.URL, AccessKey: env.AccessKey, SecretKey: env.SecretKey}, 64)
}

// proxyTransport keeps enough idle connections to the server for 50
// concurrent writers.
var proxyTransport = &http.Transport{MaxIdleConns: 64, MaxIdleConnsPerHost: 64}

// dropIfMatch is a proxy that removes If-Match from every request, as
// servers without conditional writes do.
func dropIfMatch() *s3Proxy {
	return &s3Proxy{request: func(r *http.Request) { r.Header.Del("If-Match") }}
}

// opaqueETags is a proxy that gives every write a new random ETag of 32 hex
// digits, as servers do whose ETags are not the MD5 of the body (SSE-KMS,
// some S3-compatible servers): the same bytes written twice get two
// ETags. It keeps, per object, the server's ETag and the one it handed out,
// translates If-Match back, and never lets an ETag it did not hand out for
// the current version match. Its replies say aws:kms, as SSE-KMS's do.
type opaqueETags struct {
	noKMS   bool // the replies do not say aws:kms (a server that hides why)
	mu      sync.Mutex
	current map[string][2]string // path -> {server's ETag, the proxy's}
}

func newOpaqueETags() (*opaqueETags, *s3Proxy) {
	o := &opaqueETags{current: map[string][2]string{}}
	return o, &s3Proxy{request: o.request, reply: o.reply}
}

func (o *opaqueETags) request(r *http.Request) {
	v := r.Header.Get("If-Match")
	if v == "" {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if cur, ok := o.current[r.URL.Path]; ok && cur[1] == v {
		r.Header.Set("If-Match", cur[0])
	} else {
		r.Header.Set("If-Match", `"ffffffffffffffffffffffffffffffff"`)
	}
}

func (o *opaqueETags) reply(resp *http.Response) error {
	r := resp.Request
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusPartialContent {
		return nil
	}
	if !o.noKMS {
		resp.Header.Set("X-Amz-Server-Side-Encryption", "aws:kms")
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if real := resp.Header.Get("ETag"); real != "" {
		resp.Header.Set("ETag", o.opaque(r.URL.Path, real, r.Method == http.MethodPut))
	}
	return nil
}

// opaque returns the ETag the proxy shows for the server's ETag real of
// path: a new one after every write, the current one on reads.
func (o *opaqueETags) opaque(path, real string, written bool) string {
	if cur, ok := o.current[path]; ok && cur[0] == real && !written {
		return cur[1]
	}
	var b [16]byte
	rand.Read(b[:])
	fake := `"` + hex.EncodeToString(b[:]) + `"`
	o.current[path] = [2]string{real, fake}
	return fake
}

// listKeys returns the keys in the bucket.
func listKeys(t *testing.T, env *testenv.S3Env) []string {
	out, err := env.Client.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: &env.Bucket})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range out.Contents {
		keys = append(keys, aws.ToString(o.Key))
	}
	return keys
}
