package blobfence_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/fencekit/fencekit/blobfence"
)

// TestVerify: versitygw honours every condition fencing needs, and Verify
// says so; behind a proxy that drops If-Match (as some S3-compatible
// servers and proxies do), Verify returns ErrUnsupported naming each
// If-Match it found ignored; behind one whose PUT replies give another
// ETag than the object has, it says so. Either way the scratch key is
// gone. Verify logs no torn metadata here (TestVerifyTornMetadata).
func TestVerify(t *testing.T) {
	ctx := context.Background()
	s, c, env := newStore(t, nil)
	logged := captureLog(t)
	if err := s.Verify(ctx); err != nil {
		t.Fatalf("Verify against versitygw: %v", err)
	}
	if logged.Len() > 0 {
		t.Errorf("Verify logged %q; want nothing (the server keeps ETag and metadata together)", logged)
	}
	t.Logf("Verify: %d requests", c.total())

	dropping := mustNew(t, dropIfMatch().client(t, env), env.Bucket, nil)
	err := dropping.Verify(ctx)
	if !errors.Is(err, blobfence.ErrUnsupported) {
		t.Fatalf("Verify behind a proxy that drops If-Match: %v; want ErrUnsupported", err)
	}
	for _, want := range []string{"If-Match on PUT is ignored", "If-Match on PUT with the ETag the object had before is ignored"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Verify's error %q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "If-None-Match") || strings.Contains(err.Error(), "metadata") {
		t.Errorf("Verify's error %q names what the proxy left alone", err)
	}

	// A server that stores one ETag and answers another: a put with After
	// would condition the next write on an ETag the object does not have.
	lying := mustNew(t, (&s3Proxy{reply: func(r *http.Response) error {
		if r.Request.Method == http.MethodPut && r.StatusCode == http.StatusOK {
			r.Header.Set("ETag", `"0123456789abcdef0123456789abcdef"`)
		}
		return nil
	}}).client(t, env), env.Bucket, nil)
	err = lying.Verify(ctx)
	if !errors.Is(err, blobfence.ErrUnsupported) || !strings.Contains(err.Error(), "but a HEAD then shows") {
		t.Fatalf("Verify behind a proxy that changes PUT replies' ETags: %v; want ErrUnsupported naming the reply", err)
	}
	if keys := listKeys(t, env); len(keys) != 0 {
		t.Errorf("Verify left %v in the bucket", keys)
	}
}
