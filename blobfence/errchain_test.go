package blobfence_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/fencekit/fencekit/blobfence"
	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/testenv"
)

// TestS3ErrorKeptWhole: an S3 error (a bucket that does not exist) reaches
// the caller with its type (errors.As smithy.APIError) and its text whole,
// after one "blobfence: " that names the call and the object.
func TestS3ErrorKeptWhole(t *testing.T) {
	env := testenv.S3(t)
	s := mustNew(t, env.Client, "fk-no-such-bucket-"+strings.ToLower(env.Bucket[len(env.Bucket)-8:]), nil)
	_, _, err := s.Get(context.Background(), "k")
	var ae smithy.APIError
	if !errors.As(err, &ae) || ae.ErrorCode() != "NoSuchBucket" {
		t.Fatalf("Get from a missing bucket: %v; want S3's NoSuchBucket (smithy.APIError)", err)
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "blobfence: get fk-no-such-bucket-") || strings.Count(msg, "blobfence:") != 1 || !strings.Contains(msg, ae.ErrorMessage()) {
		t.Errorf("message %q; want `blobfence: get <bucket>/k: ` once and S3's message %q", msg, ae.ErrorMessage())
	}
}

// TestErrorsWrappedOnce: the errors of a call say "blobfence" once, then
// the call and the key, and keep their chains: a stale put reaches
// *fence.StaleError, a put over a malformed header ErrBadMetadata, a
// second Create ErrExists, each without its text rewritten.
func TestErrorsWrappedOnce(t *testing.T) {
	ctx := context.Background()
	s, _, env := newStore(t, nil)
	if err := s.Put(ctx, "once/k", []byte("B"), 34); err != nil {
		t.Fatal(err)
	}
	if err := s.Create(ctx, "once/c", []byte("C"), 1); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Client.PutObject(ctx, &s3.PutObjectInput{Bucket: &env.Bucket, Key: aws.String("once/bad"),
		Body: strings.NewReader("fencekit-blob 1 put x n\nx")}); err != nil {
		t.Fatal(err)
	}
	stale := s.Put(ctx, "once/k", []byte("A"), 33)
	var se *fence.StaleError
	if !errors.As(stale, &se) || se.Presented != 33 || se.Current != 34 || !errors.Is(stale, fence.ErrFencedOut) {
		t.Errorf("stale put: %v; want a *fence.StaleError 33 < 34", stale)
	}
	cases := []struct {
		err      error
		sentinel error
		want     string
	}{
		{stale, fence.ErrStale, `blobfence: put: stale token 33 for "` + env.Bucket + `/once/k": token 34 was already accepted`},
		{s.Put(ctx, "once/bad", []byte("y"), 9), blobfence.ErrBadMetadata, "blobfence: put " + env.Bucket + "/once/bad: read the current state: malformed token metadata: "},
		{s.Create(ctx, "once/c", []byte("D"), 2), blobfence.ErrExists, "blobfence: create " + env.Bucket + "/once/c: an object has the key already: created by "},
	}
	for _, tc := range cases {
		if !errors.Is(tc.err, tc.sentinel) {
			t.Errorf("%v: not %v", tc.err, tc.sentinel)
			continue
		}
		if msg := tc.err.Error(); !strings.HasPrefix(msg, tc.want) || strings.Count(msg, "fence:") != 1 {
			t.Errorf("message %q;\nwant %q..., naming blobfence once", msg, tc.want)
		}
	}
}
