package fence

import (
	"errors"
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

// ErrInvalidToken is returned (wrapped) for a token that cannot be presented
// with a write: zero, above [MaxToken], or text that does not parse.
var ErrInvalidToken = errors.New("fence: invalid token")

// String returns the token in decimal.
func (t Token) String() string { return strconv.FormatUint(uint64(t), 10) }

// Validate reports whether t can be presented with a write: it returns an
// error wrapping [ErrInvalidToken] when t is zero or above [MaxToken].
func (t Token) Validate() error {
	switch {
	case t == 0:
		return fmt.Errorf("%w: token is zero (zero means no token; leases issue tokens from 1)", ErrInvalidToken)
	case t > MaxToken:
		return fmt.Errorf("%w: token %d is above the maximum %d (2^63-1)", ErrInvalidToken, uint64(t), uint64(MaxToken))
	}
	return nil
}

// maxTokenDigits bounds the input length so that a huge string is refused
// without scanning it all; MaxToken has 19 digits.
const maxTokenDigits = 64

// ParseToken parses a token from decimal text such as "34", the form
// [Token.String] writes and object metadata stores. Surrounding spaces are
// not allowed. Zero parses (it means "no token"); use [Token.Validate] to
// refuse it. Errors wrap [ErrInvalidToken] and say what is wrong: empty
// input, a sign, a non-digit, or a value above [MaxToken].
func ParseToken(s string) (Token, error) {
	if s == "" {
		return 0, fmt.Errorf("%w: empty string", ErrInvalidToken)
	}
	if len(s) > maxTokenDigits {
		return 0, fmt.Errorf("%w: %d characters, longer than any token", ErrInvalidToken, len(s))
	}
	switch s[0] {
	case '-':
		return 0, fmt.Errorf("%w: %q is negative", ErrInvalidToken, s)
	case '+':
		return 0, fmt.Errorf("%w: %q has a sign; write digits only", ErrInvalidToken, s)
	}
	if i := strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
		return 0, fmt.Errorf("%w: %q has a non-digit at byte %d", ErrInvalidToken, s, i)
	}
	u, err := strconv.ParseUint(s, 10, 64)
	if err != nil || Token(u) > MaxToken {
		return 0, fmt.Errorf("%w: %q is above the maximum %d (2^63-1)", ErrInvalidToken, s, uint64(MaxToken))
	}
	return Token(u), nil
}
