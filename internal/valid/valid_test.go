package valid_test

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/valid"
)

func TestName(t *testing.T) {
	for _, ok := range []string{"a", "invoices/2026-12", "tablé", "名前", strings.Repeat("x", valid.MaxNameLen), "a\uFFFDb"} {
		if err := valid.Name("resource", ok); err != nil {
			t.Errorf("Name(%q) = %v, want nil", ok, err)
		}
	}
	for _, tc := range []struct{ name, mention string }{
		{"", "resource is empty"},
		{"a\x00b", "control character (U+0000) at byte 1"},
		{"tab\there", "control character (U+0009) at byte 3"},
		{"bad\xffbyte", `not valid UTF-8 (byte 3)`},
		{strings.Repeat("x", valid.MaxNameLen+1), "1025 bytes, longer than 1024"},
	} {
		err := valid.Name("resource", tc.name)
		if err == nil || !errors.Is(err, fence.ErrInvalid) || !strings.Contains(err.Error(), tc.mention) {
			t.Errorf("Name(%.20q) = %v; want ErrInvalid saying %q", tc.name, err, tc.mention)
		}
	}
	// A 16 KB name gives a short error that quotes its start once.
	long := strings.Repeat("é", 8192)
	err := valid.Name("key", long)
	if err == nil || len(err.Error()) > 200 || !strings.Contains(err.Error(), `"éééé`) || !strings.Contains(err.Error(), `"...`) {
		t.Errorf("a 16 KB name: %d-byte error %.120q", len(err.Error()), err)
	}
}

func TestInvalidMatchesErrInvalid(t *testing.T) {
	err := valid.Invalid("sqlfence: resource %q is empty", "")
	if !errors.Is(err, fence.ErrInvalid) || err.Error() != `sqlfence: resource "" is empty` {
		t.Errorf("Invalid: %v", err)
	}
	if errors.Is(errors.New("other"), fence.ErrInvalid) {
		t.Error("an unrelated error matches ErrInvalid")
	}
}

// FuzzName: the validator never panics, accepts exactly the
// non-empty valid UTF-8 names without control characters up to
// MaxNameLen, and every refusal matches ErrInvalid with a bounded message.
func FuzzName(f *testing.F) {
	for _, s := range []string{"", "a", "a\x00", "\xff", "tablé", "\u0085", strings.Repeat("z", 1025)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		err := valid.Name("name", s)
		want := s != "" && len(s) <= valid.MaxNameLen && utf8.ValidString(s) && !strings.ContainsFunc(s, isControl)
		if (err == nil) != want {
			t.Fatalf("Name(%q) = %v, want ok %v", s, err, want)
		}
		if err != nil && (!errors.Is(err, fence.ErrInvalid) || len(err.Error()) > 300) {
			t.Fatalf("Name(%q): %d-byte error %v", s, len(err.Error()), err)
		}
	})
}

func isControl(r rune) bool { return r < 0x20 || r >= 0x7f && r < 0xa0 }
