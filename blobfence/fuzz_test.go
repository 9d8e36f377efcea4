package blobfence

import (
	"bytes"
	"errors"
	"regexp"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/fencekit/fencekit/fence"
)

func FuzzValidateKey(f *testing.F) {
	for _, k := range []string{"", "k", "a/b/c", strings.Repeat("x", MaxKeyLen), strings.Repeat("x", MaxKeyLen+1), "\xff", "é", "a\x00b", "tab\there", "del\x7f", "c1\u0085"} {
		f.Add(k)
	}
	f.Fuzz(func(t *testing.T, key string) {
		err := ValidateKey(key)
		valid := key != "" && len(key) <= MaxKeyLen && utf8.ValidString(key) && !strings.ContainsFunc(key, unicode.IsControl)
		if (err == nil) != valid {
			t.Fatalf("ValidateKey(%q) = %v; valid = %v", key, err, valid)
		}
		if err != nil && (!errors.Is(err, fence.ErrInvalid) || !strings.HasPrefix(err.Error(), "blobfence: ")) {
			t.Fatalf("ValidateKey(%q) = %v; want a blobfence error matching fence.ErrInvalid", key, err)
		}
	})
}

// metadataKeyRE is what S3 round-trips as a user-metadata name and the
// store accepts.
var metadataKeyRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,127}$`)

// FuzzValidateBucket: a bucket name is accepted exactly when it is 1 to
// MaxBucketLen bytes of [A-Za-z0-9._-]; a refusal matches fence.ErrInvalid
// and stays short whatever the name.
func FuzzValidateBucket(f *testing.F) {
	for _, b := range []string{"", "b", "my-bucket", "Legacy_Bucket", "a/b", "a b", "\xff", "é", "a\x00b", strings.Repeat("b", MaxBucketLen), strings.Repeat("b", MaxBucketLen+1)} {
		f.Add(b)
	}
	valid := regexp.MustCompile(`^[A-Za-z0-9._-]+$`)
	f.Fuzz(func(t *testing.T, bucket string) {
		err := validateBucket(bucket)
		want := len(bucket) <= MaxBucketLen && valid.MatchString(bucket)
		switch {
		case want && err != nil:
			t.Fatalf("validateBucket(%q) = %v, want nil", bucket, err)
		case !want && !errors.Is(err, fence.ErrInvalid):
			t.Fatalf("validateBucket(%q) = %v, want fence.ErrInvalid", bucket, err)
		case err != nil && len(err.Error()) > 256:
			t.Fatalf("validateBucket(%q): %d-byte error", bucket, len(err.Error()))
		}
	})
}

func FuzzMetadataKey(f *testing.F) {
	for _, k := range []string{"", DefaultMetadataKey, "A", "-a", "a-", "a_b", "x-amz-meta-t", strings.Repeat("a", 129)} {
		f.Add(k)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if name == "" {
			return // the default
		}
		_, err := New(nopClient{}, "b", &Options{MetadataKey: name})
		if valid := metadataKeyRE.MatchString(name); (err == nil) != valid {
			t.Fatalf("New with MetadataKey %q: %v; want it accepted exactly when it is lower-case letters, digits and '-' (not first), 1-128 bytes (%v)", name, err, valid)
		}
		if err != nil && (!errors.Is(err, fence.ErrInvalid) || !strings.HasPrefix(err.Error(), "blobfence: ") || !strings.Contains(err.Error(), "MetadataKey")) {
			t.Fatalf("New with MetadataKey %q: %v; want a blobfence error matching fence.ErrInvalid naming Options.MetadataKey", name, err)
		}
	})
}

// FuzzTokenMetadata: the token metadata value parses exactly when
// fence.ParseToken accepts it, and a malformed value is ErrBadMetadata.
func FuzzTokenMetadata(f *testing.F) {
	for _, v := range []string{"1", "0", "34", "007", "-1", "+1", " 1", "9223372036854775807", "9223372036854775808", "1e3", ""} {
		f.Add(v)
	}
	s, err := New(nopClient{}, "b", nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, v string) {
		tok, err := s.parseToken(map[string]string{"Fencekit-Token": v})
		want, werr := fence.ParseToken(v)
		if (err == nil) != (werr == nil) || tok != want {
			t.Fatalf("parseToken(%q) = %d, %v; fence.ParseToken = %d, %v", v, tok, err, want, werr)
		}
		if err != nil && (!errors.Is(err, ErrBadMetadata) || errors.Is(err, fence.ErrInvalid)) {
			t.Fatalf("parseToken(%q) = %v; want ErrBadMetadata, not fence.ErrInvalid (stored data, not bad input)", v, err)
		}
		if err == nil && tok > fence.MaxToken {
			t.Fatalf("parseToken(%q) = %d, above MaxToken", v, tok)
		}
	})
}

// FuzzDecode: what decodes encodes back to the same bytes, and what a
// write stores decodes to the same envelope and body.
func FuzzDecode(f *testing.F) {
	f.Add([]byte("fencekit-blob 1 put 34 ABCDEFGHIJKLMNOPQRSTUVWXYZ\nbody"), uint64(34), "nonce", []byte("body"))
	f.Add([]byte("fencekit-blob 1 del 7 x\n"), uint64(0), "", []byte{})
	f.Add([]byte("fencekit-blob 1 put  34 x\n"), uint64(1<<63), "a b", []byte("\n"))
	f.Add([]byte("no header"), uint64(1), "n", []byte(nil))
	f.Fuzz(func(t *testing.T, stored []byte, tok uint64, nonce string, body []byte) {
		if e, b, err := Decode(stored); err == nil {
			if got := append(e.header(), b...); !bytes.Equal(got, stored) {
				t.Fatalf("Decode(%q) = %+v, %q; encodes as %q", stored, e, b, got)
			}
		} else if !errors.Is(err, ErrBadMetadata) {
			t.Fatalf("Decode(%q): %v; want ErrBadMetadata", stored, err)
		}
		e := Envelope{Deleted: tok%2 == 0, Token: fence.Token(tok), Nonce: nonce}
		valid := e.Token.Validate() == nil && nonce != "" && !strings.ContainsFunc(nonce, isSpace) && len(e.header()) <= maxHeaderLen
		got, b, err := Decode(append(e.header(), body...))
		if valid && (err != nil || got != e || !bytes.Equal(b, body)) {
			t.Fatalf("envelope %+v with body %q decodes as %+v, %q, %v", e, body, got, b, err)
		}
	})
}

func isSpace(r rune) bool { return strings.TrimSpace(string(r)) == "" }

// nopClient satisfies S3API; the fuzz targets never call it.
type nopClient struct{ S3API }
