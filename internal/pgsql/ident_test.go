package pgsql

import (
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/fencekit/fencekit/fence"
)

var identOracle = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}(\.[A-Za-z_][A-Za-z0-9_]{0,62})?$`)

// FuzzParseIdent checks the validator against a regular-expression oracle
// and that whatever it accepts quotes to exactly "part"."part".
func FuzzParseIdent(f *testing.F) {
	for _, s := range []string{"users", "public.users", "a.b.c", `x"y`, "x;y", "", ".", "1a", "_", "ä",
		strings.Repeat("a", 63), strings.Repeat("a", 64), "s." + strings.Repeat("b", 64), "a\x00b", "a b", strings.Repeat("\xd0", 60)} {
		f.Add(s, true)
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, s string, qualified bool) {
		got, err := ParseIdent("sqlfence", "table", s, qualified)
		want := identOracle.MatchString(s) && (qualified || !strings.Contains(s, "."))
		if (err == nil) != want {
			t.Fatalf("ParseIdent(%q, %v) err = %v, oracle says valid = %v", s, qualified, err, want)
		}
		if err != nil {
			if !strings.HasPrefix(err.Error(), "sqlfence: table name") || !errors.Is(err, fence.ErrInvalid) || len(err.Error()) > 300 {
				t.Fatalf("error does not say what is wrong, shortly: %v", err)
			}
			return
		}
		quoted := `"` + strings.ReplaceAll(s, ".", `"."`) + `"`
		if got != quoted {
			t.Fatalf("ParseIdent = %s, want %s", got, quoted)
		}
	})
}
