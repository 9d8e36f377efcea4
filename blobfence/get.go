package blobfence

import (
	"bytes"
	"context"
	"crypto/md5"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/fencekit/fencekit/fence"
)

// Get returns the object's body and the token of the write that stored it
// (0 for an object another tool wrote): what Put stored, without the
// envelope. It costs one request, and remembers the version when the
// object's write record or the MD5 of the bytes proves it (see
// [Options.VersionCache]). Errors: [ErrNotFound] when the key is
// absent or deleted, [ErrBadMetadata] when the envelope or the token
// metadata does not parse, [fence.ErrInvalid] for a bad key, the
// context's cause when ctx ended, S3 errors otherwise.
func (s *Store) Get(ctx context.Context, key string) ([]byte, fence.Token, error) {
	if err := s.check("get", key); err != nil {
		return nil, 0, err
	}
	g, err := s.getOnce(ctx, key, "", false)
	if err == nil && g.proven {
		s.versions.put(g.Version)
	}
	if err == nil && g.deleted {
		err = ErrNotFound
	}
	if err != nil {
		return nil, 0, s.wrap(ctx, "get", key, err)
	}
	return g.body, g.token, nil
}

// GetVersion is [Store.Get] that also returns the object's version, for
// [After]. It costs one request when the object's write record or the MD5
// of the bytes proves that the ETag is this body's; otherwise it reads
// again, up to [Options.MaxAttempts]+1 times ([ErrContention] if no read
// is proven). Other errors as for Get.
func (s *Store) GetVersion(ctx context.Context, key string) ([]byte, Version, error) {
	if err := s.check("get", key); err != nil {
		return nil, Version{}, err
	}
	for range s.maxAttempts + 1 {
		g, err := s.getOnce(ctx, key, "", false)
		if err == nil && g.deleted {
			err = ErrNotFound
		}
		if err != nil {
			return nil, Version{}, s.wrap(ctx, "get", key, err)
		}
		if g.proven {
			s.versions.put(g.Version)
			return g.body, g.Version, nil
		}
	}
	return nil, Version{}, s.wrap(ctx, "get", key, errorf("%v: no GET's ETag was proven to be its body's (%d reads)", ErrContention, s.maxAttempts+1))
}

// got is one GET of an object: its state and the caller's body.
type got struct {
	state
	body   []byte
	fields objectFields // the object's other fields, as a claim rewrites them
	proven bool         // the ETag is the one of the version whose bytes were read
}

// getOnce reads the object once, with If-Match: ifMatch unless it is "";
// with headerOnly, only its first maxHeaderLen bytes (asked for with a
// Range, and no more read when a server ignores it).
func (s *Store) getOnce(ctx context.Context, key, ifMatch string, headerOnly bool) (got, error) {
	in := &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)}
	if ifMatch != "" {
		in.IfMatch = aws.String(ifMatch)
	}
	var r io.Reader
	if headerOnly {
		in.Range = aws.String(fmt.Sprintf("bytes=0-%d", maxHeaderLen-1))
	}
	out, err := s.client.GetObject(ctx, in, quietChecksums)
	if err != nil {
		if isNotFound(err) {
			return got{}, ErrNotFound
		}
		return got{}, err
	}
	defer out.Body.Close()
	r = out.Body
	if headerOnly {
		r = io.LimitReader(out.Body, maxHeaderLen)
	}
	stored, err := io.ReadAll(r)
	if err != nil {
		return got{}, fmt.Errorf("read the body: %w", err)
	}
	kms := out.ServerSideEncryption == types.ServerSideEncryptionAwsKms || out.ServerSideEncryption == types.ServerSideEncryptionAwsKmsDsse
	whole := !headerOnly || len(stored) < maxHeaderLen
	g, err := s.decode(key, aws.ToString(out.ETag), out.Metadata, kms, stored, whole)
	if err != nil {
		return got{}, err
	}
	g.fields = objectFields{
		contentType: aws.ToString(out.ContentType), cacheControl: aws.ToString(out.CacheControl),
		contentDisposition: aws.ToString(out.ContentDisposition), contentEncoding: aws.ToString(out.ContentEncoding),
		sse: out.ServerSideEncryption, kmsKeyID: aws.ToString(out.SSEKMSKeyId),
	}
	for k, v := range out.Metadata {
		if !strings.EqualFold(k, s.tokenKey) && !strings.EqualFold(k, s.writeKey) && !strings.EqualFold(k, s.createKey) {
			if g.fields.metadata == nil {
				g.fields.metadata = map[string]string{}
			}
			g.fields.metadata[k] = v
		}
	}
	return g, nil
}

// quietChecksums stops the SDK from logging "Response has no supported
// checksum" for a GET whose reply has none (SeaweedFS's, a ranged GET's):
// the store proves what it reads itself (see [Store.decode]).
func quietChecksums(o *s3.Options) { o.DisableLogOutputChecksumValidationSkipped = true }

// decode is the state and body that the bytes read with etag and md
// describe (all the object's bytes when whole, else its start). The token
// is what the bytes say: an envelope's header, or, for bytes that are no
// envelope, a record-only object's write record, or 0 (another tool wrote
// them). proven says the ETag is that of the version whose bytes were
// read: the write record names the header's nonce and predicts the ETag,
// or the MD5 of the whole bytes is the ETag, or the ETag is not the MD5
// kind (then the server is trusted to return the bytes and ETag of one
// version).
func (s *Store) decode(key, etag string, md map[string]string, kms bool, stored []byte, whole bool) (got, error) {
	if etag == "" {
		return got{}, errors.New("the object has no ETag; it cannot be written conditionally")
	}
	g := got{state: state{Version: Version{key: key, etag: etag}}, body: stored}
	raw, hasRecord := lookupMeta(md, s.writeKey)
	rec, _ := parseRecord(raw)
	sum := md5.Sum(stored)
	if bytes.HasPrefix(stored, []byte(headerMagic)) {
		e, body, err := decode(stored)
		if err != nil {
			return got{}, err
		}
		g.body, g.token, g.deleted, g.envelope, g.nonce = body, e.Token, e.Deleted, true, e.Nonce
		g.proven = rec.envelope && rec.nonce == e.Nonce && rec.etag == etag || whole && plainETag(sum) == etag
	} else {
		if rec.old {
			g.token = rec.token
		}
		switch {
		case rec.old && rec.etag == etag:
			g.proven = true
		case whole && plainETag(sum) == etag:
			// Another tool's bytes (no record), or a record-only object
			// whose record is of these very bytes.
			g.proven = !hasRecord || rec.old && rec.sum == sum
		}
	}
	if c, ok := lookupMeta(md, s.createKey); ok && !g.envelope {
		// A Create's object: its token is a hint from metadata, shown by
		// Get; writes refuse the key (see Store.Create).
		g.creator, g.created = c, true
		g.token = metaToken(md, s.tokenKey)
	}
	if !g.proven && (kms || !md5Shaped(etag)) {
		g.proven = true
	}
	return g, nil
}
