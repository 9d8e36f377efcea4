package blobfence

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"go.opentelemetry.io/otel/metric"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/cause"
	"github.com/fencekit/fencekit/internal/obs"
	"github.com/fencekit/fencekit/internal/valid"
)

// S3API is the part of an S3 client that a [Store] calls. *s3.Client from
// aws-sdk-go-v2 satisfies it; tests wrap it to count requests or inject
// faults. DeleteObject serves only [Store.Retire] and the clean-up of
// [Store.Verify].
type S3API interface {
	HeadObject(ctx context.Context, in *s3.HeadObjectInput, optFns ...func(*s3.Options)) (*s3.HeadObjectOutput, error)
	PutObject(ctx context.Context, in *s3.PutObjectInput, optFns ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	GetObject(ctx context.Context, in *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	DeleteObject(ctx context.Context, in *s3.DeleteObjectInput, optFns ...func(*s3.Options)) (*s3.DeleteObjectOutput, error)
}

var _ S3API = (*s3.Client)(nil)

// defaultMetadataKey is the user-metadata name that holds the token unless
// [Options.MetadataKey] says otherwise.
const defaultMetadataKey = "fencekit-token"

// defaultMaxAttempts is the number of read-decide-write rounds a call makes
// before it gives up with [ErrContention], unless [Options.MaxAttempts] says
// otherwise.
const defaultMaxAttempts = 8

// maxMetadataKeyLen bounds [Options.MetadataKey]; S3 allows 2 KB of user
// metadata in all, and the key is sent twice (token and write id).
const maxMetadataKeyLen = 128

var (
	// ErrUnsupported is wrapped by the error of [Store.Verify] when the
	// server does not honour something fencing needs; the message names it.
	ErrUnsupported error = kind("the S3 server does not support what fencing needs")

	// ErrContention is returned (wrapped) when a write lost the race for the
	// object on every one of its attempts: each time it read the object and
	// decided its token was not stale, another writer changed the object
	// before the conditional write arrived. It is also returned when no
	// read of the object could be proven (the object kept changing while
	// being read). It is not a staleness verdict; the caller may try again.
	ErrContention error = kind("lost the race for the object on every attempt")

	// ErrOutcomeUnknown is wrapped, together with the error that ended the
	// call, when a conditional write or delete got no answer (a transport
	// error or a 5xx) and the store could not establish afterwards whether
	// it took effect.
	ErrOutcomeUnknown error = kind("outcome of a write is unknown")

	// ErrNotFound is returned (wrapped) by [Store.Get] and [Store.Head] when
	// the key is absent or deleted.
	ErrNotFound error = kind("object not found")

	// ErrBadMetadata is returned (wrapped) when an object's bytes start
	// like an envelope's header but the header does not parse. Writes
	// refuse to touch such an object.
	ErrBadMetadata error = kind("malformed token metadata")
)

// Options configures a [Store]. The zero value (or a nil *Options) means the
// defaults.
type Options struct {
	// MetadataKey is the user-metadata name holding the token, sent as the
	// header x-amz-meta-<MetadataKey>; default "fencekit-token". It must
	// be 1 to 128 characters of lower-case letters, digits and '-', starting
	// with a letter or digit (S3 lower-cases metadata names, so upper case
	// would not round-trip). Each write's record (state, nonce, MD5 of the
	// stored bytes) is stored next to it as <MetadataKey>-write.
	MetadataKey string

	// MaxAttempts bounds the read-decide-write rounds of one Put, Delete
	// or Claim; default 8. After that many lost races
	// the call returns [ErrContention]. A race lost to an older token (an
	// old holder still writing) does not count, up to 64 such races, so
	// that the old holder cannot starve the new one. It also bounds the reads of one
	// decision (MaxAttempts+1) when one read cannot be proven (see
	// [Store.PutReader]). Must not be negative.
	MaxAttempts int

	// VersionCache is how many keys' last versions the Store remembers, so
	// that a Put of a key it wrote or read before sends one request
	// (If-Match with that version) instead of two; default
	// 1024 (about 150 bytes per key), the least recently used dropped
	// first; negative: none. An out-of-date version costs a refused PUT,
	// then the Put reads and decides again: it never lets a stale write
	// through. Delete and Claim always read first.
	VersionCache int

	// Identity names the writer in the metadata of the objects
	// [Store.Create] stores, and in the error of a refused Create; default
	// "<hostname>/<pid>", as lease.Options.Identity.
	Identity string

	// MeterProvider counts the Store's refused writes
	// (fencekit_stale_rejected, store="s3"); default
	// otel.GetMeterProvider().
	MeterProvider metric.MeterProvider
}

// Store writes objects of one bucket, fenced by tokens kept in each
// object. It is safe for concurrent use.
type Store struct {
	client      S3API
	bucket      string
	tokenKey    string
	writeKey    string
	createKey   string // <tokenKey>-created: "<nonce> <identity>" of a Create
	identity    string
	versions    *versionCache
	maxAttempts int
	stale       *obs.Counter
}

// New returns a Store writing to bucket through client. A nil opts means
// the defaults. New does no I/O. Errors (wrapping [fence.ErrInvalid],
// naming the problem): a nil client (or a typed nil, such as a nil
// *s3.Client), a bucket name that is empty, over 255 bytes or
// not only ASCII letters, digits, '.', '-' and '_', invalid options.
func New(client S3API, bucket string, opts *Options) (*Store, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	s := &Store{client: client, bucket: bucket, tokenKey: o.MetadataKey, maxAttempts: o.MaxAttempts}
	if s.tokenKey == "" {
		s.tokenKey = defaultMetadataKey
	}
	if s.maxAttempts == 0 {
		s.maxAttempts = defaultMaxAttempts
	}
	s.writeKey = s.tokenKey + "-write"
	s.createKey = s.tokenKey + "-created"
	s.versions = newVersionCache(o.VersionCache)
	s.identity = o.Identity
	s.stale = obs.For(o.MeterProvider)
	if s.identity == "" {
		s.identity = defaultIdentity()
	}
	switch {
	case isNil(client):
		return nil, valid.Invalid("blobfence: New: the S3 client is nil")
	case o.MaxAttempts < 0:
		return nil, valid.Invalid("blobfence: New: Options.MaxAttempts is %d; it must not be negative (0 means %d)", o.MaxAttempts, defaultMaxAttempts)
	}
	if err := validateBucket(bucket); err != nil {
		return nil, valid.Invalid("blobfence: New: %v", err)
	}
	if p := metadataKeyProblem(s.tokenKey); p != "" {
		return nil, valid.Invalid("blobfence: New: Options.MetadataKey: %s", p)
	}
	if p := identityProblem(s.identity); p != "" {
		return nil, valid.Invalid("blobfence: New: Options.Identity: %s", p)
	}
	return s, nil
}

// maxBucketLen is the longest bucket name New accepts: S3's limit for the
// buckets that predate its DNS-style rules (today's are at most 63 bytes).
const maxBucketLen = 255

// validateBucket accepts what some S3 server may have named a bucket: 1 to
// maxBucketLen bytes of ASCII letters, digits, '.', '-' and '_' (S3's
// rules since 2018 are stricter: lowercase, 3 to 63, no '_'; the server
// enforces those). Anything else (a '/', a space, a NUL, other bytes) can
// only give a failed request, so it is refused before one is sent.
func validateBucket(bucket string) error {
	if err := valid.Name("bucket name", bucket); err != nil {
		return err
	}
	if len(bucket) > maxBucketLen {
		return valid.Invalid("bucket name is %d bytes, longer than %d", len(bucket), maxBucketLen)
	}
	for i := 0; i < len(bucket); i++ {
		switch c := bucket[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '.', c == '-', c == '_':
		default:
			return valid.Invalid("bucket name has %q at byte %d; a bucket name is letters, digits, '.', '-' and '_'", rune(c), i)
		}
	}
	return nil
}

// isNil reports a nil client or a nil *s3.Client, which would panic on
// first use. Another S3API holding a nil pointer is the caller's to avoid.
func isNil(c S3API) bool {
	s3c, ok := c.(*s3.Client)
	return c == nil || ok && s3c == nil
}

// metadataKeyProblem says what is wrong with name as [Options.MetadataKey],
// or "" when nothing is.
func metadataKeyProblem(name string) string {
	if name == "" || len(name) > maxMetadataKeyLen {
		return fmt.Sprintf("metadata key %q must be 1 to %d characters", name, maxMetadataKeyLen)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		ok := c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' && i > 0
		if !ok {
			return fmt.Sprintf("metadata key %q has %q at byte %d; use lower-case letters, digits and '-' (not first)", name, c, i)
		}
	}
	return ""
}

// check validates the store and key before a call sends anything.
func (s *Store) check(op, key string) error {
	if s == nil {
		return valid.Invalid("blobfence: %s on a nil *Store", op)
	}
	if err := valid.Name("object key", key); err != nil {
		return fmt.Errorf("blobfence: %s: %w", op, err)
	}
	return nil
}

// checkWrite validates the store, key and token of a write.
func (s *Store) checkWrite(op, key string, tok fence.Token) error {
	if err := s.check(op, key); err != nil {
		return err
	}
	if err := valid.Token(tok); err != nil {
		return fmt.Errorf("blobfence: %s %s: %w", op, s.resource(key), err)
	}
	return nil
}

func (s *Store) resource(key string) string { return s.bucket + "/" + key }

// wrap names the object once in err: "blobfence: put bucket/key: ...",
// or "blobfence: put: ..." around a stale error, which names it already.
// When ctx has ended, the error also wraps context.Cause(ctx) (a lost
// lease's ErrLost, say), not only ctx.Err().
func (s *Store) wrap(ctx context.Context, op, key string, err error) error {
	if err == nil {
		return nil
	}
	if ctx.Err() != nil && cause.With(ctx, err) != err {
		err = errorf("%v (%v)", err, context.Cause(ctx))
	}
	if errors.Is(err, fence.ErrStale) {
		return &opError{op: op, err: err} // a *fence.StaleError names the bucket/key itself
	}
	return &opError{op: op, resource: s.resource(key), err: err}
}

// lookupMeta finds name in md; S3 and the SDK lower-case metadata names,
// other clients may not.
func lookupMeta(md map[string]string, name string) (string, bool) {
	if v, ok := md[name]; ok {
		return v, true
	}
	for k, v := range md {
		if len(k) == len(name) && equalFoldASCII(k, name) {
			return v, true
		}
	}
	return "", false
}

func equalFoldASCII(a, b string) bool {
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// noSDKRetry turns the SDK's retryer off for one operation: a conditional
// write is retried only by the store's own read-decide-write loop, which
// reads the key (and recognizes its own nonces) before deciding again.
func noSDKRetry(o *s3.Options) {
	if o.Retryer == nil {
		o.Retryer = aws.NopRetryer{}
		return
	}
	o.Retryer = retry.AddWithMaxAttempts(o.Retryer, 1)
}
