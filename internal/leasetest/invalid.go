package leasetest

import (
	"errors"
	"regexp"
	"testing"

	"github.com/fencekit/fencekit/lease"
)

// CheckInvalid fails tb for each entry of errs (what was called, and its
// error) that does not match lease.ErrInvalid or whose message does not
// name a package exactly once: issuer's name ("redislease") or lease's.
func CheckInvalid(tb testing.TB, issuer string, errs map[string]error) {
	tb.Helper()
	pkg := regexp.MustCompile(`\b(` + regexp.QuoteMeta(issuer) + `|lease)[:.]`)
	for what, err := range errs {
		if !errors.Is(err, lease.ErrInvalid) {
			tb.Errorf("%.60s: %v, want an error matching ErrInvalid", what, err)
		} else if n := len(pkg.FindAllString(err.Error(), -1)); n != 1 {
			tb.Errorf("%.60s: %q names a package %d times, want once", what, err, n)
		}
	}
}
