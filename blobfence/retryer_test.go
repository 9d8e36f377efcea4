package blobfence_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/fencekit/fencekit/blobfence"
	"github.com/fencekit/fencekit/internal/testenv"
)

// answer500 is the HTTP client under a real *s3.Client: it sends every
// request to the server and counts them by method; for the first fail[m]
// requests of method m it drops the server's reply, the request having
// taken effect, and answers 500 instead, as a proxy that timed out would.
type answer500 struct {
	next s3.HTTPClient
	mu   sync.Mutex
	fail map[string]int
	sent map[string]int
}

func (h *answer500) Do(req *http.Request) (*http.Response, error) {
	resp, err := h.next.Do(req)
	h.mu.Lock()
	h.sent[req.Method]++
	inject := err == nil && h.fail[req.Method] > 0
	if inject {
		h.fail[req.Method]--
	}
	h.mu.Unlock()
	if !inject {
		return resp, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return &http.Response{Status: "500 Internal Server Error", StatusCode: 500, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{}, Body: io.NopCloser(strings.NewReader("")), Request: req}, nil
}

// TestConditionalWritesBypassSDKRetryer checks the retry setting: PUTs (of
// a put and of a delete's tombstone) go out with the SDK's retryer limited
// to one attempt (the store's loop retries them after re-reading), reads
// keep the client's retryer.
func TestConditionalWritesBypassSDKRetryer(t *testing.T) {
	ctx := context.Background()
	f := newRacer(t)
	s := mustNew(t, f, f.env.Bucket, nil)
	if err := s.Put(ctx, "k", []byte("x"), 1); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "k", 1); err != nil {
		t.Fatal(err)
	}
	for op, want := range map[string]int{"PutObject": 1, "GetObject": retry.DefaultMaxAttempts} {
		got := f.sdkAttempts[op]
		if len(got) == 0 {
			t.Fatalf("%s was not called", op)
		}
		for _, n := range got {
			if n != want {
				t.Errorf("%s sent with SDK max attempts %d, want %d", op, n, want)
			}
		}
	}
}

// TestSDKRetryerEndToEnd checks the retry setting through a real *s3.Client
// whose retryer would retry a 500 four times (RetryMaxAttempts: 5): the
// conditional PUTs that landed and got a 500 are not sent again
// by the SDK (a resent PUT would get 412 for the store's own write); the
// store re-reads, recognizes its write, and reports success. HEADs keep the
// client's retryer: a GET answered 500 is resent by the SDK.
func TestSDKRetryerEndToEnd(t *testing.T) {
	ctx := context.Background()
	env := testenv.S3(t)
	h := &answer500{next: awshttp.NewBuildableClient(), fail: map[string]int{}, sent: map[string]int{}}
	client := s3.New(s3.Options{
		BaseEndpoint:     aws.String(env.Endpoint),
		Region:           "us-east-1",
		Credentials:      credentials.NewStaticCredentialsProvider(env.AccessKey, env.SecretKey, ""),
		UsePathStyle:     true,
		HTTPClient:       h,
		RetryMaxAttempts: 5,
	})
	s := mustNew(t, client, env.Bucket, nil)
	h.fail = map[string]int{http.MethodPut: 1, http.MethodGet: 1}
	if err := s.Put(ctx, "k", []byte("body"), 3); err != nil {
		t.Fatalf("put whose reply was a 500 after it landed: %v; want success", err)
	}
	// GET (500, resent by the SDK), PUT (landed, 500), GET: its own write.
	if h.sent[http.MethodPut] != 1 || h.sent[http.MethodGet] != 3 {
		t.Fatalf("sent %d PUTs and %d GETs; want 1 PUT (no SDK retry) and 3 GETs (one SDK retry)",
			h.sent[http.MethodPut], h.sent[http.MethodGet])
	}
	h.fail = map[string]int{http.MethodPut: 1}
	if err := s.Delete(ctx, "k", 3); err != nil {
		t.Fatalf("delete whose reply was a 500 after it landed: %v", err)
	}
	if h.sent[http.MethodPut] != 2 || h.sent[http.MethodDelete] != 0 {
		t.Fatalf("sent %d PUTs, %d DELETEs in all; want 2 PUTs (no SDK retry of the tombstone) and no DELETE", h.sent[http.MethodPut], h.sent[http.MethodDelete])
	}
	if _, err := s.Head(ctx, "k"); !errors.Is(err, blobfence.ErrNotFound) {
		t.Fatalf("Head after the delete: %v; want ErrNotFound", err)
	}
}
