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

// TestLimitInMessage: a too-long name, Identity or KeyPrefix is refused
// with the limit that applies to it, whatever its length.
func TestLimitInMessage(t *testing.T) {
	check := func(what string, err error, limit string) {
		t.Helper()
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "maximum is "+limit) || strings.Contains(err.Error(), "1024") {
			t.Errorf("%s: %v, want ErrInvalid naming the maximum %s", what, err, limit)
		}
	}
	for _, n := range []int{600, 5000} {
		long := strings.Repeat("x", n)
		check("name", ValidateName(long), "512")
		_, err := NewClient(newFakeBackend(), &Options{Identity: long})
		check("Options.Identity", err, "128")
		_, err = NewClient(newFakeBackend(), &Options{KeyPrefix: long})
		check("Options.KeyPrefix", err, "64")
		_, err = KeyPrefix(long)
		check("KeyPrefix", err, "64")
	}
}

func TestKeyPrefix(t *testing.T) {
	if p, err := KeyPrefix(""); p != DefaultKeyPrefix || err != nil {
		t.Errorf(`KeyPrefix("") = %q, %v, want the default`, p, err)
	}
	if p, err := KeyPrefix("app:x"); p != "app:x" || err != nil {
		t.Errorf(`KeyPrefix("app:x") = %q, %v`, p, err)
	}
	for _, bad := range []string{"a b", "x{", "}", "a\x00", "\xc3"} {
		// No package prefix: the caller adds its own (see TestOperatorFunctionsRefuseBadInput).
		if _, err := KeyPrefix(bad); !errors.Is(err, ErrInvalid) || !strings.HasPrefix(err.Error(), "key prefix ") {
			t.Errorf("KeyPrefix(%q) = %v, want an ErrInvalid starting with key prefix", bad, err)
		}
	}
}

// TestOperatorArgs: the prefix is checked first, then each name; the error
// has no package prefix, for the issuer to add its own.
func TestOperatorArgs(t *testing.T) {
	if p, err := OperatorArgs("", "a", "b"); p != DefaultKeyPrefix || err != nil {
		t.Errorf(`OperatorArgs("", "a", "b") = %q, %v; want the default prefix`, p, err)
	}
	for _, c := range []struct{ prefix, name, want string }{
		{"a b", "", "key prefix "},
		{"", "", "name is empty"},
		{"app", "x{", `name "x{" has '{'`},
	} {
		_, err := OperatorArgs(c.prefix, "ok", c.name)
		if !errors.Is(err, ErrInvalid) || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("OperatorArgs(%q, \"ok\", %q) = %v, want an ErrInvalid starting %q", c.prefix, c.name, err, c.want)
		}
	}
}
