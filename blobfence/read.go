package blobfence

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/obs"
)

// Get returns the object's body and the token in its metadata (0 when it
// carries none): what Put stored. It costs one request. Errors:
// [ErrNotFound] when the key is absent, [ErrBadMetadata] when the token
// metadata does not parse, [ErrInvalidArgument] for a bad key, the
// context's cause when ctx ended, S3 errors otherwise.
func (s *Store) Get(ctx context.Context, key string) ([]byte, fence.Token, error) {
	if err := s.check("get", key); err != nil {
		return nil, 0, err
	}
	r, err := s.getOnce(ctx, key)
	return r.body, r.Token, s.wrap(ctx, "get", key, err)
}

// GetVersion is [Store.Get] that also returns the object's ETag, which
// [Store.PutAfter] accepts to write again in one request. It costs one
// request, more when the ETag is not the one the write record's MD5 gives:
// either the server paired the body with the ETag of another version (a
// GET racing a PUT on a server whose reads are not atomic) or its ETags
// are not content hashes. It then reads again until two reads in a row
// agree, up to [Options.MaxAttempts]+1 reads, and returns an error
// wrapping [ErrContention] if none did. Other errors as for Get.
func (s *Store) GetVersion(ctx context.Context, key string) ([]byte, Version, error) {
	if err := s.check("get", key); err != nil {
		return nil, Version{}, err
	}
	reads := s.maxAttempts + 1
	var prev *getResult
	for range reads {
		r, err := s.getOnce(ctx, key)
		if err != nil {
			return nil, Version{}, s.wrap(ctx, "get", key, err)
		}
		if !r.unsure || prev != nil && prev.Version == r.Version && prev.record == r.record {
			return r.body, r.Version, nil
		}
		prev = &r
	}
	return nil, Version{}, s.wrap(ctx, "get", key, fmt.Errorf("%w: no two of %d reads agreed on the ETag and the write record", ErrContention, reads))
}

// getResult is one GET of an object.
type getResult struct {
	Version
	body   []byte
	record string // the raw write record, "" when none
	unsure bool   // the ETag is not what the write record's MD5 gives
}

// getOnce reads the object once. Body, token and write record come from
// the same open file; unsure reports an ETag that the record does not
// prove belongs to this body (see GetVersion).
func (s *Store) getOnce(ctx context.Context, key string) (getResult, error) {
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)})
	if err != nil {
		if isNotFound(err) {
			return getResult{}, ErrNotFound
		}
		return getResult{}, err
	}
	defer out.Body.Close()
	tok, err := s.parseToken(out.Metadata)
	if err != nil {
		return getResult{}, err
	}
	body, err := io.ReadAll(out.Body)
	if err != nil {
		return getResult{}, fmt.Errorf("read the body: %w", err)
	}
	r := getResult{Version: Version{ETag: aws.ToString(out.ETag), Token: tok}, body: body}
	if raw, ok := lookupMeta(out.Metadata, s.writeKey); ok {
		r.record = raw
		if rec, ok := parseWriteRecord(raw); ok && !s.opaque.Load() && !rec.opaque && r.ETag != rec.etag() {
			r.unsure = true
		}
	}
	return r, nil
}

// Head returns the object's current version (ETag and token), which
// [Store.PutAfter] accepts. It costs one HEAD request when the object has
// a write record that proves its ETag and token belong together, and
// otherwise two or more: it reads until two HEADs in a row agree, up to
// [Options.MaxAttempts]+1 reads (see the package doc). Errors:
// [ErrNotFound], [ErrContention] (no two reads agreed), [ErrBadMetadata],
// [ErrInvalidArgument], the context's cause, S3 errors.
func (s *Store) Head(ctx context.Context, key string) (Version, error) {
	if err := s.check("head", key); err != nil {
		return Version{}, err
	}
	st, err := s.readVersion(ctx, key)
	if err == nil && !st.Exists() {
		err = ErrNotFound
	}
	return st.Version, s.wrap(ctx, "head", key, err)
}

// Delete removes the object unless it carries a token newer than tok. It
// costs two requests: a HEAD (two over an object without a write record, as
// for Put), then a DELETE conditional on the ETag it read (If-Match). A
// lost race (412, 409, 404) makes it read and decide again, up to
// [Options.MaxAttempts] times. Deleting an absent key succeeds after the
// HEAD, sending nothing else.
//
// The token goes with the object: after a delete, the key is absent and a
// later Put with any token, older ones included, creates it again. Keep an
// object (an empty tombstone written with Put) when the fence must outlive
// the data.
//
// Errors: [*fence.StaleError], [ErrContention], [ErrInvalidArgument],
// [ErrBadMetadata], [ErrOutcomeUnknown], the context's cause, S3 errors,
// as for [Store.Put].
func (s *Store) Delete(ctx context.Context, key string, tok fence.Token) error {
	if err := s.check("delete", key); err != nil {
		return err
	}
	if err := s.checkToken("delete", key, tok); err != nil {
		return err
	}
	return s.wrap(ctx, "delete", key, s.deleteLoop(ctx, key, tok))
}

func (s *Store) deleteLoop(ctx context.Context, key string, tok fence.Token) error {
	w := &writeState{op: "delete"}
	for attempt := 0; attempt <= s.maxAttempts; attempt++ {
		st, err := s.readVersion(ctx, key)
		if err != nil {
			return w.fail(fmt.Errorf("read the current version: %w", err))
		}
		if !st.Exists() {
			return nil
		}
		if attempt == s.maxAttempts {
			break
		}
		if err := fence.Check(s.resource(key), tok, st.Token); err != nil {
			obs.StaleRejected(ctx, obs.StoreS3)
			return w.fail(err)
		}
		_, err = s.client.DeleteObject(ctx, &s3.DeleteObjectInput{
			Bucket: aws.String(s.bucket), Key: aws.String(key), IfMatch: aws.String(st.ETag),
		}, noSDKRetry)
		if done, err := w.settle(ctx, err); done {
			return err
		}
	}
	return w.giveUp(s.maxAttempts)
}

// headState is what a HEAD tells a writer: the version, and the write id of
// the put that wrote it.
type headState struct {
	Version
	record    writeRecord
	hasRecord bool
}

// head reads the object's version; an absent key is the zero headState
// and no error.
func (s *Store) head(ctx context.Context, key string) (headState, error) {
	out, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)})
	if err != nil {
		if isNotFound(err) {
			return headState{}, nil
		}
		return headState{}, err
	}
	tok, err := s.parseToken(out.Metadata)
	if err != nil {
		return headState{}, err
	}
	etag := aws.ToString(out.ETag)
	if etag == "" {
		return headState{}, errors.New("the object has no ETag; it cannot be written conditionally")
	}
	st := headState{Version: Version{ETag: etag, Token: tok}}
	if v, ok := lookupMeta(out.Metadata, s.writeKey); ok {
		st.record, st.hasRecord = parseWriteRecord(v)
	}
	return st, nil
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
	if errors.As(err, new(refusedError)) {
		return outcomeFailed // a step before the conditional write failed
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

// httpStatus is the status of the response err came from, 0 when there was
// none (a transport error, a cancelled context).
func httpStatus(err error) int {
	var re interface{ HTTPStatusCode() int }
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

func errorCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// isNotFound reports a 404 about the key (not the bucket). A HEAD's 404 has
// no body, so a missing bucket looks like a missing key there; the
// conditional write that follows then fails with NoSuchBucket.
func isNotFound(err error) bool {
	return httpStatus(err) == http.StatusNotFound && errorCode(err) != "NoSuchBucket"
}
