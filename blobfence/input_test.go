package blobfence_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/fencekit/fencekit/blobfence"
	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/valid"
)

// TestBadInputSendsNothing: every bad argument gives an error wrapping
// fence.ErrInvalid that names the problem, and no request is sent.
func TestBadInputSendsNothing(t *testing.T) {
	ctx := context.Background()
	c := &counting{S3API: nopS3{}}
	good := mustNew(t, c, "bucket", nil)
	longKey := strings.Repeat("k", maxKeyLen+1)
	type call func() error
	ops := func(s *blobfence.Store, key string, tok fence.Token) map[string]call {
		return map[string]call{
			"Put":       func() error { return s.Put(ctx, key, []byte("x"), tok) },
			"PutReader": func() error { _, err := s.PutReader(ctx, key, strings.NewReader("x"), tok); return err },
			"Delete":    func() error { return s.Delete(ctx, key, tok) },
			"Claim":     func() error { return s.Claim(ctx, key, tok) },
			"Retire":    func() error { return s.Retire(ctx, key) },
			"Get":       func() error { _, _, err := s.Get(ctx, key); return err },
			"Head":      func() error { _, err := s.Head(ctx, key); return err },
		}
	}
	cases := []struct {
		name   string
		store  *blobfence.Store
		key    string
		tok    fence.Token
		want   string
		writes bool // only the write methods take the token
	}{
		{"nil store", nil, "k", 1, "nil *Store", false},
		{"empty key", good, "", 1, "key is empty", false},
		{"key over 1024 bytes", good, longKey, 1, "1025 bytes", false},
		{"key not UTF-8", good, "a\xffb", 1, "not valid UTF-8", false},
		{"key of 16 KB", good, strings.Repeat("é", 8<<10), 1, "16384 bytes, longer than 1024", false},
		{"key with NUL", good, "a\x00b", 1, "control character (U+0000) at byte 1", false},
		{"key with a newline", good, "a/\nb", 1, "control character (U+000A) at byte 2", false},
		{"key with DEL", good, "a\x7f", 1, "U+007F", false},
		{"key with a C1 control", good, "a\u0085", 1, "U+0085", false},
		{"token 0", good, "k", 0, "token is zero", true},
		{"token above 2^63-1", good, "k", valid.MaxToken + 1, "above the maximum", true},
	}
	for _, tc := range cases {
		for name, op := range ops(tc.store, tc.key, tc.tok) {
			if tc.writes && (name == "Get" || name == "Head" || name == "Retire") {
				continue
			}
			err := op()
			if !errors.Is(err, fence.ErrInvalid) || !strings.Contains(err.Error(), tc.want) ||
				!strings.HasPrefix(err.Error(), "blobfence: ") || strings.Count(err.Error(), "fence:") != 1 || len(err.Error()) > 200 {
				t.Errorf("%s with %s: err = %.300v; want a short blobfence error matching fence.ErrInvalid, saying %q and \"blobfence:\" once", name, tc.name, err, tc.want)
			}
		}
	}
	if _, err := good.PutReader(ctx, "k", nil, 1); !errors.Is(err, fence.ErrInvalid) {
		t.Errorf("nil reader: %v", err)
	}
	if n := c.total(); n != 0 {
		t.Fatalf("bad input sent %d requests, want 0", n)
	}
}

// TestNewRefusesBadArguments: New returns an error naming the argument,
// for a nil client, a typed-nil *s3.Client, an empty bucket and bad options.
func TestNewRefusesBadArguments(t *testing.T) {
	var typedNil *s3.Client
	c := nopS3{}
	for _, tc := range []struct {
		name   string
		client blobfence.S3API
		bucket string
		opts   *blobfence.Options
		want   string
	}{
		{"nil client", nil, "b", nil, "S3 client is nil"},
		{"typed-nil client", typedNil, "b", nil, "S3 client is nil"},
		{"empty bucket", c, "", nil, "bucket name is empty"},
		{"NUL in the bucket", c, "b\x00c", nil, "control character"},
		{"bucket not UTF-8", c, "b\xffc", nil, "not valid UTF-8"},
		{"bucket with a slash", c, "b/c", nil, `'/' at byte 1`},
		{"bucket with a space", c, "b c", nil, `' ' at byte 1`},
		{"bucket of 5,000 bytes", c, strings.Repeat("b", 5000), nil, "longer than 1024"},
		{"bucket of 256 bytes", c, strings.Repeat("b", 256), nil, "longer than 255"},
		{"bad metadata key", c, "b", &blobfence.Options{MetadataKey: "Fence_Token"}, "MetadataKey"},
		{"metadata key with a leading dash", c, "b", &blobfence.Options{MetadataKey: "-t"}, "MetadataKey"},
		{"negative attempts", c, "b", &blobfence.Options{MaxAttempts: -1}, "MaxAttempts is -1"},
	} {
		s, err := blobfence.New(tc.client, tc.bucket, tc.opts)
		if s != nil || !errors.Is(err, fence.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New with %s: %v, %v; want a nil Store and fence.ErrInvalid saying %q", tc.name, s, err, tc.want)
		}
		if err != nil && (len(err.Error()) > 200 || strings.Count(err.Error(), "blobfence") != 1) {
			t.Errorf("New with %s: %q: want one short message naming blobfence once", tc.name, err)
		}
	}
	// What S3 servers have named buckets stays accepted.
	for _, b := range []string{"my-bucket", "logs.example.com", "Legacy_Bucket", strings.Repeat("b", 255)} {
		if _, err := blobfence.New(c, b, nil); err != nil {
			t.Errorf("New with bucket %q: %v", b, err)
		}
	}
}

// TestBadPutOptionsSendNothing: a bad PutOption is a fence.ErrInvalid
// naming the option, before any request.
func TestBadPutOptionsSendNothing(t *testing.T) {
	ctx := context.Background()
	c := &counting{S3API: nopS3{}}
	s := mustNew(t, c, "bucket", nil)
	big := map[string]string{"a": strings.Repeat("v", 2000)}
	for _, tc := range []struct {
		name string
		opt  blobfence.PutOption
		want string
	}{
		{"newline in Content-Type", blobfence.ContentType("text/plain\r\nX-Evil: 1"), "ContentType"},
		{"upper-case metadata name", blobfence.Metadata(map[string]string{"Owner": "x"}), `"Owner"`},
		{"non-ASCII metadata value", blobfence.Metadata(map[string]string{"owner": "zoë"}), `value of "owner"`},
		{"the token's own name", blobfence.Metadata(map[string]string{tokenMetadata: "99"}), "the token"},
		{"the write record's name", blobfence.Metadata(map[string]string{tokenMetadata + "-write": "x"}), "the token"},
		{"metadata over 2 KB", blobfence.Metadata(big), "S3 allows 2048"},
		{"unknown encryption", blobfence.ServerSideEncryption("rot13", ""), "rot13"},
		{"KMS key with AES256", blobfence.ServerSideEncryption(types.ServerSideEncryptionAes256, "key"), "KMS key ID"},
		{"nil option", nil, "nil"},
	} {
		err := s.Put(ctx, "k", []byte("x"), 1, tc.opt)
		if !errors.Is(err, fence.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Put with %s: %v; want fence.ErrInvalid saying %q", tc.name, err, tc.want)
		}
	}
	if n := c.total(); n != 0 {
		t.Fatalf("bad options sent %d requests, want 0", n)
	}
}

// nopS3 is an S3API whose every call fails; the bad-input test must not
// reach it.
type nopS3 struct{ blobfence.S3API }

// TestErrorsNameTheObjectOnce: every error of a call names the object
// once, as bucket/key. Before the fix a stale put said
// `blobfence: put "reports/x2.csv": fence: stale token 33 for "<bucket>/reports/x2.csv"`.
func TestErrorsNameTheObjectOnce(t *testing.T) {
	ctx := context.Background()
	s, _, env := newStore(t, nil)
	const key = "reports/x2.csv"
	if err := s.Put(ctx, key, []byte("B"), 34); err != nil {
		t.Fatal(err)
	}
	_, err := env.Client.PutObject(ctx, &s3.PutObjectInput{Bucket: &env.Bucket, Key: aws.String("reports/bad.csv"),
		Body: strings.NewReader("fencekit-blob 1 put x n\nx")})
	if err != nil {
		t.Fatal(err)
	}
	missing := mustNew(t, env.Client, env.Bucket+"-missing", nil)
	cases := map[string]struct {
		key string
		err error
	}{
		"stale put":        {key, s.Put(ctx, key, []byte("A"), 33)},
		"stale delete":     {key, s.Delete(ctx, key, 33)},
		"stale claim":      {key, s.Claim(ctx, key, 33)},
		"retire live":      {key, s.Retire(ctx, key)},
		"token 0":          {key, s.Put(ctx, key, []byte("B"), 0)},
		"get absent":       {"reports/none.csv", func() error { _, _, err := s.Get(ctx, "reports/none.csv"); return err }()},
		"head absent":      {"reports/none.csv", func() error { _, err := s.Head(ctx, "reports/none.csv"); return err }()},
		"bad metadata":     {"reports/bad.csv", s.Put(ctx, "reports/bad.csv", []byte("y"), 9)},
		"get bad":          {"reports/bad.csv", func() error { _, _, err := s.Get(ctx, "reports/bad.csv"); return err }()},
		"missing bucket":   {key, missing.Put(ctx, key, []byte("x"), 1)},
		"bad content type": {key, s.Put(ctx, key, []byte("x"), 40, blobfence.ContentType("a\nb"))},
	}
	for name, tc := range cases {
		if tc.err == nil {
			t.Errorf("%s: no error", name)
			continue
		}
		msg := tc.err.Error()
		leaf := tc.key[strings.LastIndex(tc.key, "/")+1:]
		if name == "bad content type" { // nothing about the object is wrong: it is not named
			if strings.Contains(msg, leaf) {
				t.Errorf("%s: %q names the object", name, msg)
			}
			continue
		}
		if strings.Count(msg, leaf) != 1 || !strings.Contains(msg, "/"+tc.key) || !strings.HasPrefix(msg, "blobfence: ") {
			t.Errorf("%s: %q; want a blobfence error naming %s/%s once", name, msg, env.Bucket, tc.key)
		}
		if strings.Count(msg, "blobfence:") != 1 || strings.Contains(msg, "fence: ") && !strings.HasPrefix(msg, "blobfence: ") {
			t.Errorf("%s: %q names a package twice", name, msg)
		}
	}
}
