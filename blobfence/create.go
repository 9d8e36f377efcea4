package blobfence

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/valid"
)

// ErrExists is wrapped by the error of a [Store.Create] refused because
// an object (a tombstone included) has the key, and by that of a Put,
// Delete or Claim of a key a Create made (its objects are written once);
// the message names who created it and with which token.
var ErrExists error = kind("an object has the key already")

// Create stores body under key as it is, with no envelope, only if no
// object has the key (If-None-Match: *), with tok and the store's
// [Options.Identity] in its metadata. It is the call for write-once
// outputs that other tools read (reports, exports, snapshots): any S3
// reader gets exactly body. A second Create of the key, with any token,
// is refused, so with lease.Client.TryDo a round's job runs once even when
// a late worker starts after the first one finished.
//
// Cost: one request (PUT); a refusal, one more (HEAD) to name the
// object's creator. A PUT that got no answer is sent again: its condition
// makes that safe, and a found object with this call's nonce is this call's.
//
// Do not mix Create and Put on a key: Put fences keys written again and
// again; a created object has no envelope, and metadata that other tools
// can drop is all that records its token.
//
// Errors: an error wrapping [ErrExists] when an object has the key
// (nothing written); [fence.ErrInvalid] for a bad key, token or option
// ([After] has no meaning here) or a body that starts like an envelope's
// header, nothing sent; the context's cause when
// ctx ended; S3 and SDK errors otherwise. Each names the object once.
func (s *Store) Create(ctx context.Context, key string, body []byte, tok fence.Token, opts ...PutOption) error {
	if err := s.checkWrite("create", key, tok); err != nil {
		return err
	}
	f, err := s.objectFields(key, opts)
	if err != nil {
		return err
	}
	if f.after.etag != "" {
		return valid.Invalid("blobfence: create %s: After has no meaning for Create (the key must not exist)", s.resource(key))
	}
	if bytes.HasPrefix(body, []byte(headerMagic)) {
		// Readers would take it for an envelope, its token for the key's.
		return valid.Invalid("blobfence: create %s: the body starts with %q, the envelope's header; store it with Put", s.resource(key), headerMagic)
	}
	nonce := rand.Text()
	md, err := s.userMetadata(f, tok.String(), "")
	if err != nil {
		return err
	}
	delete(md, s.writeKey)
	md[s.createKey] = nonce + " " + s.identity
	return s.wrap(ctx, "create", key, s.create(ctx, key, body, md, f, nonce))
}

func (s *Store) create(ctx context.Context, key string, body []byte, md map[string]string, f objectFields, nonce string) error {
	var err error
	for range s.maxAttempts {
		in := &s3.PutObjectInput{
			Bucket:        aws.String(s.bucket),
			Key:           aws.String(key),
			Body:          bytes.NewReader(body),
			ContentLength: aws.Int64(int64(len(body))),
			Metadata:      md,
			IfNoneMatch:   aws.String("*"),
		}
		f.putInput(in)
		_, err = s.client.PutObject(ctx, in, noSDKRetry)
		switch classify(err) {
		case outcomeOK:
			return nil
		case outcomeFailed:
			return err
		}
		// A refusal (412, 409) or no answer: see what has the key.
		out, herr := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)})
		switch {
		case herr == nil:
			created, _ := lookupMeta(out.Metadata, s.createKey)
			if n, _, _ := strings.Cut(created, " "); n == nonce {
				return nil // this call's PUT landed without its reply
			}
			return s.existsError(out.Metadata)
		case !isNotFound(herr):
			return errors.Join(err, herr)
		}
		if ctx.Err() != nil {
			return err
		}
	}
	return err
}

// existsError describes the object that has the key from its metadata.
func (s *Store) existsError(md map[string]string) error {
	tok := metaToken(md, s.tokenKey)
	if created, ok := lookupMeta(md, s.createKey); ok {
		return existsError(created, tok)
	}
	if tok != 0 {
		return errorf("%v: written by a fenced Put or Delete with token %s", ErrExists, tok)
	}
	return errorf("%v: written by another tool", ErrExists)
}

// existsError is the error for an object a Create stored, with its
// "<nonce> <identity>" metadata and its token.
func existsError(created string, tok fence.Token) error {
	by := "by Create"
	if _, who, _ := strings.Cut(created, " "); who != "" {
		by = fmt.Sprintf("by %q", who)
	}
	return errorf("%v: created %s with token %s (Create's objects are written once; Retire removes one)", ErrExists, by, tok)
}

// metaToken is the token in md's name key, 0 when absent or malformed:
// metadata is only a hint, which other tools can drop or change.
func metaToken(md map[string]string, name string) fence.Token {
	v, _ := lookupMeta(md, name)
	tok, err := valid.ParseToken(v)
	if err != nil {
		return 0
	}
	return tok
}

// defaultIdentity is "<hostname>/<pid>".
func defaultIdentity() string {
	host, err := os.Hostname()
	if err != nil || identityProblem(host) != "" {
		host = "unknown"
	}
	return host + "/" + strconv.Itoa(os.Getpid())
}

// identityProblem says what makes id unfit for an S3 metadata value, or "".
func identityProblem(id string) string {
	switch {
	case len(id) > 256:
		return fmt.Sprintf("%d bytes; at most 256", len(id))
	case strings.TrimSpace(id) != id:
		return fmt.Sprintf("%q starts or ends with white space", id)
	}
	for i := 0; i < len(id); i++ {
		if id[i] < 0x20 || id[i] > 0x7e {
			return fmt.Sprintf("%q has a byte 0x%02x; want printable ASCII (an HTTP header value)", id, id[i])
		}
	}
	return ""
}
