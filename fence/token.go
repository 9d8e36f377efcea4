package fence

import "strconv"

// Token is a fencing token: a number issued with every grant of a lease,
// strictly greater than the token of every earlier grant of the same lease.
// Storage compares tokens to order writers; the zero Token means "no token"
// (an object or row written without fencing) and is never issued. Tokens
// go up to 2^63-1, so that every token fits in a signed 64-bit integer (a
// PostgreSQL bigint, an S3 metadata value parsed by any client).
type Token uint64

// String returns the token in decimal.
func (t Token) String() string { return strconv.FormatUint(uint64(t), 10) }
