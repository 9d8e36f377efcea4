package blobfence_test

import (
	"context"
	"errors"
	"testing"

	"github.com/fencekit/fencekit/blobfence"
	"github.com/fencekit/fencekit/fence"
)

// TestVersionCache: a Store remembers the versions it wrote, so a holder's
// repeated Put of a key costs one request; with the cache off, two. A
// remembered version that another writer made out of date costs a refused
// PUT and a read, and never lets a stale write through; the cache holds
// at most VersionCache keys.
func TestVersionCache(t *testing.T) {
	ctx := context.Background()
	s, c, env := newStore(t, &blobfence.Options{VersionCache: 2})
	puts := func(s *blobfence.Store, c *counting, key string, tok fence.Token) int64 {
		t.Helper()
		before := c.total()
		if err := s.Put(ctx, key, []byte("status"), tok); err != nil {
			t.Fatal(err)
		}
		return c.total() - before
	}
	if n := puts(s, c, "status", 5); n != 2 {
		t.Errorf("first Put: %d requests, want 2 (read, then PUT)", n)
	}
	for i := range 3 {
		if n := puts(s, c, "status", 5); n != 1 {
			t.Errorf("repeated Put %d: %d requests, want 1", i+1, n)
		}
	}

	off, coff, _ := newStore(t, &blobfence.Options{VersionCache: -1})
	for i := range 2 {
		if n := puts(off, coff, "status", 5); n != 2 {
			t.Errorf("Put %d with the cache off: %d requests, want 2", i+1, n)
		}
	}

	// Another writer moved the key on: the remembered version is out of
	// date. A newer token lands after a refused PUT and a read; an older
	// one is refused as stale.
	other := mustNew(t, env.Client, env.Bucket, nil)
	if err := other.Put(ctx, "status", []byte("newer"), 9); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, "status", []byte("stale"), 6); !errors.Is(err, fence.ErrStale) {
		t.Fatalf("Put with token 6 after another store's 9, from a remembered version: %v; want stale", err)
	}
	wantStored(t, s, "status", "newer", 9)
	if n := puts(s, c, "status", 10); n != 1 {
		t.Errorf("Put after the stale refusal: %d requests, want 1 (the refusal's read was remembered)", n)
	}

	// Two keys fit: a third pushes out the least recently used.
	puts(s, c, "b", 1)
	puts(s, c, "c", 1)
	if n := puts(s, c, "status", 10); n != 2 {
		t.Errorf("Put of a key pushed out of a 2-key cache: %d requests, want 2", n)
	}
}

// TestReadsWarmVersionCache: on a fresh Store, a Get, Head or GetVersion
// of a key remembers its version, so the Put after it costs one request;
// a Get of a key another writer has since moved on costs the Put a
// refused PUT and a read, and the stale token is still refused.
func TestReadsWarmVersionCache(t *testing.T) {
	ctx := context.Background()
	w, _, env := newStore(t, nil)
	if err := w.Put(ctx, "k", []byte("first"), 3); err != nil {
		t.Fatal(err)
	}
	reads := map[string]func(*blobfence.Store) error{
		"Get":        func(s *blobfence.Store) error { _, _, err := s.Get(ctx, "k"); return err },
		"Head":       func(s *blobfence.Store) error { _, err := s.Head(ctx, "k"); return err },
		"GetVersion": func(s *blobfence.Store) error { _, _, err := s.GetVersion(ctx, "k"); return err },
	}
	for name, read := range reads {
		c := &counting{S3API: env.Client}
		s := mustNew(t, c, env.Bucket, nil)
		if err := read(s); err != nil {
			t.Fatal(err)
		}
		before := c.total()
		if err := s.Put(ctx, "k", []byte(name), 3); err != nil {
			t.Fatal(err)
		}
		if n := c.total() - before; n != 1 {
			t.Errorf("Put after %s on a fresh Store: %d requests, want 1", name, n)
		}
	}

	c := &counting{S3API: env.Client}
	s := mustNew(t, c, env.Bucket, nil)
	if _, _, err := s.Get(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	if err := w.Put(ctx, "k", []byte("newer"), 9); err != nil {
		t.Fatal(err)
	}
	before := c.total()
	if err := s.Put(ctx, "k", []byte("stale"), 4); !errors.Is(err, fence.ErrStale) {
		t.Fatalf("Put with token 4 after a Get, then another store's 9: %v; want stale", err)
	}
	if n := c.total() - before; n != 2 {
		t.Errorf("refused Put from a version Get remembered: %d requests, want 2 (a refused PUT, a read)", n)
	}
	wantStored(t, s, "k", "newer", 9)
}
