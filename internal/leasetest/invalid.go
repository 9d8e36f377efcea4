package leasetest

import (
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/fencekit/fencekit/lease"
)

// CheckInvalid fails tb for each entry of errs (what was called, starting
// with the issuer's function name, and its error) that does not match
// lease.ErrInvalid, whose message does not start with "<issuer>: <function>"
// ("redislease: New"; New and NewAdvisory may also report a bad option as lease.NewClient
// does, "lease: Options.…") or that names a package more than once.
func CheckInvalid(tb testing.TB, issuer string, errs map[string]error) {
	tb.Helper()
	pkg := regexp.MustCompile(`\b(` + regexp.QuoteMeta(issuer) + `|lease)[:.]`)
	for what, err := range errs {
		fn, _, _ := strings.Cut(what, " ")
		switch {
		case !errors.Is(err, lease.ErrInvalid):
			tb.Errorf("%.60s: %v, want an error matching ErrInvalid", what, err)
		case !strings.HasPrefix(err.Error(), issuer+": "+fn) && !(strings.HasPrefix(fn, "New") && strings.HasPrefix(err.Error(), "lease: Options.")):
			tb.Errorf("%.60s: %q, want it to start with %q", what, err, issuer+": "+fn)
		case len(pkg.FindAllString(err.Error(), -1)) != 1:
			tb.Errorf("%.60s: %q names a package more than once", what, err)
		}
	}
}
