// Package blobfence makes S3 refuse object writes from a lease holder whose
// fencing token is older than one already written, so a paused or
// partitioned former holder cannot overwrite or delete its successor's
// object. It uses aws-sdk-go-v2: [New] takes an [S3API], which *s3.Client
// satisfies, and works with AWS S3 and S3-compatible servers that honour
// conditional PUTs; [Store.Verify] checks a server once, at start-up.
//
// # An envelope per write
//
// S3's only compare-and-swap is If-Match on an ETag, and an ETag is a hash
// of the stored bytes: if the same bytes came back (A, B, A; a delete and
// the same bytes again), an older holder's If-Match would pass. So the
// store never writes the caller's bytes as they are: each write stores a
// header line with the token and a nonce new for that write, then the
// body ([Store.Get] returns the body; docs/s3.md gives the format to
// other readers). Every accepted write leaves bytes, and hence an
// ETag, that no earlier state of the key had, whatever the body, on any
// server whose ETag is derived from the bytes (MD5, checksums) or new per
// write. [Store.Put] costs two requests:
//
//	GET key  Range: bytes=0-127 → ETag E, the header (token c; 0 when absent
//	                              or written by another tool), write record
//	fence.Check(key, tok, c)    → *fence.StaleError when c > tok; nothing sent
//	PUT key  If-Match: E        → lands only while the key is still in the
//	         (If-None-Match: *    state that was checked
//	          when absent)
//	         header "fencekit-blob 1 put <tok> <nonce>\n" + body
//
// The token of a version is what its own bytes say; metadata is a hint.
// The write record in the metadata (the nonce and the MD5 of the bytes)
// proves that E is the ETag of the bytes read when it names the header's
// nonce and predicts E; otherwise (versitygw --sidecar writes ETag,
// metadata and bytes one after the other; an outside edit drops the
// metadata) a GET of the whole object conditional on E must have E as its
// MD5. A server whose ETags are not MD5-shaped (or SSE-KMS) is trusted to
// return the ETag and bytes of one version. [After] skips the read with a
// version the store returned: one request. Losing a race (412, 409, 404)
// makes the store read and decide again, up to [Options.MaxAttempts] times.
//
// [Store.Get] strips the header: one request. [Store.Delete] writes a
// tombstone (the header alone, state "del"), so the key reads as absent
// and keeps its fence; it never relies on DELETE's If-Match, which some
// servers check late or ignore. [Store.Retire] removes a tombstone for
// good, an operator's step. [Store.Claim] rewrites the object under a new
// token without changing what readers get. Objects written by the second
// release (the bytes as they are) stay readable and become envelopes at
// their next fenced write.
//
// # Write-once objects
//
// [Store.Create] stores the caller's bytes as they are, with no envelope,
// only if the key does not exist (If-None-Match: *): other tools read
// them unchanged, and a second Create is refused with [ErrExists].
//
// # Retries and unknown outcomes
//
// Conditional writes are sent with the SDK's retryer limited to one
// attempt; the store's own loop is their only retry, and it reads the key
// again before every new attempt. A read that finds one of the call's own
// nonces knows the attempt landed. When the store cannot tell whether a
// write landed, the error wraps [ErrOutcomeUnknown] together with the final
// verdict.
//
// # Errors
//
// Every error names the object once, as bucket/key. [*fence.StaleError]
// (stale token; nothing written; matches [fence.ErrStale] and
// [fence.ErrFencedOut]); the context's cause when ctx ended (a lost
// lease's lease.ErrLost, which matches fence.ErrFencedOut too);
// [ErrContention]; [ErrOutcomeUnknown]; [ErrNotFound] (Get, Head);
// [ErrBadMetadata] (the object starts like an envelope but its header does
// not parse; writes leave such an object alone); [fence.ErrInvalid] (nil client, empty
// bucket, bad option, a key that is empty, over 1024 bytes, not UTF-8 or
// with control characters, token 0 or above 2^63-1: nothing is sent);
// [ErrUnsupported] (Verify). Other errors come from S3 and the SDK.
// Refused stale writes are counted in the OpenTelemetry counter
// fencekit_stale_rejected (store="s3") on Options.MeterProvider.
package blobfence
