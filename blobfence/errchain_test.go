package blobfence_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/smithy-go"

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
