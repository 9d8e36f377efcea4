package blobfence

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/obs"
	"github.com/fencekit/fencekit/internal/valid"
)

// Put stores body under key with token tok, unless the key carries a newer
// token. See [Store.PutReader] for what it costs and the errors.
func (s *Store) Put(ctx context.Context, key string, body []byte, tok fence.Token, opts ...PutOption) error {
	_, err := s.PutReader(ctx, key, bytes.NewReader(body), tok, opts...)
	return err
}

// PutReader stores the bytes of r, from its current offset to its end,
// under key with token tok, unless the key carries a newer token, and
// returns the version it wrote. The object written is an envelope (see
// [decode]): a header line with the token and a nonce new for this write,
// then the body, so its ETag is new whatever the body. The length is found
// with Seek and r is rewound for every attempt (it is read twice per
// attempt: for the MD5, then to send); r is not closed.
//
// It costs two requests when nobody races it: a GET of the first 128 bytes
// that reads the key's ETag, envelope header (the token) and write record,
// and a PUT conditional on that ETag (If-Match), or on the key being absent
// (If-None-Match: *). With [After] and a version still current, one
// request. When the write record does not prove that the ETag is the one
// of the bytes read (an outside edit dropped it, or the server read it
// apart from the bytes while a PUT landed), one GET more, of the whole
// object, conditional on the ETag, whose MD5 must be the ETag. A lost race
// (412, 409, 404) makes it read and decide again, up to
// [Options.MaxAttempts] writes; so does a write that got no answer or a
// 5xx, after a pause (5 ms, doubled each time, at most 200 ms). opts set the object's other
// fields (Content-Type, user metadata, encryption).
//
// Errors: a [*fence.StaleError] (errors.Is [fence.ErrStale] and
// [fence.ErrFencedOut]; Resource is "bucket/key", Current the stored token)
// when the key carries a newer token, nothing written; [ErrExists] when
// [Store.Create] made the key, nothing written; [ErrContention] when
// every attempt lost a race; [fence.ErrInvalid] for a bad key, token or
// option, nothing sent; [ErrBadMetadata] when the stored header does not
// parse; [ErrOutcomeUnknown] (with the final error) when a write got no
// answer or a 5xx and a later read could not tell whether it landed; the context's
// cause (such as lease.ErrLost) when ctx ended; S3 and SDK errors otherwise,
// and r's own. Each error names the object once, as bucket/key.
func (s *Store) PutReader(ctx context.Context, key string, r io.ReadSeeker, tok fence.Token, opts ...PutOption) (Version, error) {
	if err := s.checkWrite("put", key, tok); err != nil {
		return Version{}, err
	}
	if r == nil {
		return Version{}, valid.Invalid("blobfence: put %s: the body reader is nil", s.resource(key))
	}
	f, err := s.objectFields(key, opts)
	if err != nil {
		return Version{}, err
	}
	c := &content{r: r, fields: f}
	if c.start, c.size, err = measure(r); err != nil {
		return Version{}, s.wrap(ctx, "put", key, fmt.Errorf("measure the body: %w", err))
	}
	if err := s.checkMetadataSize(f, len(valid.MaxToken.String()), len(longestRecord)); err != nil {
		return Version{}, err
	}
	decide := func(context.Context, state) (*content, error) { return c, nil }
	known := f.after
	if known.etag == "" {
		known = s.versions.get(key)
	}
	v, err := s.write(ctx, "put", key, tok, known, decide)
	return v, s.wrap(ctx, "put", key, err)
}

// longestRecord is as long as any write record.
var longestRecord = envelope{Deleted: true, Nonce: rand.Text()}.record([md5.Size]byte{})

// content is what one write stores after the envelope's header: bytes
// [start, start+size) of r, or nothing when r is nil (a tombstone).
type content struct {
	r           io.ReadSeeker
	start, size int64
	fields      objectFields
}

// decideFunc looks at the key's current state, whose token is not newer
// than the write's, and returns what to write, or nil when the key is
// already as asked. An error wrapping errChanged means the key changed
// while deciding: read again.
type decideFunc func(ctx context.Context, cur state) (*content, error)

// errChanged reports, from a decideFunc, that the key changed under it.
var errChanged = errors.New("the object changed while being read")

// write is the read-decide-write loop of every change (put, delete,
// claim): read the key's state (or take known), check tok against its
// token, and write an envelope conditional on the state's ETag. Every
// attempt's envelope has a new nonce, so every write's ETag is new and a
// later read recognizes an attempt that landed without its reply.
// Bounded: maxAttempts writes, each after a read, and one more read after
// the last (did it land without an answer? did it lose to an older
// token?). A race lost to a write with an older token (an old holder
// still writing) is not counted, up to maxOlderRaces of them: the old
// holder must not starve the new.
func (s *Store) write(ctx context.Context, op, key string, tok fence.Token, known Version, decide decideFunc) (Version, error) {
	var w attempts
	for n, older := 0, 0; n <= s.maxAttempts; n++ {
		if n == s.maxAttempts && !w.lastUnknown && !(w.lastRace && older < maxOlderRaces) {
			break // the last write lost a race: it did not land
		}
		cur := state{Version: known}
		unread := n == 0 && known.etag != "" // a version known before the call
		if !unread {
			var err error
			if cur, err = s.read(ctx, key); err != nil {
				return Version{}, w.fail(errorf("read the current state: %v", err))
			}
			s.versions.put(cur.Version)
			if w.mine(cur) {
				return cur.Version, nil // an attempt that got no answer landed
			}
			if w.lastRace && cur.token < tok && older < maxOlderRaces {
				older++
				n-- // lost to an older token: not counted
			}
		}
		if n == s.maxAttempts {
			break
		}
		if cur.created {
			return Version{}, w.fail(existsError(cur.creator, cur.token))
		}
		if err := fence.Check(s.resource(key), tok, cur.token); err != nil {
			// A known version's token is one the key had: tokens only go
			// up, so it refuses as a read would.
			s.stale.Add(obs.StoreS3)
			return Version{}, w.fail(err)
		}
		c, err := decide(ctx, cur)
		if errors.Is(err, errChanged) {
			w.last, w.lastUnknown, w.lastRace = err, false, false
			continue
		}
		if err != nil {
			return Version{}, w.fail(err)
		}
		if c == nil {
			return cur.Version, nil
		}
		e := envelope{Deleted: c.r == nil, Token: tok, Nonce: rand.Text()}
		w.nonces = append(w.nonces, e.Nonce)
		etag, err := s.send(ctx, key, cur, e, c)
		if done, err := w.settle(ctx, err); done {
			if err != nil {
				return Version{}, err
			}
			v := Version{key: key, etag: etag, token: tok}
			s.versions.put(v)
			return v, nil
		}
		if w.lastUnknown {
			w.pause(ctx)
		}
		known = Version{}
	}
	return Version{}, w.giveUp(s.maxAttempts)
}

// send writes e and c with one PUT conditional on cur: If-Match its ETag,
// or If-None-Match: * when no object has the key. It returns the new ETag.
func (s *Store) send(ctx context.Context, key string, cur state, e envelope, c *content) (string, error) {
	stored := &envelopeReader{head: e.header(), content: c}
	sum, err := stored.md5()
	if err != nil {
		return "", refused{fmt.Errorf("read the body: %w", err)}
	}
	md, err := s.userMetadata(c.fields, e.Token.String(), e.record(sum))
	if err != nil {
		return "", refused{err}
	}
	in := &s3.PutObjectInput{
		Bucket:        aws.String(s.bucket),
		Key:           aws.String(key),
		Body:          stored,
		ContentLength: aws.Int64(stored.size()),
		Metadata:      md,
	}
	if cur.exists() {
		in.IfMatch = aws.String(cur.etag)
	} else {
		in.IfNoneMatch = aws.String("*")
	}
	c.fields.putInput(in)
	out, err := s.client.PutObject(ctx, in, noSDKRetry)
	if err != nil {
		return "", err
	}
	return aws.ToString(out.ETag), nil
}

// envelopeReader reads an envelope: the header, then the content's bytes,
// seeking in the content's reader as needed (the SDK rewinds a body to
// compute its checksum and to send it).
type envelopeReader struct {
	head    []byte
	content *content
	off     int64
	placed  bool // the content's reader is at the offset off implies
}

func (r *envelopeReader) size() int64 {
	if r.content.r == nil {
		return int64(len(r.head))
	}
	return int64(len(r.head)) + r.content.size
}

// Read fills p from the header on into the content: net/http copies a
// request body to the connection with one write per Read, so a Read that
// stopped at the header's end would send it as a TCP segment of its own.
func (r *envelopeReader) Read(p []byte) (int, error) {
	if r.off >= r.size() {
		return 0, io.EOF
	}
	if r.off < int64(len(r.head)) {
		n := copy(p, r.head[r.off:])
		r.off += int64(n)
		r.placed = false
		if n == len(p) || r.off >= r.size() {
			return n, nil
		}
		m, err := r.Read(p[n:])
		return n + m, err
	}
	c := r.content
	if !r.placed {
		if _, err := c.r.Seek(c.start+r.off-int64(len(r.head)), io.SeekStart); err != nil {
			return 0, err
		}
		r.placed = true
	}
	p = p[:min(int64(len(p)), r.size()-r.off)]
	n, err := c.r.Read(p)
	r.off += int64(n)
	if err == io.EOF && r.off < r.size() {
		err = io.ErrUnexpectedEOF // the reader shrank since it was measured
	}
	return n, err
}

// WriteTo writes the rest of the envelope to w. io.Copy uses it (the SDK
// hashes the body that way for its signature): without it, io.Copy takes
// a 32 KiB buffer per put; with it, the content goes through a pooled
// buffer (none for the header).
func (r *envelopeReader) WriteTo(w io.Writer) (int64, error) {
	var total int64
	if r.off < int64(len(r.head)) {
		n, err := w.Write(r.head[r.off:])
		r.off += int64(n)
		total += int64(n)
		r.placed = false
		if err == nil && r.off < int64(len(r.head)) {
			err = io.ErrShortWrite // as io.Copy says: the rest would follow at the wrong offset
		}
		if err != nil {
			return total, err
		}
	}
	rest := r.size() - r.off
	if rest <= 0 {
		return total, nil
	}
	c := r.content
	if !r.placed {
		if _, err := c.r.Seek(c.start+r.off-int64(len(r.head)), io.SeekStart); err != nil {
			return total, err
		}
	}
	n, err := copyContent(w, c.r, rest)
	r.off += n
	total += n
	r.placed = err == nil
	if err == nil && n < rest {
		err = io.ErrUnexpectedEOF // the reader shrank since it was measured
	}
	return total, err
}

func (r *envelopeReader) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekCurrent:
		offset += r.off
	case io.SeekEnd:
		offset += r.size()
	}
	if offset < 0 {
		return 0, errors.New("seek before the start of the envelope")
	}
	r.off, r.placed = offset, false
	return offset, nil
}

// md5 hashes the whole envelope and rewinds it.
func (r *envelopeReader) md5() (sum [md5.Size]byte, err error) {
	h := md5.New()
	h.Write(r.head)
	if c := r.content; c.r != nil {
		if _, err = c.r.Seek(c.start, io.SeekStart); err == nil {
			var n int64
			n, err = copyContent(h, c.r, c.size)
			if err == nil && n != c.size {
				err = io.ErrUnexpectedEOF // the reader shrank since it was measured
			}
		}
	}
	if _, serr := r.Seek(0, io.SeekStart); err == nil {
		err = serr
	}
	h.Sum(sum[:0])
	return sum, err
}

// copyBuffers lends copyContent its buffers: without them, io.Copy through
// a LimitReader allocates one, up to 32 KiB, per pass, and a put makes two
// passes (its MD5, then the SDK's payload hash) before sending.
var copyBuffers = sync.Pool{New: func() any { return new([32 << 10]byte) }}

// copyContent copies n bytes of r to w with a pooled buffer. It returns
// fewer than n, and no error, when r ends early.
func copyContent(w io.Writer, r io.Reader, n int64) (int64, error) {
	buf := copyBuffers.Get().(*[32 << 10]byte)
	defer copyBuffers.Put(buf)
	return io.CopyBuffer(w, io.LimitReader(r, n), buf[:])
}

// refused marks an error of a write that was never sent (the body could
// not be read, the metadata did not fit): nothing was written.
type refused struct{ err error }

func (e refused) Error() string { return e.err.Error() }
func (e refused) Unwrap() error { return e.err }
func (e refused) bare() string  { return bare(e.err) }

// attempts tracks the writes of one change: the nonce of each, so that a
// read can tell whether one that got no answer landed.
type attempts struct {
	nonces      []string
	unknown     int    // writes that got no answer or a 5xx
	unknownWhy  string // what the last of them got: "no answer", "a server error (503)"
	last        error  // the last write's error
	lastUnknown bool   // the last write got no answer or a 5xx
	lastRace    bool   // the last write lost a race
}

// maxOlderRaces bounds the races a change loses to older tokens beyond
// [Options.MaxAttempts].
const maxOlderRaces = 64

// mine reports whether cur was written by one of w's attempts.
func (w *attempts) mine(cur state) bool {
	if !cur.envelope {
		return false
	}
	for _, n := range w.nonces {
		if n == cur.nonce {
			return true
		}
	}
	return false
}

// settle takes the error of one conditional write: done and nil when it
// landed, done and the call's error when the call must end, not done when
// the call should read the key and decide again.
func (w *attempts) settle(ctx context.Context, err error) (done bool, _ error) {
	switch classify(err) {
	case outcomeOK:
		return true, nil
	case outcomeRace:
		w.last, w.lastUnknown, w.lastRace = err, false, true
		return false, nil
	case outcomeUnknown:
		w.unknown++
		w.unknownWhy = "no answer"
		if st := httpStatus(err); st != 0 {
			w.unknownWhy = fmt.Sprintf("a server error (%d)", st)
		}
		w.last, w.lastUnknown, w.lastRace = err, true, false
		if ctx.Err() != nil {
			return true, errorf("%v: the context ended with the write in flight: %v", ErrOutcomeUnknown, err)
		}
		return false, nil
	default:
		return true, w.fail(err)
	}
}

// fail marks err with ErrOutcomeUnknown when a write got no answer or a 5xx.
func (w *attempts) fail(err error) error {
	if w.unknown > 0 {
		return errorf("%v (an earlier attempt got %s; it may have landed and been replaced since): %v", ErrOutcomeUnknown, w.unknownWhy, err)
	}
	return err
}

// Pauses after a write that got no answer or a 5xx, before the read and
// write that follow: the first, doubled each time, at most the last.
const (
	firstUnknownPause = 5 * time.Millisecond
	maxUnknownPause   = 200 * time.Millisecond
)

// pause waits after the w.unknown-th write that got no answer or a 5xx,
// so that a failing server is not sent the next attempts at once; it ends
// early when ctx ends.
func (w *attempts) pause(ctx context.Context) {
	d := min(firstUnknownPause<<min(w.unknown-1, 10), maxUnknownPause)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// giveUp is the error of a call whose attempts ran out: ErrContention when
// the last one lost a race, the last error (marked ErrOutcomeUnknown) when
// it got no answer.
func (w *attempts) giveUp(n int) error {
	if w.lastUnknown {
		return w.fail(errorf("gave up after %d attempts: %v", n, w.last))
	}
	return w.fail(errorf("%v (%d attempts): %v", ErrContention, n, w.last))
}

// outcome classifies the error of a conditional write.
type outcome int

const (
	outcomeOK      outcome = iota
	outcomeRace            // 412, 409, 404: the object changed; read again
	outcomeUnknown         // no answer, or a 5xx: it may have landed
	outcomeFailed          // refused (4xx, 501): it did not land
)

func classify(err error) outcome {
	if err == nil {
		return outcomeOK
	}
	if errors.As(err, new(refused)) {
		return outcomeFailed
	}
	switch st := httpStatus(err); {
	case st == http.StatusPreconditionFailed, st == http.StatusConflict:
		return outcomeRace
	case st == http.StatusNotFound:
		if errorCode(err) == "NoSuchBucket" {
			return outcomeFailed
		}
		return outcomeRace // If-Match on a key that vanished
	case st == http.StatusNotImplemented:
		return outcomeFailed // the server does not do conditional writes
	case st >= 500, st == 0:
		return outcomeUnknown
	default:
		return outcomeFailed
	}
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
