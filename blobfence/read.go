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
)

// Get returns the object's body and the token in its metadata (0 when it
// carries none): what Put stored. It costs one request. Errors:
// [ErrNotFound] when the key is absent, [ErrBadMetadata] when the token
// metadata does not parse, [ErrInvalidArgument] for a bad key or Store, S3
// errors otherwise.
func (s *Store) Get(ctx context.Context, key string) ([]byte, fence.Token, error) {
	if err := s.check("get", key); err != nil {
		return nil, 0, err
	}
	body, v, _, err := s.getOnce(ctx, key)
	return body, v.Token, err
}

// GetVersion is [Store.Get] that also returns the object's ETag, which
// [Store.PutAfter] accepts to write again in one request. It costs one
// request, more when the server paired the body with the ETag of another
// version (a GET racing a PUT on a server whose reads are not atomic, which
// the write record reveals): then it reads again, up to
// [Options.MaxAttempts]+1 times, and returns an error wrapping
// [ErrContention] if no read was whole. Other errors as for Get.
func (s *Store) GetVersion(ctx context.Context, key string) ([]byte, Version, error) {
	if err := s.check("get", key); err != nil {
		return nil, Version{}, err
	}
	reads := s.maxAttempts + 1
	for range reads {
		body, v, torn, err := s.getOnce(ctx, key)
		if err != nil || !torn {
			return body, v, err
		}
	}
	return nil, Version{}, fmt.Errorf("%w: get %s: every one of %d reads paired the body with another version's ETag",
		ErrContention, s.resource(key), reads)
}

// getOnce reads the object once. Body, token and write record come from
// the same open file; torn reports an ETag that the record proves belongs
// to another version (read while a PUT replaced the object).
func (s *Store) getOnce(ctx context.Context, key string) (body []byte, v Version, torn bool, err error) {
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)})
	if err != nil {
		if isNotFound(err) {
			return nil, Version{}, false, fmt.Errorf("%w: %s", ErrNotFound, s.resource(key))
		}
		return nil, Version{}, false, fmt.Errorf("blobfence: get %q: %w", key, err)
	}
	defer out.Body.Close()
	tok, err := s.parseToken(key, out.Metadata)
	if err != nil {
		return nil, Version{}, false, err
	}
	body, err = io.ReadAll(out.Body)
	if err != nil {
		return nil, Version{}, false, fmt.Errorf("blobfence: get %q: read the body: %w", key, err)
	}
	v = Version{ETag: aws.ToString(out.ETag), Token: tok}
	if raw, ok := lookupMeta(out.Metadata, s.writeKey); ok {
		if rec, ok := parseWriteRecord(raw); ok && isMD5ETag(v.ETag) && v.ETag != `"`+rec.md5+`"` {
			torn = true
		}
	}
	return body, v, torn, nil
}

// Head returns the object's current version (ETag and token), which
// [Store.PutAfter] accepts. It costs one HEAD request when the object has
// a write record that proves its ETag and token belong together, and
// otherwise two or more: it reads until two HEADs in a row agree, up to
// [Options.MaxAttempts]+1 reads (see the package doc). Errors:
// [ErrNotFound], [ErrContention] (no two reads agreed), [ErrBadMetadata],
// [ErrInvalidArgument], S3 errors.
func (s *Store) Head(ctx context.Context, key string) (Version, error) {
	if err := s.check("head", key); err != nil {
		return Version{}, err
	}
	st, err := s.readVersion(ctx, key)
	if err != nil {
		return Version{}, fmt.Errorf("blobfence: head %q: %w", key, err)
	}
	if !st.Exists() {
		return Version{}, fmt.Errorf("%w: %s", ErrNotFound, s.resource(key))
	}
	return st.Version, nil
}

// Delete removes the object unless it carries a token newer than tok. It
// costs two requests: a HEAD (two over an object without a write record, as
// for Put), then a DELETE conditional on the ETag it read (If-Match). A lost race (412, 409, 404) makes it read and decide again,
// up to [Options.MaxAttempts] times. Deleting an absent key succeeds after
// the HEAD, sending nothing else.
//
// The token goes with the object: after a delete, the key is absent and a
// later Put with any token, older ones included, creates it again. Keep an
// object (an empty tombstone written with Put) when the fence must outlive
// the data.
//
// Errors: [*fence.StaleError], [ErrContention], [ErrInvalidArgument],
// [ErrBadMetadata], [ErrOutcomeUnknown], S3 errors, as for [Store.Put].
func (s *Store) Delete(ctx context.Context, key string, tok fence.Token) error {
	if err := s.check("delete", key); err != nil {
		return err
	}
	if err := checkToken("delete", key, tok); err != nil {
		return err
	}
	w := &writeState{op: "delete", key: key}
	for attempt := 0; attempt <= s.maxAttempts; attempt++ {
		st, err := s.readVersion(ctx, key)
		if err != nil {
			return w.fail(fmt.Errorf("blobfence: delete %q: read the current version: %w", key, err))
		}
		if !st.Exists() {
			return nil
		}
		if attempt == s.maxAttempts {
			break
		}
		if err := fence.Check(s.resource(key), tok, st.Token); err != nil {
			return w.fail(fmt.Errorf("blobfence: delete %q: %w", key, err))
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
	tok, err := s.parseToken(key, out.Metadata)
	if err != nil {
		return headState{}, err
	}
	etag := aws.ToString(out.ETag)
	if etag == "" {
		return headState{}, fmt.Errorf("blobfence: object %s has no ETag; it cannot be written conditionally", s.resource(key))
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
