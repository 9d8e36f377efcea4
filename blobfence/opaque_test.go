package blobfence_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/fencekit/fencekit/blobfence"
	"github.com/fencekit/fencekit/fence"
)

// TestOpaqueETags: behind a proxy that gives every write a new opaque ETag
// of 32 hex digits (as SSE-KMS does), puts and reads stay correct at the
// usual cost: the reply says aws:kms, so the ETag is not taken for an MD5
// (Put 2 requests, Put with After 1, GetVersion 1, Delete 2).
func TestOpaqueETags(t *testing.T) {
	ctx := context.Background()
	_, _, env := newStore(t, nil)
	_, proxy := newOpaqueETags()
	client := proxy.client(t, env)
	c := &counting{S3API: client}
	s := mustNew(t, c, env.Bucket, &blobfence.Options{VersionCache: -1}) // count every read
	requests := func(what string, want int64, f func() error) {
		t.Helper()
		before := c.total()
		if err := f(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if n := c.total() - before; n != want {
			t.Errorf("%s: %d requests, want %d", what, n, want)
		}
	}
	var v1, v2, v3 blobfence.Version
	requests("Put on an absent key", 2, func() (err error) {
		v1, err = s.PutReader(ctx, "k", strings.NewReader("one"), 5)
		return err
	})
	requests("Put over an object with an opaque ETag", 2, func() (err error) {
		v2, err = s.PutReader(ctx, "k", strings.NewReader("two"), 6)
		return err
	})
	requests("Put of the same bytes under a newer token", 2, func() (err error) {
		v3, err = s.PutReader(ctx, "k", strings.NewReader("two"), 7)
		return err
	})
	if v1.ETag() == v2.ETag() || v2.ETag() == v3.ETag() || len(v3.ETag()) != 34 {
		t.Fatalf("ETags %s %s %s; the proxy must hand out a new one per write", v1.ETag(), v2.ETag(), v3.ETag())
	}
	// A writer that read version 2 and paused is refused.
	if err := s.Put(ctx, "k", []byte("stale"), 6, blobfence.After(v2)); !errors.Is(err, fence.ErrStale) {
		t.Fatalf("Put after version 2 with token 6: %v; want ErrStale", err)
	}
	requests("Put with After the current version", 1, func() (err error) {
		v3, err = s.PutReader(ctx, "k", strings.NewReader("three"), 7, blobfence.After(v3))
		return err
	})
	requests("GetVersion", 1, func() error {
		body, v, err := s.GetVersion(ctx, "k")
		if err == nil && (string(body) != "three" || v != v3) {
			t.Errorf("GetVersion = %q %+v; want three %+v", body, v, v3)
		}
		return err
	})
	requests("Delete", 2, func() error { return s.Delete(ctx, "k", 8) })
	if _, _, err := s.Get(ctx, "k"); !errors.Is(err, blobfence.ErrNotFound) {
		t.Fatalf("Get after Delete: %v", err)
	}
}
