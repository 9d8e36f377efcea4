package blobfence

import (
	"bytes"
	"crypto/md5"
	"errors"
	"regexp"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/valid"
)

// FuzzCheckKey: a key is accepted exactly when it is 1 to 1,024 bytes of
// valid UTF-8 without control characters, and a refusal is a blobfence
// error matching fence.ErrInvalid.
func FuzzCheckKey(f *testing.F) {
	for _, k := range []string{"", "k", "a/b/c", strings.Repeat("x", 1024), strings.Repeat("é", 512), strings.Repeat("x", 1025), "\xff", "é", "a\x00b", "tab\there", "del\x7f", "c1\u0085"} {
		f.Add(k)
	}
	s, err := New(nopClient{}, "b", nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, key string) {
		err := s.check("Put", key)
		valid := key != "" && len(key) <= 1024 && utf8.ValidString(key) && !strings.ContainsFunc(key, unicode.IsControl)
		if (err == nil) != valid {
			t.Fatalf("check(%q) = %v; valid = %v", key, err, valid)
		}
		if err != nil && (!errors.Is(err, fence.ErrInvalid) || !strings.HasPrefix(err.Error(), "blobfence: ")) {
			t.Fatalf("check(%q) = %v; want a blobfence error matching fence.ErrInvalid", key, err)
		}
	})
}

// metadataKeyRE is what S3 round-trips as a user-metadata name and the
// store accepts.
var metadataKeyRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,127}$`)

// FuzzValidateBucket: a bucket name is accepted exactly when it is 1 to
// maxBucketLen bytes of [A-Za-z0-9._-]; a refusal matches fence.ErrInvalid
// and stays short whatever the name.
func FuzzValidateBucket(f *testing.F) {
	for _, b := range []string{"", "b", "my-bucket", "Legacy_Bucket", "a/b", "a b", "\xff", "é", "a\x00b", strings.Repeat("b", maxBucketLen), strings.Repeat("b", maxBucketLen+1)} {
		f.Add(b)
	}
	valid := regexp.MustCompile(`^[A-Za-z0-9._-]+$`)
	f.Fuzz(func(t *testing.T, bucket string) {
		err := validateBucket(bucket)
		want := len(bucket) <= maxBucketLen && valid.MatchString(bucket)
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
	for _, k := range []string{"", defaultMetadataKey, "A", "-a", "a-", "a_b", "x-amz-meta-t", strings.Repeat("a", 129)} {
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

// FuzzMetadataIsAHint: whatever the metadata says (the token, the write
// record), the token of an envelope read is its header's, and an
// MD5-shaped ETag is proven only by the record of the same write or the
// MD5 of the whole bytes.
func FuzzMetadataIsAHint(f *testing.F) {
	f.Add(uint64(34), "NONCE", []byte("body"), "7", "2 put NONCE 00000000000000000000000000000000", true)
	f.Add(uint64(9), "n", []byte{}, "x", "", false)
	s, err := New(nopClient{}, "b", nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, tok uint64, nonce string, body []byte, mdToken, record string, whole bool) {
		e := envelope{Token: fence.Token(tok), Nonce: nonce}
		if valid.Token(e.Token) != nil || nonce == "" || strings.ContainsFunc(nonce, isSpace) || len(e.header()) > maxHeaderLen {
			return
		}
		stored := append(e.header(), body...)
		sum := md5.Sum(stored)
		etag := `"ffffffffffffffffffffffffffffffff"`
		if r, _ := parseRecord(record); r.envelope && r.nonce == nonce && r.etag == etag {
			return // the record of this write says its bytes have that MD5
		}
		md := map[string]string{defaultMetadataKey: mdToken, defaultMetadataKey + "-write": record}
		g, err := s.decode("k", etag, md, false, stored, whole)
		if err != nil || g.token != e.Token || g.nonce != nonce {
			t.Fatalf("decode of %q with metadata %v: %+v, %v; want token %d from the header", stored, md, g, err, e.Token)
		}
		if g.proven {
			t.Fatalf("decode of %q with metadata %v proved the ETag %s, which is neither the record's of this write nor the MD5 %x", stored, md, etag, sum)
		}
		if g, _ := s.decode("k", plainETag(sum), md, false, stored, true); !g.proven {
			t.Fatalf("decode of the whole %q with its MD5 as ETag is not proven", stored)
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
		if e, b, err := decode(stored); err == nil {
			if got := append(e.header(), b...); !bytes.Equal(got, stored) {
				t.Fatalf("decode(%q) = %+v, %q; encodes as %q", stored, e, b, got)
			}
		} else if !errors.Is(err, ErrBadMetadata) {
			t.Fatalf("decode(%q): %v; want ErrBadMetadata", stored, err)
		}
		e := envelope{Deleted: tok%2 == 0, Token: fence.Token(tok), Nonce: nonce}
		valid := valid.Token(e.Token) == nil && nonce != "" && !strings.ContainsFunc(nonce, isSpace) && len(e.header()) <= maxHeaderLen
		got, b, err := decode(append(e.header(), body...))
		if valid && (err != nil || got != e || !bytes.Equal(b, body)) {
			t.Fatalf("envelope %+v with body %q decodes as %+v, %q, %v", e, body, got, b, err)
		}
	})
}

func isSpace(r rune) bool { return strings.TrimSpace(string(r)) == "" }

// nopClient satisfies S3API; the fuzz targets never call it.
type nopClient struct{ S3API }
