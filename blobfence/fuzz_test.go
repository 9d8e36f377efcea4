package blobfence

import (
	"encoding/hex"
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
		if err != nil && (!errors.Is(err, ErrInvalidArgument) || !strings.HasPrefix(err.Error(), "blobfence: ")) {
			t.Fatalf("ValidateKey(%q) = %v; want a blobfence ErrInvalidArgument", key, err)
		}
	})
}

// metadataKeyRE is what S3 round-trips as a user-metadata name and the
// store accepts.
var metadataKeyRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,127}$`)

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
		if err != nil && (!errors.Is(err, ErrInvalidArgument) || !strings.HasPrefix(err.Error(), "blobfence: ") || !strings.Contains(err.Error(), "MetadataKey")) {
			t.Fatalf("New with MetadataKey %q: %v; want a blobfence ErrInvalidArgument naming Options.MetadataKey", name, err)
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
		if err != nil && (!errors.Is(err, ErrBadMetadata) || !errors.Is(err, fence.ErrInvalidToken)) {
			t.Fatalf("parseToken(%q) = %v; want ErrBadMetadata and fence.ErrInvalidToken", v, err)
		}
		if err == nil && tok > fence.MaxToken {
			t.Fatalf("parseToken(%q) = %d, above MaxToken", v, tok)
		}
	})
}

// FuzzWriteRecord: what parses prints back the same, and what a put writes
// parses back to the same record.
func FuzzWriteRecord(f *testing.F) {
	f.Add("34 0cc175b9c0f1b6a831c399e269772661 put ABC.0 - 0123456789abcdef", uint64(34), "0cc175b9c0f1b6a831c399e269772661", "id.1")
	f.Add("34 0cc175b9c0f1b6a831c399e269772661 mpu ABC.0 7 0123456789abcdef opaque", uint64(0), "", "")
	f.Add("34  0cc175b9c0f1b6a831c399e269772661 put x - f", uint64(0), "", "")
	f.Add("1 0CC175B9C0F1B6A831C399E269772661 zip x 0 f", uint64(1<<63), "zz", "a b")
	f.Fuzz(func(t *testing.T, raw string, tok uint64, md5hex, id string) {
		if rec, ok := parseWriteRecord(raw); ok {
			if rec.String() != raw {
				t.Fatalf("parseWriteRecord(%q) = %+v, prints as %q", raw, rec, rec.String())
			}
			if rec.tok > fence.MaxToken || len(rec.md5) != 32 || rec.id == "" {
				t.Fatalf("parseWriteRecord(%q) accepted %+v", raw, rec)
			}
		}
		rec := writeRecord{tok: fence.Token(tok), md5: md5hex, id: id, fields: "0123456789abcdef", opaque: tok%3 == 0}
		if tok%5 == 0 {
			rec.form = formMultipart
		}
		if tok%2 == 0 {
			rec.alt, rec.hasAlt = fence.Token(tok/2), true
		}
		got, ok := parseWriteRecord(rec.String())
		valid := fence.Token(tok) <= fence.MaxToken && isHex32(md5hex) && strings.ToLower(md5hex) == md5hex &&
			id != "" && !strings.ContainsFunc(id, isSpace)
		if valid && (!ok || got != rec) {
			t.Fatalf("record %+v printed as %q parses as %+v, %v", rec, rec.String(), got, ok)
		}
	})
}

func isHex32(s string) bool {
	_, err := hex.DecodeString(s)
	return len(s) == 32 && err == nil
}

func isSpace(r rune) bool { return strings.TrimSpace(string(r)) == "" }

// nopClient satisfies S3API; the fuzz targets never call it.
type nopClient struct{ S3API }
