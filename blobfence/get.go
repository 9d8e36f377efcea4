package blobfence

import (
	"context"
	"crypto/md5"
	"fmt"
	"io"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/fencekit/fencekit/fence"
)

// Get returns the object's body and the token of the write that stored it
// (0 for an object another tool wrote): what Put stored, without the
// envelope. It costs one request. Errors: [ErrNotFound] when the key is
// absent or deleted, [ErrBadMetadata] when the envelope or the token
// metadata does not parse, [fence.ErrInvalid] for a bad key, the
// context's cause when ctx ended, S3 errors otherwise.
func (s *Store) Get(ctx context.Context, key string) ([]byte, fence.Token, error) {
	if err := s.check("get", key); err != nil {
		return nil, 0, err
	}
	g, err := s.getOnce(ctx, key, "")
	if err == nil && g.deleted {
		err = ErrNotFound
	}
	if err != nil {
		return nil, 0, s.wrap(ctx, "get", key, err)
	}
	return g.body, g.token, nil
}

// GetVersion is [Store.Get] that also returns the object's version, for
// [After]. It costs one request on a server whose ETags are the MD5 of the
// bytes: the MD5 of what it read proves the ETag is this body's. Otherwise
// it also reads the state as a put does (one or two HEADs) and checks that
// the state's write is the one it read, reading again, up to
// [Options.MaxAttempts]+1 times, while they differ ([ErrContention] if
// they never agree). Other errors as for Get.
func (s *Store) GetVersion(ctx context.Context, key string) ([]byte, Version, error) {
	if err := s.check("get", key); err != nil {
		return nil, Version{}, err
	}
	for range s.maxAttempts + 1 {
		g, err := s.getOnce(ctx, key, "")
		if err == nil && g.deleted {
			err = ErrNotFound
		}
		if err != nil {
			return nil, Version{}, s.wrap(ctx, "get", key, err)
		}
		if g.proven {
			return g.body, g.Version, nil
		}
		st, err := s.read(ctx, key)
		if err != nil {
			return nil, Version{}, s.wrap(ctx, "get", key, err)
		}
		if st.Version == g.Version && st.raw == g.raw && g.raw != "" {
			return g.body, g.Version, nil
		}
	}
	return nil, Version{}, s.wrap(ctx, "get", key, fmt.Errorf("%w: no GET's ETag was proven to be its body's (%d reads)", ErrContention, s.maxAttempts+1))
}

// got is one GET of an object: its state and the caller's body.
type got struct {
	state
	body   []byte
	fields objectFields // the object's other fields, as a claim rewrites them
	proven bool         // the ETag is the MD5 of the bytes read
}

// getOnce reads the object once, with If-Match: ifMatch unless it is "".
// An envelope's token and state come from its header, which the body
// carries; an object without one (written by the second release or by
// another tool) is its bytes as they are, with the token of its metadata.
func (s *Store) getOnce(ctx context.Context, key, ifMatch string) (got, error) {
	in := &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)}
	if ifMatch != "" {
		in.IfMatch = aws.String(ifMatch)
	}
	out, err := s.client.GetObject(ctx, in)
	if err != nil {
		if isNotFound(err) {
			return got{}, ErrNotFound
		}
		return got{}, err
	}
	defer out.Body.Close()
	stored, err := io.ReadAll(out.Body)
	if err != nil {
		return got{}, fmt.Errorf("read the body: %w", err)
	}
	st, err := s.stateOf(key, aws.ToString(out.ETag), out.Metadata)
	if err != nil {
		return got{}, err
	}
	// The ETag is the MD5 of these bytes, or the one-part upload ETag the
	// second release's record predicts for them.
	sum := md5.Sum(stored)
	proven := st.etag == plainETag(sum) || st.etag == multipartETag(sum) && st.etag == st.record.etag
	g := got{state: st, body: stored, proven: proven}
	if st.record.envelope {
		e, body, err := Decode(stored)
		if err != nil {
			return got{}, err
		}
		g.body, g.token, g.deleted = body, e.Token, e.Deleted
		g.record.nonce = e.Nonce
	}
	g.fields = objectFields{
		contentType: aws.ToString(out.ContentType), cacheControl: aws.ToString(out.CacheControl),
		contentDisposition: aws.ToString(out.ContentDisposition), contentEncoding: aws.ToString(out.ContentEncoding),
		sse: out.ServerSideEncryption, kmsKeyID: aws.ToString(out.SSEKMSKeyId),
	}
	for k, v := range out.Metadata {
		if !strings.EqualFold(k, s.tokenKey) && !strings.EqualFold(k, s.writeKey) {
			if g.fields.metadata == nil {
				g.fields.metadata = map[string]string{}
			}
			g.fields.metadata[k] = v
		}
	}
	return g, nil
}
