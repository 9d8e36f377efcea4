package blobfence

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/fencekit/fencekit/fence"
)

// Writing the same bytes again.
//
// The If-Match of a put is only as good as the ETag is unique: S3's ETag of
// a PUT is the MD5 of the bytes, so when a newer holder writes the bytes an
// older version had, a writer that read the older version and paused
// finds its ETag again and its conditional write passes over the newer
// token. A body has two ETags the store can give it: the MD5 of a PUT, and
// md5(md5)-1 of a one-part multipart upload. A put of the bytes the object
// already holds uses the form the current version does not, so its ETag
// changes.
//
// Two forms are not enough for every history: in a run of writes of the
// same bytes, if the form that is about to be written again was written
// before under an older token, a writer that read that version holds the
// ETag the new write recreates. The write record remembers, for the run,
// the token of the other form (alt). A put of the same bytes:
//   - under the token and fields the object has: does nothing (one HEAD);
//   - otherwise writes the other form when that form has no token in the
//     run or has this very token;
//   - otherwise fails with ErrSameBytes, writing nothing.
//
// So the same bytes can be fenced under two successive tokens (and
// rewritten any number of times under one token). Bodies that go back to
// an earlier content (A, B, A) are not tracked: the docs tell users to
// keep a version or the token in such bodies.

// ErrSameBytes is returned (wrapped) by a put of the bytes the object
// already holds when no ETag is left for them that an older writer could
// not hold: the same bytes were written under two older tokens (or under
// one older token, and then again with other fields). Nothing is written.
// Put a version, a timestamp or the token into the body.
var ErrSameBytes = errors.New("blobfence: the same bytes were already written under older tokens; S3 has no new ETag for them")

type form int

const (
	formPut       form = iota // a single PUT
	formMultipart             // a one-part multipart upload
	formNone                  // nothing to write: the object is already what the put asks for
)

// plan decides how to write a body with MD5 sum, token tok and fields
// digest fields over the current version st, and the record's alt for the
// new version.
func plan(st headState, sum [md5.Size]byte, tok fence.Token, fields string) (f form, alt fence.Token, hasAlt bool, err error) {
	switch st.ETag {
	case plainETag(sum):
		f = formMultipart
	case multipartETag(sum):
		f = formPut
	default:
		return formPut, 0, false, nil // other bytes (or an ETag that is not a content hash)
	}
	var rec writeRecord
	if st.hasRecord && st.record.md5 == hex.EncodeToString(sum[:]) {
		rec = st.record
	}
	if rec.tok == tok && rec.fields == fields && st.hasRecord {
		return formNone, 0, false, nil
	}
	if rec.hasAlt && rec.alt != tok {
		return 0, 0, false, ErrSameBytes
	}
	return f, st.Token, true, nil
}

// digest is the digest of the object's other fields that the write record
// keeps: 16 hex digits.
func (f objectFields) digest() string {
	var b strings.Builder
	for _, v := range []string{f.contentType, f.cacheControl, f.contentDisposition, f.contentEncoding, string(f.sse), f.kmsKeyID} {
		b.WriteString(v)
		b.WriteByte(0)
	}
	for _, k := range slices.Sorted(maps.Keys(f.metadata)) {
		b.WriteString(k + "=" + f.metadata[k])
		b.WriteByte(0)
	}
	sum := md5.Sum([]byte(b.String()))
	return hex.EncodeToString(sum[:8])
}

// writeMultipart writes the body as a one-part multipart upload whose
// completion is conditional on cur, and returns the new ETag. Its ETag is
// md5(md5(body))-1, not the body's MD5 that a PUT would give, so it
// differs from cur's ETag when cur holds the same bytes. The upload is
// aborted when it does not complete.
func (s *Store) writeMultipart(ctx context.Context, key string, b *body, cur Version, md map[string]string, f objectFields) (string, error) {
	create := &s3.CreateMultipartUploadInput{Bucket: aws.String(s.bucket), Key: aws.String(key), Metadata: md}
	f.createInput(create)
	up, err := s.client.CreateMultipartUpload(ctx, create)
	if err != nil {
		return "", fmt.Errorf("create a multipart upload: %w", errRefused(err))
	}
	done := false
	defer func() {
		if !done {
			s.abort(ctx, key, up.UploadId)
		}
	}()
	if _, err := b.r.Seek(b.start, io.SeekStart); err != nil {
		return "", fmt.Errorf("rewind the body: %w", errRefused(err))
	}
	part, err := s.client.UploadPart(ctx, &s3.UploadPartInput{
		Bucket: aws.String(s.bucket), Key: aws.String(key), UploadId: up.UploadId,
		PartNumber: aws.Int32(1), Body: b.r, ContentLength: aws.Int64(b.size),
	})
	if err != nil {
		return "", fmt.Errorf("upload the part: %w", errRefused(err))
	}
	in := &s3.CompleteMultipartUploadInput{
		Bucket: aws.String(s.bucket), Key: aws.String(key), UploadId: up.UploadId,
		MultipartUpload: onePart(part),
	}
	in.IfMatch, in.IfNoneMatch = condition(cur)
	out, err := s.client.CompleteMultipartUpload(ctx, in, noSDKRetry)
	if err != nil {
		return "", err
	}
	done = true
	etag := aws.ToString(out.ETag)
	if etag != multipartETag(b.md5) {
		s.opaque.Store(true)
	}
	return etag, nil
}

// onePart lists the one part of an upload for CompleteMultipartUpload,
// with the checksum the SDK sent with the part, if any, as S3 wants it back.
func onePart(part *s3.UploadPartOutput) *types.CompletedMultipartUpload {
	return &types.CompletedMultipartUpload{Parts: []types.CompletedPart{{
		ETag: part.ETag, PartNumber: aws.Int32(1),
		ChecksumCRC32: part.ChecksumCRC32, ChecksumCRC32C: part.ChecksumCRC32C, ChecksumCRC64NVME: part.ChecksumCRC64NVME,
		ChecksumSHA1: part.ChecksumSHA1, ChecksumSHA256: part.ChecksumSHA256,
	}}}
}

// abort aborts an upload that did not complete, even when ctx has ended
// (bounded by abortTimeout). A failure is ignored: the upload's part stays
// until the bucket's lifecycle rule for incomplete uploads removes it.
func (s *Store) abort(ctx context.Context, key string, uploadID *string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), abortTimeout)
	defer cancel()
	_, _ = s.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: aws.String(s.bucket), Key: aws.String(key), UploadId: uploadID})
}

const abortTimeout = 10 * time.Second
