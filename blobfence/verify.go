package blobfence

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// VerifyKeyPrefix starts the scratch key that [Store.Verify] writes and
// deletes: <VerifyKeyPrefix><random>.
const VerifyKeyPrefix = "fencekit-verify/"

// noMatch is an ETag no object has.
const noMatch = `"00000000000000000000000000000000"`

// Verify checks, on a scratch key of the bucket, that the server honours
// what fencing needs: If-None-Match: * and If-Match on PUT, If-Match on
// CompleteMultipartUpload (the rewrite of identical bytes), If-Match on
// DELETE, and user metadata kept with the object. Run it once at start-up
// against a server you have not tested: a server or proxy that ignores a
// condition lets stale writes through silently.
//
// It costs about fifteen requests and deletes the scratch key
// ([VerifyKeyPrefix] and a random suffix) before it returns; it needs the
// permissions a Store needs on that key. Errors: one wrapping
// [ErrUnsupported] that names everything missing ("If-Match on PUT is
// ignored", ...); the S3 error of a request that failed otherwise (a
// missing bucket, denied access); the context's cause.
func (s *Store) Verify(ctx context.Context) error {
	if s == nil {
		return fmt.Errorf("%w: verify on a nil *Store", ErrInvalidArgument)
	}
	key := VerifyKeyPrefix + rand.Text()
	defer func() { // whatever happened, leave nothing behind
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), abortTimeout)
		defer cancel()
		_, _ = s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)})
	}()
	missing, err := s.probe(ctx, key)
	if err != nil {
		return s.wrap(ctx, "verify", key, err)
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: bucket %s: %s", ErrUnsupported, s.bucket, strings.Join(missing, "; "))
	}
	return nil
}

// probe runs Verify's requests on key and lists what the server does not
// honour. An error means a request failed in a way that says nothing about
// conditions.
func (s *Store) probe(ctx context.Context, key string) (missing []string, err error) {
	body := []byte("fencekit verify")
	put := func(ifMatch, ifNoneMatch *string) (string, error) {
		out, err := s.client.PutObject(ctx, &s3.PutObjectInput{
			Bucket: aws.String(s.bucket), Key: aws.String(key), Body: bytes.NewReader(body),
			Metadata: map[string]string{s.tokenKey: "1"}, IfMatch: ifMatch, IfNoneMatch: ifNoneMatch,
		}, noSDKRetry)
		if err != nil {
			return "", err
		}
		return aws.ToString(out.ETag), nil
	}
	// refused runs a write that must be refused with 412 or 409 and says
	// what is missing when it was not.
	refused := func(what string, err error) {
		switch {
		case err == nil:
			missing = append(missing, what+" is ignored (a write that had to be refused was accepted)")
		case classify(err) != outcomeRace:
			missing = append(missing, fmt.Sprintf("%s is not supported (%v)", what, err))
		}
	}
	accepted := func(what string, err error) error {
		if err == nil {
			return nil
		}
		if st := httpStatus(err); st == 400 || st == 412 || st == 501 {
			missing = append(missing, fmt.Sprintf("%s is not supported (%v)", what, err))
			return nil
		}
		return err
	}

	etag, err := put(nil, aws.String("*"))
	if err != nil {
		return missing, accepted("If-None-Match: * on PUT", err) // nothing more to probe
	}
	_, err = put(nil, aws.String("*"))
	refused("If-None-Match: * on PUT", err)
	head, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)})
	if err != nil {
		return missing, err
	}
	if v, _ := lookupMeta(head.Metadata, s.tokenKey); v != "1" {
		missing = append(missing, fmt.Sprintf("user metadata is not kept (x-amz-meta-%s came back as %q)", s.tokenKey, v))
	}
	etag = aws.ToString(head.ETag)
	_, err = put(aws.String(noMatch), nil)
	refused("If-Match on PUT", err)
	if etag, err = put(aws.String(etag), nil); err != nil {
		return missing, accepted("If-Match on PUT", err)
	}
	if etag, err = s.probeMultipart(ctx, key, body, etag, &missing); err != nil {
		return missing, err
	}
	_, err = s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key), IfMatch: aws.String(noMatch)}, noSDKRetry)
	refused("If-Match on DELETE", err)
	_, err = s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key), IfMatch: aws.String(etag)}, noSDKRetry)
	if err := accepted("If-Match on DELETE", err); err != nil && !isNotFound(err) {
		return missing, err
	}
	return missing, nil
}

// probeMultipart checks, on key holding body with ETag etag, that a
// CompleteMultipartUpload with a wrong If-Match is refused, and that one
// with the right If-Match writes the same bytes under a new ETag. It
// returns the key's ETag afterwards.
func (s *Store) probeMultipart(ctx context.Context, key string, body []byte, etag string, missing *[]string) (string, error) {
	complete := func(ifMatch string) (string, error) {
		up, err := s.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(s.bucket), Key: aws.String(key)})
		if err != nil {
			return "", errRefused(err)
		}
		completed := false
		defer func() {
			if !completed {
				s.abort(ctx, key, up.UploadId)
			}
		}()
		part, err := s.client.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String(s.bucket), Key: aws.String(key),
			UploadId: up.UploadId, PartNumber: aws.Int32(1), Body: bytes.NewReader(body), ContentLength: aws.Int64(int64(len(body)))})
		if err != nil {
			return "", errRefused(err)
		}
		out, err := s.client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
			Bucket: aws.String(s.bucket), Key: aws.String(key), UploadId: up.UploadId, IfMatch: aws.String(ifMatch),
			MultipartUpload: onePart(part),
		}, noSDKRetry)
		if err != nil {
			return "", err
		}
		completed = true
		return aws.ToString(out.ETag), nil
	}
	const what = "If-Match on CompleteMultipartUpload"
	wrong, err := complete(noMatch)
	if errors.As(err, new(refusedError)) {
		*missing = append(*missing, fmt.Sprintf("multipart uploads are not supported (%v)", err))
		return etag, nil
	}
	switch {
	case err == nil:
		*missing = append(*missing, what+" is ignored (a write that had to be refused was accepted)")
		etag = wrong
	case classify(err) != outcomeRace:
		*missing = append(*missing, fmt.Sprintf("%s is not supported (%v)", what, err))
		return etag, nil
	}
	next, err := complete(etag)
	if err != nil {
		*missing = append(*missing, fmt.Sprintf("%s is not supported (a matching ETag was refused: %v)", what, err))
		return etag, nil
	}
	if next == etag && etag == plainETag(md5.Sum(body)) {
		*missing = append(*missing, "a multipart upload of the same bytes keeps the ETag of a PUT")
	}
	return next, nil
}
