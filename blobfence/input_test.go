package blobfence_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/fencekit/fencekit/blobfence"
	"github.com/fencekit/fencekit/fence"
)

// TestBadInputSendsNothing: every bad argument gives an error wrapping
// ErrInvalidArgument that names the problem, and no request is sent.
func TestBadInputSendsNothing(t *testing.T) {
	ctx := context.Background()
	c := &counting{S3API: nopS3{}}
	good := blobfence.New(c, "bucket", nil)
	longKey := strings.Repeat("k", blobfence.MaxKeyLen+1)
	type call func() error
	ops := func(s *blobfence.Store, key string, tok fence.Token) map[string]call {
		return map[string]call{
			"Put":       func() error { return s.Put(ctx, key, []byte("x"), tok) },
			"PutReader": func() error { _, err := s.PutReader(ctx, key, strings.NewReader("x"), tok); return err },
			"PutAfter": func() error {
				_, err := s.PutAfter(ctx, key, strings.NewReader("x"), tok, blobfence.Version{ETag: `"e"`, Token: 1})
				return err
			},
			"Delete": func() error { return s.Delete(ctx, key, tok) },
			"Get":    func() error { _, _, err := s.Get(ctx, key); return err },
			"Head":   func() error { _, err := s.Head(ctx, key); return err },
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
		{"nil client", blobfence.New(nil, "bucket", nil), "k", 1, "S3 client is nil", false},
		{"empty bucket", blobfence.New(c, "", nil), "k", 1, "bucket name is empty", false},
		{"bad metadata key", blobfence.New(c, "b", &blobfence.Options{MetadataKey: "Fence_Token"}), "k", 1, "MetadataKey", false},
		{"metadata key with a leading dash", blobfence.New(c, "b", &blobfence.Options{MetadataKey: "-t"}), "k", 1, "MetadataKey", false},
		{"negative attempts", blobfence.New(c, "b", &blobfence.Options{MaxAttempts: -1}), "k", 1, "MaxAttempts is -1", false},
		{"nil store", nil, "k", 1, "nil *Store", false},
		{"empty key", good, "", 1, "key is empty", false},
		{"key over 1024 bytes", good, longKey, 1, "1025 bytes", false},
		{"key not UTF-8", good, "a\xffb", 1, "not valid UTF-8", false},
		{"token 0", good, "k", 0, "token is zero", true},
		{"token above 2^63-1", good, "k", fence.MaxToken + 1, "above the maximum", true},
	}
	for _, tc := range cases {
		for name, op := range ops(tc.store, tc.key, tc.tok) {
			if tc.writes && (name == "Get" || name == "Head") {
				continue
			}
			err := op()
			if !errors.Is(err, blobfence.ErrInvalidArgument) || !strings.Contains(err.Error(), tc.want) ||
				!strings.HasPrefix(err.Error(), "blobfence: ") {
				t.Errorf("%s with %s: err = %v; want a blobfence ErrInvalidArgument saying %q", name, tc.name, err, tc.want)
			}
			if tc.writes && !errors.Is(err, fence.ErrInvalidToken) {
				t.Errorf("%s with %s: err = %v; want it to wrap fence.ErrInvalidToken", name, tc.name, err)
			}
		}
	}
	if _, err := good.PutReader(ctx, "k", nil, 1); !errors.Is(err, blobfence.ErrInvalidArgument) {
		t.Errorf("nil reader: %v", err)
	}
	if n := c.total(); n != 0 {
		t.Fatalf("bad input sent %d requests, want 0", n)
	}
	// The limits themselves are fine.
	if err := blobfence.ValidateKey(strings.Repeat("é", blobfence.MaxKeyLen/2)); err != nil {
		t.Errorf("a 1024-byte key: %v", err)
	}
}

// nopS3 is an S3API whose every call fails; the bad-input test must not
// reach it.
type nopS3 struct{ blobfence.S3API }
