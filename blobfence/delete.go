package blobfence

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/valid"
)

// Delete makes the key read as absent ([Store.Get] and [Store.Head] return
// [ErrNotFound]) and keeps its fence: it writes a tombstone, an envelope
// with no body and the token tok, so a later put with an older token is
// still refused. It never sends a DELETE (S3-compatible servers check, or
// ignore, DELETE's If-Match in ways that let a stale delete through). It
// costs what a put costs: a read and a conditional PUT of a few bytes; one
// read when the key is already deleted under tok. Deleting an absent key
// writes a tombstone too. Removing the tombstone for good is an operator's
// step: [Store.Retire].
//
// Errors: as for [Store.PutReader].
func (s *Store) Delete(ctx context.Context, key string, tok fence.Token) error {
	if err := s.checkWrite("delete", key, tok); err != nil {
		return err
	}
	tomb := &content{}
	decide := func(_ context.Context, cur state) (*content, error) {
		if cur.deleted && cur.token == tok {
			return nil, nil
		}
		return tomb, nil
	}
	_, err := s.write(ctx, "delete", key, tok, Version{}, decide)
	return s.wrap(ctx, "delete", key, err)
}

// Retire removes a deleted key's tombstone, and with it the key's fence:
// afterwards a put with any token may create the key. It is an operator's
// step, for keys that will not be written again or whose writers have all
// stopped: run it only when no holder of an older token can still be
// running. It refuses a key that readers still see (delete it first),
// except an object [Store.Create] stored, which it removes. It
// costs a read and a DELETE with If-Match on the tombstone's ETag (a server
// that checks DELETE's condition late or ignores it could remove a put that
// raced the retirement: retire only keys nobody writes). Errors:
// [fence.ErrInvalid] (also for a live object), [ErrContention] (no read
// was proven), the context's cause, S3 errors (412 when the key changed
// since the read).
func (s *Store) Retire(ctx context.Context, key string) error {
	if err := s.check("retire", key); err != nil {
		return err
	}
	st, err := s.read(ctx, key)
	switch {
	case err != nil:
	case !st.exists():
		return nil
	case !st.deleted && !st.created:
		err = valid.Invalid("readers still see the object (token %d); Delete it first", st.token)
	default:
		_, err = s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key), IfMatch: aws.String(st.etag)})
	}
	s.versions.forget(key)
	return s.wrap(ctx, "retire", key, err)
}
