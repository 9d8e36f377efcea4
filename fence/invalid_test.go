package fence_test

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/fencekit/fencekit/fence"
)

func TestValidateName(t *testing.T) {
	for _, ok := range []string{"a", "invoices/2026-12", "tablé", "名前", strings.Repeat("x", fence.MaxNameLen), "a\uFFFDb"} {
		if err := fence.ValidateName("resource", ok); err != nil {
			t.Errorf("ValidateName(%q) = %v, want nil", ok, err)
		}
	}
	for _, tc := range []struct{ name, mention string }{
		{"", "resource is empty"},
		{"a\x00b", "control character (U+0000) at byte 1"},
		{"tab\there", "control character (U+0009) at byte 3"},
		{"bad\xffbyte", `not valid UTF-8 (byte 3)`},
		{strings.Repeat("x", fence.MaxNameLen+1), "513 bytes, longer than 512"},
	} {
		err := fence.ValidateName("resource", tc.name)
		if err == nil || !errors.Is(err, fence.ErrInvalid) || !strings.Contains(err.Error(), tc.mention) {
			t.Errorf("ValidateName(%.20q) = %v; want ErrInvalid saying %q", tc.name, err, tc.mention)
		}
	}
	// A 16 KB name gives a short error that quotes its start once.
	long := strings.Repeat("é", 8192)
	err := fence.ValidateName("key", long)
	if err == nil || len(err.Error()) > 200 || !strings.Contains(err.Error(), `"éééé`) || !strings.Contains(err.Error(), `"...`) {
		t.Errorf("a 16 KB name: %d-byte error %.120q", len(err.Error()), err)
	}
}

func TestInvalidMatchesErrInvalid(t *testing.T) {
	err := fence.Invalid("sqlfence: resource %q is empty", "")
	if !errors.Is(err, fence.ErrInvalid) || err.Error() != `sqlfence: resource "" is empty` {
		t.Errorf("Invalid: %v", err)
	}
	if errors.Is(errors.New("other"), fence.ErrInvalid) {
		t.Error("an unrelated error matches ErrInvalid")
	}
}

// FuzzValidateName: the validator never panics, accepts exactly the
// non-empty valid UTF-8 names without control characters up to
// MaxNameLen, and every refusal matches ErrInvalid with a bounded message.
func FuzzValidateName(f *testing.F) {
	for _, s := range []string{"", "a", "a\x00", "\xff", "tablé", "\u0085", strings.Repeat("z", 1025)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		err := fence.ValidateName("name", s)
		want := s != "" && len(s) <= fence.MaxNameLen && utf8.ValidString(s) && !strings.ContainsFunc(s, isControl)
		if (err == nil) != want {
			t.Fatalf("ValidateName(%q) = %v, want ok %v", s, err, want)
		}
		if err != nil && (!errors.Is(err, fence.ErrInvalid) || len(err.Error()) > 300) {
			t.Fatalf("ValidateName(%q): %d-byte error %v", s, len(err.Error()), err)
		}
	})
}

func isControl(r rune) bool { return r < 0x20 || r >= 0x7f && r < 0xa0 }
