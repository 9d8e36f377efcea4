package leasearg

import (
	"errors"
	"github.com/fencekit/fencekit/internal/valid"
	"strings"
	"testing"
	"time"

	"github.com/fencekit/fencekit/fence"
)

func TestName(t *testing.T) {
	for _, ok := range []string{"a", "job:invoices", "ñandú-日本", "a/b.c_d@e", strings.Repeat("x", valid.MaxNameLen), strings.Repeat("é", valid.MaxNameLen/2)} {
		if err := Name(ok); err != nil {
			t.Errorf("Name(%.20q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", strings.Repeat("x", valid.MaxNameLen+1), strings.Repeat("é", valid.MaxNameLen/2+1), "{a}", "a}", "a b", "a\tb", "a\nb", "\x7f", "a\u00a0b", "a\u2028b", "\xc3", "a\x00"} {
		if err := Name(bad); !errors.Is(err, fence.ErrInvalid) {
			t.Errorf("Name(%.20q) = %v, want ErrInvalid", bad, err)
		}
	}
	if err := Name("a{b}"); err == nil || err.Error() != `name "a{b}" has '{' at byte 1 (braces would change the Redis Cluster hash tag)` {
		t.Errorf(`Name("a{b}") = %v`, err)
	}
}

// TestLimitInMessage: a too-long name or key prefix is refused with the
// limit that applies to it, whatever its length.
func TestLimitInMessage(t *testing.T) {
	for _, n := range []int{1100, 5000} {
		long := strings.Repeat("x", n)
		if err := Name(long); !errors.Is(err, fence.ErrInvalid) || !strings.Contains(err.Error(), "longer than 1024") {
			t.Errorf("Name of %d bytes: %v, want ErrInvalid naming the maximum 1024", n, err)
		}
		if _, err := KeyPrefix(long); !errors.Is(err, fence.ErrInvalid) || !strings.Contains(err.Error(), "maximum is 64") {
			t.Errorf("KeyPrefix of %d bytes: %v, want ErrInvalid naming the maximum 64", n, err)
		}
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
		// No package prefix: the caller adds its own.
		if _, err := KeyPrefix(bad); !errors.Is(err, fence.ErrInvalid) || !strings.HasPrefix(err.Error(), "key prefix ") {
			t.Errorf("KeyPrefix(%q) = %v, want an ErrInvalid starting with key prefix", bad, err)
		}
	}
}

func TestCheckAhead(t *testing.T) {
	now := time.Now()
	if err := CheckAhead(fence.Token(now.Add(MaxAhead/2).UnixMicro()), now); err != nil {
		t.Errorf("half MaxAhead ahead: %v", err)
	}
	if err := CheckAhead(fence.Token(now.Add(time.Hour).UnixMicro()), now); !errors.Is(err, fence.ErrInvalid) || !strings.Contains(err.Error(), "ahead of the server's clock") {
		t.Errorf("an hour ahead: %v, want ErrInvalid saying so", err)
	}
}
