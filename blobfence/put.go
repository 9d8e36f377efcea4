package blobfence

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/obs"
)

// Version identifies one state of an object: its ETag (quoted, as S3 sends
// it) and the token in its metadata. The zero Version means "no object".
type Version struct {
	ETag  string
	Token fence.Token
}

// Exists reports whether v names an object (a non-empty ETag).
func (v Version) Exists() bool { return v.ETag != "" }

// PutResult describes an accepted put.
type PutResult struct {
	// Version is the object as written: its new ETag and the token.
	Version
	// Replaced is the version the write replaced, exactly: the write was
	// conditional on it (If-Match), or on the key being absent (the zero
	// Version, If-None-Match: *).
	Replaced Version
	// Attempts is the number of conditional writes sent; 1 when the write
	// did not race. A put that found the object already as it asks (the
	// same bytes, token and fields) writes nothing: Version equals
	// Replaced.
	Attempts int
}

// Put stores body under key with token tok in its metadata, unless the
// object already carries a newer token. It costs two requests when nobody
// races it: a HEAD that reads the current ETag and token, and a PUT
// conditional on that ETag (If-Match) or on the key being absent
// (If-None-Match: *). When the object holds the same bytes, the write
// takes the other form (a PUT over a one-part multipart upload, or a
// one-part upload over a PUT: create, part, and a complete conditional on
// the ETag, four requests in all) so that its ETag changes; under the
// same token and fields it writes nothing (one HEAD); see the package doc
// for when it refuses with [ErrSameBytes]. One HEAD more over an object
// that has no write record (written by another tool). A lost race (412, 409, or 404 when the object vanished)
// makes it read and decide again, up to [Options.MaxAttempts] times.
// Objects without token metadata count as token 0. opts set the object's
// other fields (Content-Type, user metadata, encryption...).
//
// Errors: a [*fence.StaleError] (errors.Is [fence.ErrStale] and
// [fence.ErrFencedOut]; Resource is "bucket/key", Current the stored token)
// when the stored token is newer than tok, nothing written; [ErrSameBytes]
// when the same bytes cannot be given a new ETag; [ErrContention]
// when every attempt lost a race or no read of the object could be
// trusted; [ErrInvalidArgument] for a bad key, token or option (nothing is
// sent); [ErrBadMetadata] when the stored token does not parse;
// [ErrOutcomeUnknown] (with the final error) when a write got no answer and
// could not be resolved, or the context ended with it in flight; the
// context's cause (such as lease.ErrLost) when ctx ended; S3 and SDK errors
// otherwise. Each error names the object once, as bucket/key.
func (s *Store) Put(ctx context.Context, key string, body []byte, tok fence.Token, opts ...PutOption) error {
	_, err := s.PutReader(ctx, key, bytes.NewReader(body), tok, opts...)
	return err
}

// PutReader is [Store.Put] for a body read from r, from its current offset
// to its end, and returns the new version. The length is found with Seek,
// and r is rewound to the same offset for every attempt, so nothing beyond
// what r holds is buffered (r is read once more, for the MD5 of the write
// record). r is not closed. Same requests and errors as Put, plus r's own
// Seek and Read errors.
func (s *Store) PutReader(ctx context.Context, key string, r io.ReadSeeker, tok fence.Token, opts ...PutOption) (PutResult, error) {
	return s.put(ctx, key, r, tok, nil, opts)
}

// PutAfter is [Store.PutReader] for a caller that knows the object's
// current version. prev must come from this store: the Version of the
// previous PutResult, [Store.Head] or [Store.GetVersion], or the zero
// Version for an absent key. The store trusts prev.Token as the token of
// the object whose ETag is prev.ETag, so a Version put together by hand (a
// current ETag with a wrong token) can defeat the fence.
//
// When prev is still current and tok is not older than prev.Token, it
// costs one request: the conditional PUT, without the HEAD (the same
// bytes again are read first and cost what they cost Put). When prev is
// out of date (the
// PUT loses with 412, 409 or 404) or tok is older than prev.Token, it falls
// back to Put's read-decide-write loop, which decides on the stored token.
// Same errors as PutReader.
func (s *Store) PutAfter(ctx context.Context, key string, r io.ReadSeeker, tok fence.Token, prev Version, opts ...PutOption) (PutResult, error) {
	return s.put(ctx, key, r, tok, &prev, opts)
}

// put checks the arguments, runs the read-decide-write loop and names the
// object in its error.
func (s *Store) put(ctx context.Context, key string, r io.ReadSeeker, tok fence.Token, prev *Version, opts []PutOption) (PutResult, error) {
	if err := s.check("put", key); err != nil {
		return PutResult{}, err
	}
	if err := s.checkToken("put", key, tok); err != nil {
		return PutResult{}, err
	}
	if r == nil {
		return PutResult{}, fmt.Errorf("%w: put %s: the body reader is nil", ErrInvalidArgument, s.resource(key))
	}
	fields, err := s.objectFields(opts)
	if err != nil {
		return PutResult{}, err
	}
	res, err := s.putLoop(ctx, key, r, tok, prev, fields)
	return res, s.wrap(ctx, "put", key, err)
}

// body is the body of one put: where it starts in its reader, its size and
// its MD5.
type body struct {
	r           io.ReadSeeker
	start, size int64
	md5         [md5.Size]byte
}

func (s *Store) putLoop(ctx context.Context, key string, r io.ReadSeeker, tok fence.Token, prev *Version, fields objectFields) (PutResult, error) {
	b := &body{r: r}
	var err error
	if b.start, b.size, err = measure(r); err != nil {
		return PutResult{}, fmt.Errorf("measure the body: %w", err)
	}
	if b.md5, err = bodyMD5(r, b.start, b.size); err != nil {
		return PutResult{}, fmt.Errorf("hash the body: %w", err)
	}
	sum, fieldsDigest := hex.EncodeToString(b.md5[:]), fields.digest()
	w := &writeState{op: "put", id: rand.Text()}
	record := func(how form, id string, alt fence.Token, hasAlt bool) writeRecord {
		return writeRecord{tok: tok, md5: sum, form: how, id: id, alt: alt, hasAlt: hasAlt, fields: fieldsDigest, opaque: s.opaque.Load()}
	}
	// The longest write record of the call fits, or nothing is sent.
	longest := record(formPut, w.id+"."+strconv.Itoa(s.maxAttempts), fence.MaxToken, true)
	longest.opaque = true
	if _, err := s.userMetadata(fields, tok.String(), longest.String()); err != nil {
		return PutResult{}, err
	}
	// Bounded: maxAttempts conditional writes, each after a read, and, when
	// the last one got no answer, a last read that may find it landed.
	for attempt := 0; attempt <= s.maxAttempts; attempt++ {
		if attempt == s.maxAttempts && !w.lastUnknown {
			break // the last attempt lost a race: it did not land
		}
		var st headState
		// A known version is enough, unless it holds the same bytes: their
		// rewrite needs the version's write record, so read it.
		if attempt == 0 && prev != nil && fence.Check("", tok, prev.Token) == nil && !sameBytes(prev.ETag, b.md5) {
			st.Version = *prev
		} else {
			var err error
			if st, err = s.readVersion(ctx, key); err != nil {
				return PutResult{}, w.fail(fmt.Errorf("read the current version: %w", err))
			}
			if n, ok := w.mine(st); ok {
				// An attempt that got no answer did land.
				return PutResult{Version: st.Version, Replaced: w.based[n], Attempts: attempt}, nil
			}
		}
		cur := st.Version
		if attempt == s.maxAttempts {
			break
		}
		if err := fence.Check(s.resource(key), tok, cur.Token); err != nil {
			obs.StaleRejected(ctx, obs.StoreS3)
			return PutResult{}, w.fail(err)
		}
		how, alt, hasAlt, err := plan(st, b.md5, tok, fieldsDigest)
		if err != nil {
			return PutResult{}, w.fail(err)
		}
		if how == formNone {
			return PutResult{Version: cur, Replaced: cur, Attempts: attempt}, nil
		}
		md, err := s.userMetadata(fields, tok.String(), record(how, w.next(cur), alt, hasAlt).String())
		if err != nil {
			return PutResult{}, err
		}
		var etag string
		if how == formMultipart {
			etag, err = s.writeMultipart(ctx, key, b, cur, md, fields)
		} else {
			etag, err = s.writePlain(ctx, key, b, cur, md, fields)
		}
		if done, err := w.settle(ctx, err); done {
			if err != nil {
				return PutResult{}, err
			}
			return PutResult{Version: Version{ETag: etag, Token: tok}, Replaced: cur, Attempts: attempt + 1}, nil
		}
	}
	return PutResult{}, w.giveUp(s.maxAttempts)
}

// condition sets the precondition of a write over cur: If-Match its ETag,
// or If-None-Match: * when the key is absent.
func condition(cur Version) (ifMatch, ifNoneMatch *string) {
	if cur.Exists() {
		return aws.String(cur.ETag), nil
	}
	return nil, aws.String("*")
}

// writePlain writes the body with one conditional PUT and returns the new
// ETag.
func (s *Store) writePlain(ctx context.Context, key string, b *body, cur Version, md map[string]string, f objectFields) (string, error) {
	if _, err := b.r.Seek(b.start, io.SeekStart); err != nil {
		return "", fmt.Errorf("rewind the body: %w", errRefused(err))
	}
	in := &s3.PutObjectInput{
		Bucket:        aws.String(s.bucket),
		Key:           aws.String(key),
		Body:          b.r,
		ContentLength: aws.Int64(b.size),
		Metadata:      md,
	}
	in.IfMatch, in.IfNoneMatch = condition(cur)
	f.putInput(in)
	out, err := s.client.PutObject(ctx, in, noSDKRetry)
	if err != nil {
		return "", err
	}
	etag := aws.ToString(out.ETag)
	if etag != plainETag(b.md5) {
		s.opaque.Store(true)
	}
	return etag, nil
}

// refusedError marks an error of a step before the conditional write
// (create, part upload, rewind): nothing was written.
type refusedError struct{ err error }

func (e refusedError) Error() string { return e.err.Error() }
func (e refusedError) Unwrap() error { return e.err }

func errRefused(err error) error { return refusedError{err} }

// writeState tracks the conditional writes of one Put or Delete. Each
// attempt of a put writes its own write id (<id>.<n>) into the metadata, so
// a later read can tell whether an attempt that got no answer landed, and
// which version it replaced.
type writeState struct {
	op          string
	id          string    // "" for a delete
	based       []Version // based[n]: the version attempt n was conditional on
	unknown     bool      // some attempt got no answer
	last        error     // the last attempt's error
	lastUnknown bool      // the last attempt got no answer
}

// settle takes the error of one conditional write: done and nil when it
// landed, done and the call's error when the call must end, not done when
// the call should read the object and decide again.
func (w *writeState) settle(ctx context.Context, err error) (done bool, _ error) {
	switch classify(err) {
	case outcomeOK:
		return true, nil
	case outcomeRace:
		w.last, w.lastUnknown = err, false
		return false, nil
	case outcomeUnknown:
		w.unknown = true
		w.last, w.lastUnknown = err, true
		if ctx.Err() != nil {
			return true, fmt.Errorf("%w: the context ended with the write in flight: %w", ErrOutcomeUnknown, err)
		}
		return false, nil
	default:
		return true, w.fail(err)
	}
}

func (w *writeState) next(cur Version) string {
	w.based = append(w.based, cur)
	return w.id + "." + strconv.Itoa(len(w.based)-1)
}

// mine reports whether st was written by one of w's attempts, and which.
func (w *writeState) mine(st headState) (int, bool) {
	if w.id == "" || !st.hasRecord {
		return 0, false
	}
	rest, ok := strings.CutPrefix(st.record.id, w.id+".")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 0 || n >= len(w.based) {
		return 0, false
	}
	return n, true
}

// fail marks err with ErrOutcomeUnknown when an attempt got no answer.
func (w *writeState) fail(err error) error {
	if w.unknown {
		return fmt.Errorf("%w (an earlier attempt got no answer; it may have landed and been replaced since): %w", ErrOutcomeUnknown, err)
	}
	return err
}

// giveUp is the error of a call whose attempts ran out: ErrContention when
// the last one lost a race, the last error (marked ErrOutcomeUnknown) when
// it got no answer.
func (w *writeState) giveUp(attempts int) error {
	if w.lastUnknown {
		return w.fail(fmt.Errorf("gave up after %d attempts: %w", attempts, w.last))
	}
	return w.fail(fmt.Errorf("%w (%d attempts): %w", ErrContention, attempts, w.last))
}

// measure returns r's current offset and the number of bytes from there to
// the end, and leaves r at the offset.
func measure(r io.ReadSeeker) (start, size int64, err error) {
	if start, err = r.Seek(0, io.SeekCurrent); err != nil {
		return 0, 0, err
	}
	end, err := r.Seek(0, io.SeekEnd)
	if err != nil {
		return 0, 0, err
	}
	if _, err = r.Seek(start, io.SeekStart); err != nil {
		return 0, 0, err
	}
	if end < start {
		return 0, 0, errors.New("the reader's end is before its current offset")
	}
	return start, end - start, nil
}

func (s *Store) resource(key string) string { return s.bucket + "/" + key }

// wrap names the object once in err: "blobfence: put bucket/key: ...",
// or "blobfence: put: ..." around a stale error, which names it already.
// When ctx has ended, the error also wraps context.Cause(ctx) (a lost
// lease's ErrLost, say), not only ctx.Err().
func (s *Store) wrap(ctx context.Context, op, key string, err error) error {
	if err == nil {
		return nil
	}
	if cause := context.Cause(ctx); cause != nil && !errors.Is(err, cause) {
		err = fmt.Errorf("%w (%w)", err, cause)
	}
	if errors.Is(err, fence.ErrStale) {
		return fmt.Errorf("blobfence: %s: %w", op, err)
	}
	return fmt.Errorf("blobfence: %s %s: %w", op, s.resource(key), err)
}

// plainETag is the ETag S3 gives a single PUT of a body with MD5 sum.
func plainETag(sum [md5.Size]byte) string { return `"` + hex.EncodeToString(sum[:]) + `"` }

// sameBytes reports whether etag is one S3 gives a body with MD5 sum.
func sameBytes(etag string, sum [md5.Size]byte) bool {
	return etag == plainETag(sum) || etag == multipartETag(sum)
}

// multipartETag is the ETag S3 gives a one-part multipart upload of a body
// with MD5 sum: the MD5 of the part's MD5, then "-1".
func multipartETag(sum [md5.Size]byte) string {
	m := md5.Sum(sum[:])
	return `"` + hex.EncodeToString(m[:]) + `-1"`
}
