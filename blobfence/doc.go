// Package blobfence makes S3 refuse object writes from a lease holder whose
// fencing token is older than one already written, so a paused or
// partitioned former holder cannot overwrite its successor's object. It
// uses aws-sdk-go-v2: [New] takes an [S3API], which *s3.Client satisfies,
// and works with AWS S3 and S3-compatible servers that honour conditional
// writes; [Store.Verify] checks a server once, at start-up.
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
// Losing a race (412, 409, or 404 when the object vanished) means another
// writer changed the object between the HEAD and the PUT: the store reads
// and decides again, up to [Options.MaxAttempts] times, then returns
// [ErrContention]. [Store.PutAfter] skips the HEAD when the caller knows
// the current version: one request. [Store.Delete] is fenced the same way;
// the token goes with the object, so after a delete any token may create
// the key again. [PutOption] values set the object's other fields
// (Content-Type, user metadata, server-side encryption) next to the token.
//
// # The same bytes again
//
// An ETag is a content hash: when a newer holder writes the bytes the
// object already holds, a single PUT would leave the ETag as it was, and a
// writer that read the older version and paused would pass its If-Match.
// So a put of the same bytes is written in the other form: a one-part
// multipart upload (ETag md5(md5)-1, completed with If-Match) over a PUT,
// and a PUT over a one-part upload; four requests instead of two. Two forms
// fence the same bytes under two successive tokens; a third token gets
// [ErrSameBytes], with nothing written (the write record remembers the
// run, see same.go). A put of the same bytes, token and fields writes
// nothing. Bodies that go back to an earlier content (A, B, A) are not
// tracked. When successive holders may write identical bytes, put the
// token or a version into the body.
//
// # Retries and unknown outcomes
//
// Conditional writes are sent with the SDK's retryer limited to one
// attempt; the store's own loop is their only retry, and it reads the
// object again before every new attempt. Every put stores a write record
// next to the token (<MetadataKey>-write: token, MD5 of the body, its
// form, a random write id per attempt, the run of the same bytes, a digest of the other
// fields), so the next read recognizes the store's own write after a lost
// reply. When the store cannot tell whether a write landed, the error
// wraps [ErrOutcomeUnknown] together with the final verdict.
//
// # Trusting a read
//
// A writer must decide on the ETag and token of one and the same version.
// versitygw's posix backend reads metadata and ETag by path one after the
// other, so a HEAD racing a PUT can pair the new ETag with the old token.
// The store trusts a HEAD when its write record proves the pair (the ETag
// is what the record's MD5 gives in the record's form, a PUT or a one-part
// upload), and otherwise only when two HEADs in a row agree, which costs a
// request more. On servers whose ETags are not
// content hashes (SSE-KMS), once the store has seen one of its own puts
// come back with such an ETag, a HEAD with a write record is trusted as it
// is: the store then relies on the server reading ETag and metadata
// together, as AWS S3 does.
//
// # Errors
//
// Every error names the object once, as bucket/key. [*fence.StaleError]
// (stale token; nothing written; matches [fence.ErrStale] and
// [fence.ErrFencedOut]); the context's cause when ctx ended (a lost
// lease's lease.ErrLost, which matches fence.ErrFencedOut too);
// [ErrSameBytes]; [ErrContention]; [ErrOutcomeUnknown]; [ErrNotFound]
// (Get, Head); [ErrBadMetadata] (the stored token does not parse; Put and
// Delete leave such an object alone); [ErrInvalidArgument] (nil client,
// empty bucket, bad option, a key that is empty, over 1024 bytes, not
// UTF-8 or with control characters, token 0 or above 2^63-1: nothing is
// sent); [ErrUnsupported] (Verify). Other errors come from S3 and the SDK.
// Refused stale writes are counted in the OpenTelemetry counter
// fencekit_stale_rejected (store="s3").
package blobfence
