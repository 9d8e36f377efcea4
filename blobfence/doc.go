// Package blobfence makes S3 refuse object writes from a lease holder whose
// fencing token is older than one already written, so a paused or
// partitioned former holder cannot overwrite its successor's object. It
// uses aws-sdk-go-v2: [New] takes an [S3API], which *s3.Client satisfies,
// and works with AWS S3 and S3-compatible servers that honour conditional
// writes (If-Match and If-None-Match on PUT, If-Match on DELETE).
//
// # Compare-and-swap from conditional writes
//
// The token lives with the object, in its user metadata
// (x-amz-meta-fencekit-token by default, see [Options.MetadataKey]): a
// token kept anywhere else could not be checked in the same atomic step
// as the write. [Store.Put] costs two requests:
//
//	HEAD key                       → ETag E and stored token c (0 when absent
//	                                 or written without a token)
//	fence.Check(key, tok, c)       → *fence.StaleError when c > tok; nothing sent
//	PUT key  If-Match: E           → the write lands only if the object is
//	         (If-None-Match: *       still the one that was checked
//	          when absent)
//	         x-amz-meta-fencekit-token: tok
//
// The conditional PUT is the swap: S3 applies it only if the object is
// still the version whose token was checked. Losing a race (412
// PreconditionFailed, 409 ConditionalRequestConflict, or 404 NoSuchKey when
// the object vanished) means another writer changed the object between the
// HEAD and the PUT: the store reads again and decides again, up to
// [Options.MaxAttempts] times, then returns [ErrContention]. A token older
// than the stored one gets a [*fence.StaleError] (errors.Is
// [fence.ErrStale]) that carries the stored token. [Store.PutAfter] skips
// the HEAD when the caller knows the current version (the [PutResult] of
// its previous put): one request. [Store.PutReader] streams the body from
// an io.ReadSeeker, rewinding it for each attempt. [Store.Delete] is fenced
// the same way with a DELETE conditional on the ETag; note that the token
// goes with the object, so after a delete any token may create the key
// again.
//
// # Retries and unknown outcomes
//
// The conditional PUT and DELETE are sent with the SDK's retryer limited
// to one attempt; the store's own loop is their only retry, and it reads
// the object again before every new attempt. A write that gets no answer
// (a transport error or a 5xx) may have landed; its retry by the SDK would
// see the store's own write and come back 412, a lost race that hides a
// success. Instead, every put writes a write record next to the token
// (<MetadataKey>-write: token, MD5 of the body, a random write id per
// attempt), and the next read recognizes the store's own write: the put
// succeeds. When the store cannot tell (the object was replaced again
// before it could read it, or the read fails), the error wraps
// [ErrOutcomeUnknown] together with the final verdict. HEAD and GET keep
// the client's retryer: they are idempotent.
//
// # Trusting a read
//
// A writer must decide on the ETag and token of one and the same version.
// Some servers do not read both atomically: versitygw's posix backend
// reads metadata and ETag by path one after the other, so a HEAD racing a
// PUT can return the new ETag with the old token, and a put deciding on it
// would land a stale token (the race test caught this). The store trusts a
// HEAD when its write record proves that token and ETag belong together
// (the record's token is the token and its MD5 is the ETag), and otherwise
// (objects written by other tools, ETags that are not an MD5 such as
// multipart or SSE-KMS uploads) only when two HEADs in a row agree, which
// costs a request more.
//
// A limit remains: S3's ETag of a single-part upload is the MD5 of the
// bytes, not a version number. If a newer holder writes exactly the bytes
// an older version had, a stale writer that read that older version and
// paused since finds the same ETag, and its conditional PUT passes. Make
// the bytes of successive versions differ (a sequence number or the token
// in the body) when that can happen.
//
// # Errors
//
// [*fence.StaleError] (stale token; nothing written), [ErrContention]
// (every attempt lost a race, or no read could be trusted), [ErrOutcomeUnknown] (a write got no answer
// and the store could not resolve it), [ErrNotFound] (Get, Head),
// [ErrBadMetadata] (the stored token does not parse; Put and Delete leave
// such an object alone), [ErrInvalidArgument] (nil client, empty bucket,
// bad option, empty or over-1024-byte or non-UTF-8 key, token 0 or above
// 2^63-1: reported on first use, nothing sent). Other errors come from S3
// and the SDK, wrapped with the operation and key.
package blobfence
