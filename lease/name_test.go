package lease

import (
	"errors"
	"strings"
	"testing"
)

func TestValidateName(t *testing.T) {
	for _, ok := range []string{"a", "job:invoices", "ñandú-日本", "a/b.c_d@e", strings.Repeat("x", 512), strings.Repeat("é", 256)} {
		if err := ValidateName(ok); err != nil {
			t.Errorf("ValidateName(%.20q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", strings.Repeat("x", 513), strings.Repeat("é", 257), "{a}", "a}", "a b", "a\tb", "a\nb", "\x7f", "a\u00a0b", "a\u2028b", "\xc3", "a\x00"} {
		if err := ValidateName(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("ValidateName(%.20q) = %v, want ErrInvalid", bad, err)
		}
	}
}
