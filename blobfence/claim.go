package blobfence

import (
	"bytes"
	"context"
	"errors"
	"net/http"

	"github.com/fencekit/fencekit/fence"
)

// Claim records tok on key without changing what readers get, so that
// from now on every write with an older token is refused, not only after
// this holder's first write (as sqlfence.Claim). It
// rewrites the object's body and fields under tok in a new envelope: a
// read, a GET conditional on the ETag it read, and a conditional PUT; a
// read and a PUT of a tombstone when the key is absent or deleted (it
// stays absent to readers); one read when the key carries tok already.
//
// Errors: as for [Store.PutReader].
func (s *Store) Claim(ctx context.Context, key string, tok fence.Token) error {
	if err := s.checkWrite("claim", key, tok); err != nil {
		return err
	}
	decide := func(ctx context.Context, cur state) (*content, error) {
		switch {
		case cur.exists() && cur.token == tok:
			return nil, nil
		case !cur.live():
			return &content{}, nil
		}
		g, err := s.getOnce(ctx, key, cur.etag, false)
		if httpStatus(err) == http.StatusPreconditionFailed || errors.Is(err, ErrNotFound) {
			return nil, errChanged
		}
		if err != nil {
			return nil, err
		}
		// The body must be the one of the state that was checked.
		same := g.proven && g.Version == cur.Version && g.envelope == cur.envelope && g.nonce == cur.nonce
		if !same || g.deleted {
			return nil, errChanged
		}
		return &content{r: bytes.NewReader(g.body), size: int64(len(g.body)), fields: g.fields}, nil
	}
	_, err := s.write(ctx, "claim", key, tok, Version{}, decide)
	return s.wrap(ctx, "claim", key, err)
}
