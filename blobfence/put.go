package blobfence

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/fencekit/fencekit/fence"
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
	// did not race.
	Attempts int
}

// Put stores body under key with token tok in its metadata, unless the
// object already carries a newer token. It costs two requests when nobody
// races it: a HEAD that reads the current ETag and token, and a PUT
// conditional on that ETag (If-Match) or on the key being absent
// (If-None-Match: *); one HEAD more over an object that has no write record
// (written by another tool, or with an ETag that is not an MD5), see the
// package doc. A lost race (412, 409, or 404 when the object vanished)
// makes it read and decide again, up to [Options.MaxAttempts] times.
// Objects without token metadata count as token 0.
//
// Errors: a [*fence.StaleError] (errors.Is [fence.ErrStale]; Resource is
// "bucket/key", Current the stored token) when the stored token is newer
// than tok, nothing written; [ErrContention] when every attempt lost a race
// or no read of the object could be trusted; [ErrInvalidArgument] for a bad
// key or token or an invalid Store (nothing is sent); [ErrBadMetadata] when
// the stored token does not parse; [ErrOutcomeUnknown] (with the final
// error) when a write got no answer and could not be resolved, or the
// context ended with it in flight; S3 and SDK errors otherwise, wrapped
// with the operation and key.
func (s *Store) Put(ctx context.Context, key string, body []byte, tok fence.Token) error {
	_, err := s.PutReader(ctx, key, bytes.NewReader(body), tok)
	return err
}

// PutReader is [Store.Put] for a body read from r, from its current offset
// to its end, and returns the new version. The length is found with Seek,
// and r is rewound to the same offset for every attempt, so nothing beyond
// what r holds is buffered (r is read once more, for the MD5 of the write
// record). r is not closed. Same requests and errors as Put, plus r's own
// Seek and Read errors.
func (s *Store) PutReader(ctx context.Context, key string, r io.ReadSeeker, tok fence.Token) (PutResult, error) {
	return s.put(ctx, key, r, tok, nil)
}

// PutAfter is [Store.PutReader] for a caller that knows the object's
// current version. prev must come from this store: the Version of the
// previous PutResult, [Store.Head] or [Store.GetVersion], or the zero
// Version for an absent key. The store trusts prev.Token as the token of
// the object whose ETag is prev.ETag, so a Version put together by hand (a
// current ETag with a wrong token) can defeat the fence.
//
// When prev is still current and tok is not older than prev.Token, it
// costs one request: the conditional PUT, without the HEAD. When prev is
// out of date (the PUT loses with 412, 409 or 404) or tok is older than
// prev.Token, it falls back to Put's read-decide-write loop, which decides
// on the stored token. Same errors as PutReader.
func (s *Store) PutAfter(ctx context.Context, key string, r io.ReadSeeker, tok fence.Token, prev Version) (PutResult, error) {
	return s.put(ctx, key, r, tok, &prev)
}

// put is the read-decide-write loop shared by the put methods.
func (s *Store) put(ctx context.Context, key string, r io.ReadSeeker, tok fence.Token, prev *Version) (PutResult, error) {
	if err := s.check("put", key); err != nil {
		return PutResult{}, err
	}
	if err := checkToken("put", key, tok); err != nil {
		return PutResult{}, err
	}
	if r == nil {
		return PutResult{}, fmt.Errorf("%w: put %q: the body reader is nil", ErrInvalidArgument, key)
	}
	start, size, err := measure(r)
	if err != nil {
		return PutResult{}, fmt.Errorf("blobfence: put %q: measure the body: %w", key, err)
	}
	sum, err := bodyMD5(r, start, size)
	if err != nil {
		return PutResult{}, fmt.Errorf("blobfence: put %q: hash the body: %w", key, err)
	}
	w := &writeState{op: "put", key: key, id: rand.Text()}
	// Bounded: maxAttempts conditional PUTs, each after a read, and, when
	// the last one got no answer, a last read that may find it landed.
	for attempt := 0; attempt <= s.maxAttempts; attempt++ {
		if attempt == s.maxAttempts && !w.lastUnknown {
			break // the last attempt lost a race: it did not land
		}
		var cur Version
		if attempt == 0 && prev != nil && fence.Check(key, tok, prev.Token) == nil {
			cur = *prev
		} else {
			st, err := s.readVersion(ctx, key)
			if err != nil {
				return PutResult{}, w.fail(fmt.Errorf("blobfence: put %q: read the current version: %w", key, err))
			}
			if n, ok := w.mine(st); ok {
				// An attempt that got no answer did land.
				return PutResult{Version: st.Version, Replaced: w.based[n], Attempts: attempt}, nil
			}
			cur = st.Version
		}
		if attempt == s.maxAttempts {
			break
		}
		if err := fence.Check(s.resource(key), tok, cur.Token); err != nil {
			return PutResult{}, w.fail(fmt.Errorf("blobfence: put %q: %w", key, err))
		}
		if _, err := r.Seek(start, io.SeekStart); err != nil {
			return PutResult{}, w.fail(fmt.Errorf("blobfence: put %q: rewind the body: %w", key, err))
		}
		in := &s3.PutObjectInput{
			Bucket:        aws.String(s.bucket),
			Key:           aws.String(key),
			Body:          r,
			ContentLength: aws.Int64(size),
			Metadata:      map[string]string{s.tokenKey: tok.String(), s.writeKey: writeRecord{tok: tok, md5: sum, id: w.next(cur)}.String()},
		}
		if cur.Exists() {
			in.IfMatch = aws.String(cur.ETag)
		} else {
			in.IfNoneMatch = aws.String("*")
		}
		out, err := s.client.PutObject(ctx, in, noSDKRetry)
		if done, err := w.settle(ctx, err); done {
			if err != nil {
				return PutResult{}, err
			}
			return PutResult{Version: Version{ETag: aws.ToString(out.ETag), Token: tok}, Replaced: cur, Attempts: attempt + 1}, nil
		}
	}
	return PutResult{}, w.giveUp(s.maxAttempts)
}

// writeState tracks the conditional writes of one Put or Delete. Each
// attempt of a put writes its own write id (<id>.<n>) into the metadata, so
// a later read can tell whether an attempt that got no answer landed, and
// which version it replaced.
type writeState struct {
	op, key     string
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
			return true, fmt.Errorf("%w: %s %q: the context ended with the write in flight: %w", ErrOutcomeUnknown, w.op, w.key, err)
		}
		return false, nil
	default:
		return true, w.fail(fmt.Errorf("blobfence: %s %q: %w", w.op, w.key, err))
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
		return w.fail(fmt.Errorf("blobfence: %s %q: gave up after %d attempts: %w", w.op, w.key, attempts, w.last))
	}
	return w.fail(fmt.Errorf("%w (%s %q, %d attempts): %w", ErrContention, w.op, w.key, attempts, w.last))
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
