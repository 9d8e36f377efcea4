package blobfence

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/fencekit/fencekit/internal/valid"
)

// maxUserMetadata is S3's limit on user metadata: the UTF-8 bytes of every
// name and value, the token and write record included.
const maxUserMetadata = 2048

// PutOption sets a field of the object a put writes, next to the token.
// Bad values make the put return an error wrapping [fence.ErrInvalid]
// before anything is sent.
type PutOption func(*objectFields) error

// objectFields are the object's fields other than the body and the token.
type objectFields struct {
	contentType, cacheControl, contentDisposition, contentEncoding string
	metadata                                                       map[string]string
	sse                                                            types.ServerSideEncryption
	kmsKeyID                                                       string
	after                                                          Version // from After; the zero Version when none
}

// After tells a put the object's current version, as a Version that this
// store returned for the same key ([Store.PutReader], [Store.Head],
// [Store.GetVersion]), so that the put skips its read: one request while v
// is still current. When v is out of date, the put reads the object and
// decides as without it. v takes the place of the version the store
// remembers ([Options.VersionCache]), even a newer one: an out-of-date v
// costs a refused PUT, a read and a PUT. A zero Version or one of another key is an
// error wrapping [fence.ErrInvalid].
func After(v Version) PutOption {
	return func(f *objectFields) error {
		if v.etag == "" {
			return errors.New("After: the Version is the zero Version; pass one a Store returned")
		}
		f.after = v
		return nil
	}
}

// ContentType sets the object's Content-Type header.
func ContentType(v string) PutOption {
	return func(f *objectFields) error { return header("ContentType", v, &f.contentType) }
}

// CacheControl sets the object's Cache-Control header.
func CacheControl(v string) PutOption {
	return func(f *objectFields) error { return header("CacheControl", v, &f.cacheControl) }
}

// ContentDisposition sets the object's Content-Disposition header.
func ContentDisposition(v string) PutOption {
	return func(f *objectFields) error { return header("ContentDisposition", v, &f.contentDisposition) }
}

// Metadata adds user metadata (x-amz-meta-<name>) to the object. Names are
// lower-case letters, digits, '-', '_' and '.' (S3 lower-cases names, so
// others would not read back the same); values are printable ASCII. The
// store's own names (the token and its write record) are refused, and
// everything together must fit S3's 2 KB of user metadata.
func Metadata(md map[string]string) PutOption {
	return func(f *objectFields) error {
		for _, name := range slices.Sorted(maps.Keys(md)) {
			if p := metadataNameProblem(name); p != "" {
				return fmt.Errorf("Metadata: %s", p)
			}
			if p := asciiProblem(md[name]); p != "" {
				return fmt.Errorf("Metadata: the value of %q %s", name, p)
			}
			if f.metadata == nil {
				f.metadata = map[string]string{}
			}
			f.metadata[name] = md[name]
		}
		return nil
	}
}

// ServerSideEncryption sets how S3 encrypts the object: AES256 (SSE-S3),
// aws:kms or aws:kms:dsse (SSE-KMS, with kmsKeyID or "" for the bucket's
// default key). Objects encrypted with KMS have ETags that are not the
// MD5 of the bytes; the store takes a GET's ETag and bytes of them to be of
// one version (see [Store.PutReader]).
func ServerSideEncryption(sse types.ServerSideEncryption, kmsKeyID string) PutOption {
	return func(f *objectFields) error {
		switch sse {
		case types.ServerSideEncryptionAes256:
			if kmsKeyID != "" {
				return fmt.Errorf("ServerSideEncryption: a KMS key ID goes with aws:kms or aws:kms:dsse, not %s", sse)
			}
		case types.ServerSideEncryptionAwsKms, types.ServerSideEncryptionAwsKmsDsse:
			if p := asciiProblem(kmsKeyID); p != "" {
				return fmt.Errorf("ServerSideEncryption: the KMS key ID %s", p)
			}
		default:
			return fmt.Errorf("ServerSideEncryption: %q is not AES256, aws:kms or aws:kms:dsse", sse)
		}
		f.sse, f.kmsKeyID = sse, kmsKeyID
		return nil
	}
}

func header(name, v string, dst *string) error {
	if p := asciiProblem(v); p != "" {
		return fmt.Errorf("%s: the value %s", name, p)
	}
	*dst = v
	return nil
}

// asciiProblem says what makes v unfit for an HTTP header value, or "".
func asciiProblem(v string) string {
	for i := 0; i < len(v); i++ {
		if v[i] < 0x20 || v[i] > 0x7e {
			return fmt.Sprintf("has byte %#02x at %d; use printable ASCII", v[i], i)
		}
	}
	return ""
}

func metadataNameProblem(name string) string {
	if name == "" {
		return "a metadata name is empty"
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return fmt.Sprintf("metadata name %q has %q at byte %d; use lower-case letters, digits, '-', '_' and '.'", name, c, i)
		}
	}
	return ""
}

// objectFields applies opts and checks them against the store's own
// metadata names.
func (s *Store) objectFields(key string, opts []PutOption) (objectFields, error) {
	var f objectFields
	for _, o := range opts {
		if o == nil {
			return f, valid.Invalid("blobfence: put: a PutOption is nil")
		}
		if err := o(&f); err != nil {
			return f, valid.Invalid("blobfence: put: %v", err)
		}
	}
	for name := range f.metadata {
		if name == s.tokenKey || name == s.writeKey || name == s.createKey {
			return f, valid.Invalid("blobfence: put: Metadata: %q is the store's own name for the token; the token is the put's argument", name)
		}
	}
	if f.after.etag != "" && f.after.key != key {
		return f, valid.Invalid("blobfence: put: After: the Version is of the key %q, not %q", f.after.key, key)
	}
	return f, nil
}

// userMetadata is the object's metadata: the caller's, the token and the
// write record. It fails when the whole exceeds S3's 2 KB.
func (s *Store) userMetadata(f objectFields, tok, record string) (map[string]string, error) {
	if err := s.checkMetadataSize(f, len(tok), len(record)); err != nil {
		return nil, err
	}
	md := make(map[string]string, len(f.metadata)+2)
	maps.Copy(md, f.metadata)
	md[s.tokenKey], md[s.writeKey] = tok, record
	return md, nil
}

// checkMetadataSize fails when the caller's metadata with a token of
// tokLen bytes and a record of recordLen bytes exceeds S3's 2 KB. A put
// checks once, before sending, with the longest token and record, so that
// no attempt can fail on it; it builds no map.
func (s *Store) checkMetadataSize(f objectFields, tokLen, recordLen int) error {
	n := len(s.tokenKey) + tokLen + len(s.writeKey) + recordLen
	for k, v := range f.metadata {
		n += len(k) + len(v)
	}
	if n > maxUserMetadata {
		return valid.Invalid("blobfence: put: the user metadata is %d bytes with the token and write record; S3 allows %d", n, maxUserMetadata)
	}
	return nil
}

func (f objectFields) putInput(in *s3.PutObjectInput) {
	in.ContentType, in.CacheControl = optString(f.contentType), optString(f.cacheControl)
	in.ContentDisposition, in.ContentEncoding = optString(f.contentDisposition), optString(f.contentEncoding)
	in.ServerSideEncryption, in.SSEKMSKeyId = f.sse, optString(f.kmsKeyID)
}

func optString(v string) *string {
	if v == "" {
		return nil
	}
	return aws.String(v)
}
