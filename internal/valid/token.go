package valid

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/fencekit/fencekit/fence"
)

// MaxToken is the largest valid token, 2^63-1, so that every token fits in a
// signed 64-bit integer (a PostgreSQL bigint, a Lua number's integer range,
// an S3 metadata value parsed by any client).
const MaxToken fence.Token = math.MaxInt64

// Token reports whether t can be presented with a write: 1 to
// [MaxToken]. The error matches [fence.ErrInvalid] and, like [Name]'s,
// has no package prefix: wrap it with yours.
func Token(t fence.Token) error {
	switch {
	case t == 0:
		return Invalid("token is zero (zero means no token; leases issue tokens from 1)")
	case t > MaxToken:
		return Invalid("token %d is above the maximum %d (2^63-1)", uint64(t), uint64(MaxToken))
	}
	return nil
}

// Write checks what a fenced write presents: name with
// [Name] (what names it: "resource", "key") and tok with
// [Token]. Every adapter calls it before sending anything. The
// error matches [fence.ErrInvalid] and has no package prefix.
func Write(what, name string, tok fence.Token) error {
	if err := Name(what, name); err != nil {
		return err
	}
	if err := Token(tok); err != nil {
		return fmt.Errorf("%s %s: %w", what, quote(name), err)
	}
	return nil
}

// maxTokenDigits bounds the input length so that a huge string is refused
// without scanning it all; MaxToken has 19 digits.
const maxTokenDigits = 64

// ParseToken parses a token from decimal text such as "34", the form
// fence.Token's String writes and object metadata stores. It accepts exactly the
// tokens [Token] accepts: "0" is refused, and so are surrounding
// spaces. Errors match [fence.ErrInvalid], have no package prefix and say what
// is wrong: empty input, a sign, a non-digit, zero, or a value above
// [MaxToken].
func ParseToken(s string) (fence.Token, error) {
	if s == "" {
		return 0, Invalid("token is empty")
	}
	if len(s) > maxTokenDigits {
		return 0, Invalid("token is %d characters, longer than any token", len(s))
	}
	switch s[0] {
	case '-':
		return 0, Invalid("token %s is negative", quote(s))
	case '+':
		return 0, Invalid("token %s has a sign; write digits only", quote(s))
	}
	if i := strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
		return 0, Invalid("token %s has a non-digit at byte %d", quote(s), i)
	}
	u, err := strconv.ParseUint(s, 10, 64)
	if err != nil || fence.Token(u) > MaxToken {
		return 0, Invalid("token %s is above the maximum %d (2^63-1)", quote(s), uint64(MaxToken))
	}
	if u == 0 {
		return 0, Invalid("token %s is zero (zero means no token; leases issue tokens from 1)", quote(s))
	}
	return fence.Token(u), nil
}
