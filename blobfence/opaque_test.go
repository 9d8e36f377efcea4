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
// of 32 hex digits (as SSE-KMS does), puts and reads stay correct and cost
// what they cost with MD5 ETags: Put 2 requests, PutAfter 1, GetVersion 1,
// Delete 2, and the same bytes again 2 (the opaque ETag changes anyway).
// Before the fix, every put over such an object read it twice (3
// requests) and GetVersion failed with ErrContention.
func TestOpaqueETags(t *testing.T) {
	ctx := context.Background()
	_, _, env := newStore(t, nil)
	_, proxy := newOpaqueETags()
	client := proxy.client(t, env)
	c := &counting{S3API: client}
	s := mustNew(t, c, env.Bucket, nil)
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
	var v1, v2, v3 blobfence.PutResult
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
	if v1.ETag == v2.ETag || v2.ETag == v3.ETag || len(v3.ETag) != 34 {
		t.Fatalf("ETags %s %s %s; the proxy must hand out a new one per write", v1.ETag, v2.ETag, v3.ETag)
	}
	// A writer that read version 2 and paused is refused.
	if _, err := s.PutAfter(ctx, "k", strings.NewReader("stale"), 6, v2.Version); !errors.Is(err, fence.ErrStale) {
		t.Fatalf("PutAfter on version 2's ETag with token 6: %v; want ErrStale", err)
	}
	requests("PutAfter with the current version", 1, func() (err error) {
		v3, err = s.PutAfter(ctx, "k", strings.NewReader("three"), 7, v3.Version)
		return err
	})
	requests("GetVersion", 1, func() error {
		body, v, err := s.GetVersion(ctx, "k")
		if err == nil && (string(body) != "three" || v != v3.Version) {
			t.Errorf("GetVersion = %q %+v; want three %+v", body, v, v3.Version)
		}
		return err
	})

	// A new store (a restarted process) trusts the write record, which says
	// the ETags are opaque: no extra read either.
	c2 := &counting{S3API: client}
	fresh := mustNew(t, c2, env.Bucket, nil)
	before := c2.total()
	body, v, err := fresh.GetVersion(ctx, "k")
	if err != nil || string(body) != "three" || v != v3.Version || c2.total()-before != 1 {
		t.Fatalf("GetVersion by a new store: %q %+v %v after %d requests; want three %+v after 1", body, v, err, c2.total()-before, v3.Version)
	}
	before = c2.total()
	if err := fresh.Put(ctx, "k", []byte("four"), 8); err != nil || c2.total()-before != 2 {
		t.Fatalf("Put by a new store: %v after %d requests; want 2", err, c2.total()-before)
	}
	requests("Delete", 2, func() error { return s.Delete(ctx, "k", 8) })
	if _, _, err := s.Get(ctx, "k"); !errors.Is(err, blobfence.ErrNotFound) {
		t.Fatalf("Get after Delete: %v", err)
	}
}
