package blobfence

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/fencekit/fencekit/internal/valid"
)

// VerifyKeyPrefix starts the scratch key that [Store.Verify] writes and
// deletes: <VerifyKeyPrefix><random>.
const VerifyKeyPrefix = "fencekit-verify/"

// noMatch is an ETag no object has.
const noMatch = `"00000000000000000000000000000000"`

// cleanupTimeout bounds Verify's removal of its scratch key.
const cleanupTimeout = 10 * time.Second

// Verify checks, on a scratch key of the bucket and through the store's
// own client, what fencing relies on: PUT honours If-None-Match: * and
// If-Match, comparing with the object's current ETag (an ETag that was
// current before is refused); a write of other bytes gets another ETag;
// an ETag shaped like an MD5 is the MD5 of the bytes (unless the reply
// says aws:kms); the ETag a PUT's reply gives is the one a HEAD then shows (puts with
// [After] condition the next write on it); user metadata and the bytes
// come back as written. Run it once at start-up against a server or
// client set-up you have not tested: one that ignores a condition lets
// stale writes through silently. DELETE's conditions are not needed
// (deletes write tombstones) and not checked.
//
// Then it looks for a server that can keep an object's ETag and metadata
// from different writes (versitygw --sidecar): puts while two readers
// HEAD the key, until two HEADs in a row show such a state. Fencing does
// not rely on metadata, so such a server passes, with a warning logged
// through [slog.Default] for the tools that read the metadata. The
// probe is bounded and can miss such a state: under load it missed
// versitygw --sidecar's once in 21 runs.
//
// It costs nine requests, then at most 20 PUTs, 400 HEADs and 2 s (0.2 s
// on a local versitygw), and deletes the scratch key ([VerifyKeyPrefix]
// and a random suffix) before it returns; it needs the permissions a Store
// needs on that key, and s3:DeleteObject. Errors: one wrapping
// [ErrUnsupported] that names everything missing ("If-Match on PUT is
// ignored", ...); the S3 error of a request that failed otherwise (a
// missing bucket, denied access); the context's cause.
func (s *Store) Verify(ctx context.Context) error {
	if s == nil {
		return valid.Invalid("blobfence: verify on a nil *Store")
	}
	key := VerifyKeyPrefix + rand.Text()
	defer func() { // whatever happened, leave nothing behind
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		_, _ = s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)})
	}()
	p := &probe{s: s, key: key}
	if err := p.run(ctx); err != nil {
		return s.wrap(ctx, "verify", key, err)
	}
	if len(p.missing) > 0 {
		return errorf("%v: bucket %s: %s", ErrUnsupported, s.bucket, strings.Join(p.missing, "; "))
	}
	torn, err := p.tears(ctx)
	if err != nil {
		return s.wrap(ctx, "verify", key, err)
	}
	if torn {
		slog.Warn("blobfence: verify: bucket " + s.bucket + ": the server can show one write's ETag with another write's x-amz-meta-" +
			s.tokenKey + " (it stores them apart, as versitygw --sidecar does); fencing is unaffected, " +
			"but other tools must read an object's token from its first line, not its metadata")
	}
	return nil
}

// probe runs Verify's requests on key and lists what the server does not
// honour.
type probe struct {
	s       *Store
	key     string
	missing []string
	opaque  bool // an opaque MD5-shaped ETag was noted
}

func (p *probe) miss(format string, args ...any) {
	p.missing = append(p.missing, fmt.Sprintf(format, args...))
}

// put writes body with the given condition and returns the reply's ETag.
// It notes an ETag shaped like an MD5 that is not the body's (without
// SSE-KMS): no read of such objects could be proven.
func (p *probe) put(ctx context.Context, body string, ifMatch, ifNoneMatch *string) (string, error) {
	out, err := p.s.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String(p.s.bucket), Key: aws.String(p.key), Body: strings.NewReader(body),
		Metadata: map[string]string{p.s.tokenKey: "1"}, IfMatch: ifMatch, IfNoneMatch: ifNoneMatch,
	}, noSDKRetry)
	if err != nil {
		return "", err
	}
	etag := aws.ToString(out.ETag)
	kms := out.ServerSideEncryption == types.ServerSideEncryptionAwsKms || out.ServerSideEncryption == types.ServerSideEncryptionAwsKmsDsse
	if md5Shaped(etag) && !kms && etag != plainETag(md5.Sum([]byte(body))) && !p.opaque {
		p.opaque = true
		p.miss("the ETag %s looks like an MD5 but is not the MD5 of the bytes, and the reply does not say aws:kms (no read could be proven: every write would end in ErrContention)", etag)
	}
	return etag, nil
}

// refused takes the error of a write that had to be refused with 412 or
// 409 and notes what is missing when it was not.
func (p *probe) refused(what string, err error) {
	switch {
	case err == nil:
		p.miss("%s is ignored (a write that had to be refused was accepted)", what)
	case classify(err) != outcomeRace:
		p.miss("%s is not supported (%v)", what, err)
	}
}

// accepted takes the error of a write that had to be accepted; it returns
// the error when it says nothing about conditions. A 404 on a conditional
// PUT of a key in a bucket that exists means the server cannot evaluate
// the condition (versitygw --nometa keeps no ETags).
func (p *probe) accepted(what string, err error) error {
	if st := httpStatus(err); st == 400 || st == 412 || st == 501 || isNotFound(err) {
		p.miss("%s is not supported (%v)", what, err)
		return nil
	}
	return err
}

// shows checks that a HEAD shows the ETag a PUT's reply gave, and the
// metadata.
func (p *probe) shows(ctx context.Context, what, etag string) error {
	head, err := p.s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(p.s.bucket), Key: aws.String(p.key)})
	if err != nil {
		return err
	}
	if got := aws.ToString(head.ETag); got != etag {
		p.miss("the reply to %s gave the ETag %s, but a HEAD then shows %s", what, etag, got)
	}
	if v, _ := lookupMeta(head.Metadata, p.s.tokenKey); v != "1" {
		p.miss("user metadata is not kept (x-amz-meta-%s came back as %q)", p.s.tokenKey, v)
	}
	return nil
}

func (p *probe) run(ctx context.Context) error {
	const create = "If-None-Match: * on PUT"
	first, err := p.put(ctx, "fencekit verify 1", nil, aws.String("*"))
	if err != nil {
		return p.accepted(create, err) // nothing more to probe
	}
	_, err = p.put(ctx, "fencekit verify 2", nil, aws.String("*"))
	p.refused(create, err)
	if err := p.shows(ctx, "a PUT", first); err != nil {
		return err
	}
	_, err = p.put(ctx, "fencekit verify 3", aws.String(noMatch), nil)
	p.refused("If-Match on PUT", err)
	second, err := p.put(ctx, "fencekit verify 4", aws.String(first), nil)
	if err != nil {
		return p.accepted("If-Match on PUT", err)
	}
	if second == first {
		p.miss("two writes of different bytes got the same ETag %s", first)
	}
	if err := p.shows(ctx, "a conditional PUT", second); err != nil {
		return err
	}
	if second != first {
		_, err = p.put(ctx, "fencekit verify 5", aws.String(first), nil)
		p.refused("If-Match on PUT with the ETag the object had before", err)
	}
	out, err := p.s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(p.s.bucket), Key: aws.String(p.key)}, quietChecksums)
	if err != nil {
		return err
	}
	defer out.Body.Close()
	body, err := io.ReadAll(out.Body)
	if err != nil {
		return err
	}
	if !bytes.Equal(body, []byte("fencekit verify 4")) {
		p.miss("a GET returned %q, not the bytes last written", body)
	}
	return nil
}
