package lease

import (
	"time"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/valid"
)

// MaxAhead is how far above its server's clock an issuer's Bump may raise
// a name's tokens: the allowance for the clock of the machine that runs
// fencectl bump --time. A token counter ahead of the clock is not
// recovered if the server loses it: the next grant's token is the
// server's time, below the lost counter until the clock passes it.
const MaxAhead = time.Second

// CheckAhead returns nil when to is at most [MaxAhead] above now, the
// issuer's server time, and otherwise an error matching [ErrInvalid] that
// says how far ahead to is and what to do instead. It has no package
// prefix: the issuer adds its own.
func CheckAhead(to fence.Token, now time.Time) error {
	at := time.UnixMicro(int64(min(to, valid.MaxToken)))
	if ahead := at.Sub(now); ahead > MaxAhead {
		return valid.Invalid("token %v is %v ahead of the server's clock (%s), more than %v: "+
			"a token counter ahead of the clock is not recovered if the server loses it; "+
			"bump to the current time (fencectl bump --time), or wait until the server's clock passes %s",
			to, ahead.Round(time.Second), now.UTC().Format(time.RFC3339), MaxAhead, at.UTC().Format(time.RFC3339))
	}
	return nil
}
