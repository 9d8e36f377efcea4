package blobfence

import (
	"context"
	"errors"
	"net/http"

	"github.com/aws/smithy-go"

	"github.com/fencekit/fencekit/fence"
)

// Version is one state of an object, as [Store.Head], [Store.GetVersion]
// and [Store.PutReader] return it: its key, its ETag and its token. Pass
// it to a later put with [After] to skip that put's read. It can only come
// from a Store, so its ETag and token belong together; the zero Version
// names nothing.
type Version struct {
	key, etag string
	token     fence.Token
	created   bool // a Create's object: fenced writes refuse the key
}

// ETag is the object's ETag, quoted as S3 sends it.
func (v Version) ETag() string { return v.etag }

// Token is the token of the write that produced the version.
func (v Version) Token() fence.Token { return v.token }

// state is what a writer knows of the key before it writes: the version
// (no ETag when no object has the key), whether it is a tombstone, and
// the envelope's nonce (none for an object another tool wrote).
type state struct {
	Version
	deleted  bool
	envelope bool
	nonce    string
	creator  string // a Create's "<nonce> <identity>" metadata on bytes that are no envelope
}

// exists reports whether an object (a tombstone included) has the key.
func (st state) exists() bool { return st.etag != "" }

// live reports whether readers see the object: it exists and is no tombstone.
func (st state) live() bool { return st.exists() && !st.deleted }

// read reads the key's state: an ETag and the token of the version that
// has it, from that version's own bytes. A ranged GET of the first
// maxHeaderLen bytes gives the ETag, the envelope's header and the write
// record; the record proves the pair when it names the header's nonce and
// predicts the ETag. Otherwise (the metadata was read apart from the bytes,
// or an outside edit dropped it) a whole GET conditional on the ETag proves
// it when the MD5 of the bytes is the ETag. A server whose ETags are not
// MD5-shaped is trusted to return the bytes and ETag of one version. An
// absent key is the zero state. At most 2(maxAttempts+1) GETs.
func (s *Store) read(ctx context.Context, key string) (state, error) {
	for range s.maxAttempts + 1 {
		g, err := s.getOnce(ctx, key, "", true)
		if httpStatus(err) == http.StatusRequestedRangeNotSatisfiable { // an empty object
			g, err = s.getOnce(ctx, key, "", false)
		}
		if errors.Is(err, ErrNotFound) {
			return state{}, nil
		}
		if err != nil {
			return state{}, err
		}
		if g.proven {
			return g.state, nil
		}
		g, err = s.getOnce(ctx, key, g.etag, false)
		switch {
		case errors.Is(err, ErrNotFound) || httpStatus(err) == http.StatusPreconditionFailed:
			continue // it changed; read again
		case err != nil:
			return state{}, err
		case g.proven:
			return g.state, nil
		}
	}
	return state{}, errorf("%v: no read proved that the ETag and the bytes it returned belong together (%d rounds)", ErrContention, s.maxAttempts+1)
}

// Head returns the object's current version, for [After]. It costs one
// ranged GET, two when the object's metadata does not prove it (see
// [Store.PutReader]). Errors: [ErrNotFound] when the key is absent or
// deleted, [ErrContention] (no read was proven),
// [ErrBadMetadata], [fence.ErrInvalid], the context's cause, S3 errors.
func (s *Store) Head(ctx context.Context, key string) (Version, error) {
	if err := s.check("head", key); err != nil {
		return Version{}, err
	}
	st, err := s.read(ctx, key)
	if err == nil {
		s.versions.put(st.Version)
	}
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

// isNotFound reports a 404 about the key (not the bucket).
func isNotFound(err error) bool {
	return httpStatus(err) == http.StatusNotFound && errorCode(err) != "NoSuchBucket"
}
