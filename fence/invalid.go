package fence

import "errors"

// ErrInvalid is matched by every error fencekit returns for bad input: a
// bad name, a bad token, a nil client, an option out of range. A name (a
// lease name, a guard row's resource, an object key) is 1 to 1,024 bytes of
// valid UTF-8 without control characters; a token is 1 to 2^63-1. Nothing changed, and nothing was sent unless the call's doc says
// otherwise (blobfence's Retire reads the object first): fix the call, a
// retry cannot help.
var ErrInvalid = errors.New("fence: invalid argument")
