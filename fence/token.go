package fence

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Token is a fencing token: a number issued with every grant of a lease,
// strictly greater than the token of every earlier grant of the same lease.
// Storage compares tokens to order writers; the zero Token means "no token"
// (an object or row written without fencing) and is never issued.
type Token uint64

// MaxToken is the largest valid token, 2^63-1, so that every token fits in a
// signed 64-bit integer (a PostgreSQL bigint, a Lua number's integer range,
// an S3 metadata value parsed by any client).
const MaxToken Token = math.MaxInt64

// String returns the token in decimal.
func (t Token) String() string { return strconv.FormatUint(uint64(t), 10) }

// Validate reports whether t can be presented with a write: 1 to
// [MaxToken]. The error matches [ErrInvalid] and, like [ValidateName]'s,
// has no package prefix: wrap it with yours.
func (t Token) Validate() error {
	switch {
	case t == 0:
		return Invalid("token is zero (zero means no token; leases issue tokens from 1)")
	case t > MaxToken:
		return Invalid("token %d is above the maximum %d (2^63-1)", uint64(t), uint64(MaxToken))
	}
	return nil
}

// ValidateWrite checks what a fenced write presents: name with
// [ValidateName] (what names it: "resource", "key") and tok with
// [Token.Validate]. Every adapter calls it before sending anything. The
// error matches [ErrInvalid] and has no package prefix.
func ValidateWrite(what, name string, tok Token) error {
	if err := ValidateName(what, name); err != nil {
		return err
	}
	if err := tok.Validate(); err != nil {
		return fmt.Errorf("%s %s: %w", what, quote(name), err)
	}
	return nil
}

// maxTokenDigits bounds the input length so that a huge string is refused
// without scanning it all; MaxToken has 19 digits.
const maxTokenDigits = 64

// ParseToken parses a token from decimal text such as "34", the form
// [Token.String] writes and object metadata stores. It accepts exactly the
// tokens [Token.Validate] accepts: "0" is refused, and so are surrounding
// spaces. Errors match [ErrInvalid], have no package prefix and say what
// is wrong: empty input, a sign, a non-digit, zero, or a value above
// [MaxToken].
func ParseToken(s string) (Token, error) {
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
	if err != nil || Token(u) > MaxToken {
		return 0, Invalid("token %s is above the maximum %d (2^63-1)", quote(s), uint64(MaxToken))
	}
	if u == 0 {
		return 0, Invalid("token %s is zero (zero means no token; leases issue tokens from 1)", quote(s))
	}
	return Token(u), nil
}
