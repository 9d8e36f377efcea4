package valid_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/valid"
)

func TestParseToken(t *testing.T) {
	good := []struct {
		in   string
		want fence.Token
	}{
		{"1", 1},
		{"34", 34},
		{"0034", 34},
		{"9223372036854775807", valid.MaxToken},
	}
	for _, tc := range good {
		got, err := valid.ParseToken(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseToken(%q) = %d, %v; want %d, nil", tc.in, got, err, tc.want)
		}
	}

	bad := []struct {
		in, mention string
	}{
		{"", "empty"},
		{"0", "zero"},
		{"000", "zero"},
		{"-1", "negative"},
		{"+1", "sign"},
		{" 1", "non-digit"},
		{"1 ", "non-digit"},
		{"12a", "non-digit at byte 2"},
		{"0x10", "non-digit"},
		{"1.5", "non-digit"},
		{"١٢", "non-digit"}, // Arabic-Indic digits are not decimal ASCII
		{"9223372036854775808", "above the maximum"},
		{"18446744073709551615", "above the maximum"},
		{"99999999999999999999999", "above the maximum"},
		{strings.Repeat("1", 65), "longer than any token"},
	}
	for _, tc := range bad {
		got, err := valid.ParseToken(tc.in)
		if err == nil {
			t.Errorf("ParseToken(%q) = %d, nil; want an error", tc.in, got)
			continue
		}
		if !errors.Is(err, fence.ErrInvalid) || strings.Contains(err.Error(), "fence:") {
			t.Errorf("ParseToken(%q) error %v: want ErrInvalid without a package prefix", tc.in, err)
		}
		if !strings.Contains(err.Error(), tc.mention) {
			t.Errorf("ParseToken(%q) error %q does not say %q", tc.in, err, tc.mention)
		}
		if got != 0 {
			t.Errorf("ParseToken(%q) returned token %d with its error", tc.in, got)
		}
	}
}

func TestTokenStringRoundTrip(t *testing.T) {
	for _, tok := range []fence.Token{1, 33, 34, 1 << 40, valid.MaxToken} {
		s := tok.String()
		if s != strconv.FormatUint(uint64(tok), 10) {
			t.Errorf("Token(%d).String() = %q", uint64(tok), s)
		}
		back, err := valid.ParseToken(s)
		if err != nil || back != tok {
			t.Errorf("ParseToken(%q) = %d, %v; want %d", s, back, err, tok)
		}
	}
}

func TestToken(t *testing.T) {
	for _, tok := range []fence.Token{1, 34, valid.MaxToken} {
		if err := valid.Token(tok); err != nil {
			t.Errorf("valid.Token(%d) = %v, want nil", uint64(tok), err)
		}
	}
	for _, tc := range []struct {
		tok     fence.Token
		mention string
	}{
		{0, "zero"},
		{valid.MaxToken + 1, "above the maximum"},
		{^fence.Token(0), "above the maximum"},
	} {
		err := valid.Token(tc.tok)
		if !errors.Is(err, fence.ErrInvalid) || !strings.Contains(err.Error(), tc.mention) {
			t.Errorf("valid.Token(%d) = %v; want ErrInvalid mentioning %q", uint64(tc.tok), err, tc.mention)
		}
	}
}

// FuzzParseToken checks that the parser never panics, accepts exactly the
// decimal ASCII strings from 1 to MaxToken, and round-trips what it accepts.
func FuzzParseToken(f *testing.F) {
	for _, s := range []string{"", "0", "1", "34", "-1", "+1", "0x1f", "9223372036854775807",
		"9223372036854775808", "18446744073709551616", " 7", "7\n", "٣", "+" + strings.Repeat("\x86", 60)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tok, err := valid.ParseToken(s)
		allDigits := s != "" && strings.Trim(s, "0123456789") == ""
		if err != nil {
			if !errors.Is(err, fence.ErrInvalid) || len(err.Error()) > 300 {
				t.Fatalf("ParseToken(%q): error %v: want a short ErrInvalid", s, err)
			}
			if tok != 0 {
				t.Fatalf("ParseToken(%q): token %d returned with an error", s, tok)
			}
			if allDigits && len(s) <= 19 {
				if u, perr := strconv.ParseUint(s, 10, 64); perr == nil && u >= 1 && u <= uint64(valid.MaxToken) {
					t.Fatalf("ParseToken(%q) refused a valid token: %v", s, err)
				}
			}
			return
		}
		if !allDigits {
			t.Fatalf("ParseToken(%q) = %d accepted a non-decimal string", s, tok)
		}
		if valid.Token(tok) != nil {
			t.Fatalf("ParseToken(%q) = %d, which valid.Token refuses", s, tok)
		}
		u, perr := strconv.ParseUint(s, 10, 64)
		if perr != nil || fence.Token(u) != tok {
			t.Fatalf("ParseToken(%q) = %d, strconv says %d (%v)", s, tok, u, perr)
		}
		back, err := valid.ParseToken(tok.String())
		if err != nil || back != tok {
			t.Fatalf("round trip of %d through %q gave %d, %v", tok, tok.String(), back, err)
		}
	})
}

// FuzzWrite: the check every adapter runs before a write accepts
// exactly a valid name with a token from 1 to MaxToken, and every refusal
// matches ErrInvalid with a short message and no package prefix.
func FuzzWrite(f *testing.F) {
	f.Add("r", uint64(1))
	f.Add("r", uint64(0))
	f.Add("", uint64(7))
	f.Add("a\x00", uint64(7))
	f.Add("r", uint64(valid.MaxToken)+1)
	f.Fuzz(func(t *testing.T, name string, u uint64) {
		tok := fence.Token(u)
		err := valid.Write("resource", name, tok)
		want := valid.Name("resource", name) == nil && u >= 1 && u <= uint64(valid.MaxToken)
		if (err == nil) != want {
			t.Fatalf("valid.Write(%q, %d) = %v, want ok %v", name, u, err, want)
		}
		if (valid.Token(tok) == nil) != (u >= 1 && u <= uint64(valid.MaxToken)) {
			t.Fatalf("valid.Token(%d) = %v", u, valid.Token(tok))
		}
		if err != nil && (!errors.Is(err, fence.ErrInvalid) || len(err.Error()) > 300 || strings.HasPrefix(err.Error(), "fence:")) {
			t.Fatalf("valid.Write(%q, %d): %d-byte error %v", name, u, len(err.Error()), err)
		}
	})
}
