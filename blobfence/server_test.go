package blobfence_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
)

// TestServerConditionalSemantics checks, with the raw client, what blobfence
// assumes of the S3 server (versitygw in the tests; run it against another
// server with FENCEKIT_S3_ENDPOINT): the conditional headers are honoured,
// and the replies carry the statuses and codes the store classifies.
func TestServerConditionalSemantics(t *testing.T) {
	ctx := context.Background()
	_, _, env := newStore(t, nil)
	c, b := env.Client, &env.Bucket
	status := func(err error) (int, string) {
		var sc interface{ HTTPStatusCode() int }
		var ae smithy.APIError
		st, code := 0, ""
		if errors.As(err, &sc) {
			st = sc.HTTPStatusCode()
		}
		if errors.As(err, &ae) {
			code = ae.ErrorCode()
		}
		return st, code
	}
	expect := func(what string, err error, wantStatus int) {
		t.Helper()
		if st, code := status(err); st != wantStatus {
			t.Errorf("%s: status %d (%s, %v), want %d", what, st, code, err, wantStatus)
		}
	}
	put := func(key, body string, ifMatch, ifNoneMatch *string) (*s3.PutObjectOutput, error) {
		return c.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: aws.String(key), Body: strings.NewReader(body),
			IfMatch: ifMatch, IfNoneMatch: ifNoneMatch, Metadata: map[string]string{"fencekit-token": "5"}})
	}
	_, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: b, Key: aws.String("k")})
	expect("HEAD of a missing key", err, 404)
	p1, err := put("k", "one", nil, aws.String("*"))
	if err != nil {
		t.Fatalf("If-None-Match: * on a missing key: %v", err)
	}
	_, err = put("k", "two", nil, aws.String("*"))
	expect("If-None-Match: * on an existing key", err, 412)
	_, err = put("k", "two", aws.String(`"0123456789abcdef0123456789abcdef"`), nil)
	expect("If-Match with a wrong ETag", err, 412)
	_, err = put("missing", "two", p1.ETag, nil)
	if st, code := status(err); st != 404 || code != "NoSuchKey" {
		t.Errorf("If-Match on a missing key: %d %s, want 404 NoSuchKey", st, code)
	}
	p2, err := put("k", "two", p1.ETag, nil)
	if err != nil {
		t.Fatalf("If-Match with the current ETag: %v", err)
	}
	h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: b, Key: aws.String("k")})
	if err != nil || aws.ToString(h.ETag) != aws.ToString(p2.ETag) || h.Metadata["fencekit-token"] != "5" {
		t.Fatalf("HEAD after the put: %v; ETag %s (put said %s), metadata %v", err, aws.ToString(h.ETag), aws.ToString(p2.ETag), h.Metadata)
	}
	_, err = c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: b, Key: aws.String("k"), IfMatch: p1.ETag})
	expect("DELETE with a wrong If-Match", err, 412)
	if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: b, Key: aws.String("k"), IfMatch: p2.ETag}); err != nil {
		t.Fatalf("DELETE with the current If-Match: %v", err)
	}
	_, err = c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: b, Key: aws.String("k")})
	expect("HEAD after the conditional DELETE", err, 404)
	_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(env.Bucket + "-missing"), Key: aws.String("k"),
		Body: strings.NewReader("x"), IfNoneMatch: aws.String("*")})
	if st, code := status(err); st != 404 || code != "NoSuchBucket" {
		t.Errorf("PUT to a missing bucket: %d %s, want 404 NoSuchBucket", st, code)
	}
}
