package main

import (
	"context"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/fencekit/fencekit/internal/testenv"
)

// dropIfMatch starts an HTTP proxy in front of srv that removes If-Match
// from every request, as a server or proxy without conditional writes
// does, signing the request again so that srv accepts it.
func dropIfMatch(t *testing.T, srv *testenv.S3Server) string {
	target, err := url.Parse(srv.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	signer := v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true })
	creds := aws.Credentials{AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey}
	rp := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		r := pr.Out
		r.URL.Scheme, r.URL.Host, r.Host = target.Scheme, target.Host, target.Host
		r.Header.Del("If-Match")
		r.Header.Del("Authorization")
		if err := signer.SignHTTP(r.Context(), creds, r, r.Header.Get("X-Amz-Content-Sha256"), "s3", "us-east-1", time.Now()); err != nil {
			t.Errorf("proxy: sign: %v", err)
		}
	}}
	p := httptest.NewServer(rp)
	t.Cleanup(p.Close)
	return p.URL
}

func TestS3Check(t *testing.T) {
	srv := testenv.StartS3Server(t)
	const bucket = "fencectl-check"
	if _, err := srv.Client().CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	creds := func(endpoint string) []string {
		return []string{"AWS_ENDPOINT_URL_S3=" + endpoint, "AWS_ACCESS_KEY_ID=" + srv.AccessKey, "AWS_SECRET_ACCESS_KEY=" + srv.SecretKey, "AWS_REGION=us-east-1"}
	}
	r := runWant(t, creds(srv.Endpoint), 0, "s3-check", "-bucket", bucket)
	if !strings.HasPrefix(r.stdout, "ok: ") || !strings.Contains(r.stdout, srv.Endpoint) {
		t.Errorf("s3-check on the server AWS_ENDPOINT_URL_S3 names: %q; want ok, naming %s", r.stdout, srv.Endpoint)
	}
	if res := decode[s3Result](t, runWant(t, creds(srv.Endpoint), 0, "s3-check", "-json", "-bucket", bucket)); !res.OK || res.Bucket != bucket {
		t.Errorf("s3-check -json: %+v", res)
	}
	out, err := srv.Client().ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	if err != nil || len(out.Contents) != 0 {
		t.Errorf("the check left objects behind: %v %v", out, err)
	}

	proxy := dropIfMatch(t, srv)
	r = runWant(t, creds(proxy), exitFailed, "s3-check", "-bucket", bucket)
	t.Logf("through a proxy that drops If-Match: %s", r.stderr)
	if !strings.Contains(r.stderr, "If-Match") || !strings.Contains(r.stderr, "cannot fence writes") {
		t.Errorf("s3-check through a proxy that drops If-Match: %s", r.stderr)
	}
	res := decode[s3Result](t, runWant(t, creds(proxy), exitFailed, "s3-check", "-json", "-bucket", bucket))
	if res.OK || !strings.Contains(res.Error, "If-Match") {
		t.Errorf("s3-check -json through the proxy: %+v", res)
	}

	runWant(t, creds(srv.Endpoint), exitFailed, "s3-check", "-bucket", "no-such-bucket")
	runWant(t, creds(srv.Endpoint), exitUsage, "s3-check")

	// The flags instead of the SDK's variables.
	flags := []string{"AWS_ENDPOINT_URL_S3=", "AWS_ACCESS_KEY_ID=", "AWS_SECRET_ACCESS_KEY=", "AWS_REGION=us-east-1",
		"AWS_CONFIG_FILE=/nonexistent", "AWS_SHARED_CREDENTIALS_FILE=/nonexistent"}
	if r := runWant(t, flags, 0, "s3-check", "-bucket", bucket, "-s3-endpoint", srv.Endpoint,
		"-s3-access-key", srv.AccessKey, "-s3-secret-key", srv.SecretKey); !strings.HasPrefix(r.stdout, "ok: ") {
		t.Errorf("s3-check with the flags: %q", r.stdout)
	}
	// The harness's own variables are not fencectl's: with only them set,
	// there are no credentials.
	none := []string{"FENCEKIT_S3_ENDPOINT=" + srv.Endpoint, "FENCEKIT_S3_ACCESS_KEY=" + srv.AccessKey, "FENCEKIT_S3_SECRET_KEY=" + srv.SecretKey,
		"AWS_ENDPOINT_URL_S3=" + srv.Endpoint, "AWS_ACCESS_KEY_ID=", "AWS_SECRET_ACCESS_KEY=",
		"AWS_CONFIG_FILE=/nonexistent", "AWS_SHARED_CREDENTIALS_FILE=/nonexistent", "AWS_EC2_METADATA_DISABLED=true"}
	if r := runWant(t, none, exitUsage, "s3-check", "-bucket", bucket); !strings.Contains(r.stderr, "no credentials") {
		t.Errorf("s3-check without credentials: %s", r.stderr)
	}
}
