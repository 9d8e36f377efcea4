package blobfence

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/fencekit/fencekit/fence"
)

// Version is one state of an object, as [Store.Head], [Store.GetVersion]
// and [Store.PutReader] return it: its key, its ETag and its token. Pass
// it to a later put with [After] to skip that put's HEAD. It can only come
// from a Store, so its ETag and token belong together; the zero Version
// names nothing.
type Version struct {
	key, etag string
	token     fence.Token
}

// Key is the object key the version belongs to.
func (v Version) Key() string { return v.key }

// ETag is the object's ETag, quoted as S3 sends it.
func (v Version) ETag() string { return v.etag }

// Token is the token of the write that produced the version.
func (v Version) Token() fence.Token { return v.token }

// state is what a writer knows of the key before it writes: the version
// (no ETag when no object has the key), whether it is a tombstone, and
// the write record.
type state struct {
	Version
	deleted bool
	record  writeRecord
	raw     string // the write record as stored, "" when none
}

// exists reports whether an object (a tombstone included) has the key.
func (st state) exists() bool { return st.etag != "" }

// live reports whether readers see the object: it exists and is no tombstone.
func (st state) live() bool { return st.exists() && !st.deleted }

// headOnce reads the key's state with one HEAD; an absent key is the zero
// state and no error.
func (s *Store) headOnce(ctx context.Context, key string) (state, error) {
	out, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)})
	if err != nil {
		if isNotFound(err) {
			return state{}, nil
		}
		return state{}, err
	}
	return s.stateOf(key, aws.ToString(out.ETag), out.Metadata)
}

// stateOf is the state an object's ETag and metadata describe.
func (s *Store) stateOf(key, etag string, md map[string]string) (state, error) {
	if etag == "" {
		return state{}, errors.New("the object has no ETag; it cannot be written conditionally")
	}
	tok, err := s.parseToken(md)
	if err != nil {
		return state{}, err
	}
	st := state{Version: Version{key: key, etag: etag, token: tok}}
	if raw, ok := lookupMeta(md, s.writeKey); ok {
		st.raw = raw
		st.record, _ = parseRecord(raw, tok)
		st.deleted = st.record.deleted
	}
	return st, nil
}

// read reads the key's state until the read is proven to pair the ETag
// with the metadata of the same write: one HEAD whose ETag is the one the
// write record predicts, or else two HEADs in a row that agree. (A HEAD is
// not one atomic read on every server: versitygw's posix backend reads the
// metadata and then the ETag by path, so a HEAD racing a PUT can return the
// new ETag with the old token. Every write leaves new bytes, so no state
// comes back: two agreeing HEADs saw the same write.) An absent key is the
// zero state. At most maxAttempts+1 HEADs.
func (s *Store) read(ctx context.Context, key string) (state, error) {
	var prev *state
	for range s.maxAttempts + 1 {
		st, err := s.headOnce(ctx, key)
		if err != nil {
			return state{}, err
		}
		if !st.exists() || st.etag == st.record.etag || prev != nil && prev.Version == st.Version && prev.raw == st.raw {
			return st, nil
		}
		prev = &st
	}
	return state{}, fmt.Errorf("%w: the object kept changing between reads (%d reads)", ErrContention, s.maxAttempts+1)
}

// Head returns the object's current version, for [After]. It costs one
// HEAD request on a server whose ETags are the MD5 of the bytes, and two
// otherwise (see [Store.PutReader]). Errors: [ErrNotFound] when the key is
// absent or deleted, [ErrContention] (no two reads agreed),
// [ErrBadMetadata], [fence.ErrInvalid], the context's cause, S3 errors.
func (s *Store) Head(ctx context.Context, key string) (Version, error) {
	if err := s.check("head", key); err != nil {
		return Version{}, err
	}
	st, err := s.read(ctx, key)
	if err == nil && !st.live() {
		err = ErrNotFound
	}
	if err != nil {
		return Version{}, s.wrap(ctx, "head", key, err)
	}
	return st.Version, nil
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
