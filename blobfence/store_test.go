package blobfence_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/fencekit/fencekit/blobfence"
	"github.com/fencekit/fencekit/fence"
)

func mustGet(t *testing.T, s *blobfence.Store, key string) ([]byte, fence.Token) {
	t.Helper()
	body, tok, err := s.Get(context.Background(), key)
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	return body, tok
}

func TestPutCreatesAbsentObject(t *testing.T) {
	ctx := context.Background()
	s, c, env := newStore(t, nil)
	if err := s.Put(ctx, "new", []byte("first"), 7); err != nil {
		t.Fatal(err)
	}
	if got := c.heads.Load() + c.puts.Load(); got != 2 || c.total() != 2 {
		t.Fatalf("uncontended put sent %d HEAD+PUT, %d requests in all; want 2", got, c.total())
	}
	body, tok := mustGet(t, s, "new")
	if string(body) != "first" || tok != 7 {
		t.Fatalf("Get = %q, %d; want \"first\", 7", body, tok)
	}
	// The token is on the wire as x-amz-meta-fencekit-token.
	h, err := env.Client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &env.Bucket, Key: aws.String("new")})
	if err != nil {
		t.Fatal(err)
	}
	if h.Metadata[blobfence.DefaultMetadataKey] != "7" {
		t.Fatalf("metadata = %v, want fencekit-token=7", h.Metadata)
	}
}

func TestStaleRejectedWithCurrentToken(t *testing.T) {
	ctx := context.Background()
	s, _, _ := newStore(t, nil)
	if err := s.Put(ctx, "k", []byte("B's data"), 34); err != nil {
		t.Fatal(err)
	}
	err := s.Put(ctx, "k", []byte("A's late data"), 33)
	var se *fence.StaleError
	if !errors.As(err, &se) || !errors.Is(err, fence.ErrStale) {
		t.Fatalf("stale put: err = %v, want a *fence.StaleError", err)
	}
	if se.Presented != 33 || se.Current != 34 || se.Resource != s.Bucket()+"/k" {
		t.Fatalf("StaleError = %+v, want presented 33, current 34, resource %s/k", *se, s.Bucket())
	}
	if errors.Is(err, blobfence.ErrContention) {
		t.Fatalf("a stale put must not read as contention: %v", err)
	}
	wantStored(t, s, "k", "B's data", 34)
}

func TestEqualAndNewerAccepted(t *testing.T) {
	ctx := context.Background()
	s, _, _ := newStore(t, nil)
	for i, step := range []struct {
		tok  fence.Token
		body string
	}{{10, "v1"}, {10, "v2 same holder"}, {11, "v3 newer"}, {fence.MaxToken, "v4 max"}} {
		if err := s.Put(ctx, "k", []byte(step.body), step.tok); err != nil {
			t.Fatalf("step %d (token %d): %v", i, step.tok, err)
		}
		if body, tok := mustGet(t, s, "k"); string(body) != step.body || tok != step.tok {
			t.Fatalf("step %d: Get = %q, %d; want %q, %d", i, body, tok, step.body, step.tok)
		}
	}
}

func TestBodyAndMetadataRoundTrip(t *testing.T) {
	ctx := context.Background()
	s, _, env := newStore(t, &blobfence.Options{MetadataKey: "x-lease-token"})
	bodies := [][]byte{{}, {0}, []byte("héllo\x00wörld"), bytes.Repeat([]byte{0xff, 0x00, 'a'}, 100_000)}
	for i, b := range bodies {
		tok := fence.Token(100 + i)
		if err := s.Put(ctx, "rt", b, tok); err != nil {
			t.Fatalf("put %d: %v", i, err)
		}
		got, v, err := s.GetVersion(ctx, "rt")
		if err != nil || !bytes.Equal(got, b) || v.Token != tok || v.ETag == "" {
			t.Fatalf("round trip %d: %d bytes, %+v, %v; want %d bytes, token %d", i, len(got), v, err, len(b), tok)
		}
	}
	h, err := env.Client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &env.Bucket, Key: aws.String("rt")})
	if err != nil {
		t.Fatal(err)
	}
	if h.Metadata["x-lease-token"] != "103" || h.Metadata[blobfence.DefaultMetadataKey] != "" {
		t.Fatalf("custom metadata key: metadata = %v, want x-lease-token=103 only", h.Metadata)
	}
}

func TestPutReaderFromOffset(t *testing.T) {
	ctx := context.Background()
	s, _, _ := newStore(t, nil)
	r := strings.NewReader("HEADER|payload")
	if _, err := r.Seek(7, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	res, err := s.PutReader(ctx, "off", r, 5)
	if err != nil {
		t.Fatal(err)
	}
	if res.Token != 5 || res.Attempts != 1 || res.Replaced.Exists() || res.ETag == "" {
		t.Fatalf("PutResult = %+v; want token 5, 1 attempt, replacing nothing", res)
	}
	if body, _ := mustGet(t, s, "off"); string(body) != "payload" {
		t.Fatalf("body = %q, want the reader's bytes from its offset, \"payload\"", body)
	}
}

func TestPutAfterOneRequest(t *testing.T) {
	ctx := context.Background()
	s, c, _ := newStore(t, nil)
	res, err := s.PutAfter(ctx, "chain", strings.NewReader("v1"), 3, blobfence.Version{})
	if err != nil || c.total() != 1 {
		t.Fatalf("PutAfter on an absent key: %v, %d requests; want nil, 1", err, c.total())
	}
	for i := 2; i <= 5; i++ {
		prev := res.Version
		res, err = s.PutAfter(ctx, "chain", strings.NewReader("v"+string(rune('0'+i))), 3, prev)
		if err != nil || res.Replaced != prev {
			t.Fatalf("PutAfter %d: %+v, %v; want it to replace %+v", i, res, err, prev)
		}
	}
	if c.total() != 5 {
		t.Fatalf("5 PutAfter with the current version sent %d requests, want 5", c.total())
	}
	// An out-of-date version falls back to read-decide-write.
	if err := s.Put(ctx, "chain", []byte("other"), 4); err != nil {
		t.Fatal(err)
	}
	_, err = s.PutAfter(ctx, "chain", strings.NewReader("late"), 3, res.Version)
	if !errors.Is(err, fence.ErrStale) {
		t.Fatalf("PutAfter with an old version and an older token: %v, want ErrStale", err)
	}
	got, err := s.PutAfter(ctx, "chain", strings.NewReader("newest"), 9, res.Version)
	if err != nil || got.Attempts != 2 || got.Replaced.Token != 4 {
		t.Fatalf("PutAfter with an old version: %+v, %v; want 2 attempts replacing token 4", got, err)
	}
	// A known version with a newer token than ours is confirmed by a HEAD.
	before, heads := c.total(), c.heads.Load()
	_, err = s.PutAfter(ctx, "chain", strings.NewReader("x"), 8, got.Version)
	if !errors.Is(err, fence.ErrStale) || c.total()-before != 1 || c.heads.Load()-heads != 1 {
		t.Fatalf("PutAfter older than the known version: %v after %d requests; want ErrStale after 1 HEAD",
			err, c.total()-before)
	}
}

func TestObjectWithoutTokenIsZero(t *testing.T) {
	ctx := context.Background()
	s, c, env := newStore(t, nil)
	_, err := env.Client.PutObject(ctx, &s3.PutObjectInput{Bucket: &env.Bucket, Key: aws.String("plain"),
		Body: strings.NewReader("from another tool")})
	if err != nil {
		t.Fatal(err)
	}
	wantStored(t, s, "plain", "from another tool", 0)
	before := c.total()
	if err := s.Put(ctx, "plain", []byte("fenced"), 1); err != nil {
		t.Fatalf("token 1 over an object without token: %v", err)
	}
	// An object without a write record is trusted after two agreeing HEADs.
	if n := c.total() - before; n != 3 || c.heads.Load() != 2 {
		t.Fatalf("put over a foreign object sent %d requests (%d HEADs); want 3 (2)", n, c.heads.Load())
	}
	if _, tok := mustGet(t, s, "plain"); tok != 1 {
		t.Fatalf("token = %d, want 1", tok)
	}
}

func TestMalformedTokenMetadata(t *testing.T) {
	ctx := context.Background()
	s, _, env := newStore(t, nil)
	_, err := env.Client.PutObject(ctx, &s3.PutObjectInput{Bucket: &env.Bucket, Key: aws.String("bad"),
		Body: strings.NewReader("x"), Metadata: map[string]string{blobfence.DefaultMetadataKey: "12abc"}})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = s.Get(ctx, "bad")
	if !errors.Is(err, blobfence.ErrBadMetadata) || !errors.Is(err, fence.ErrInvalidToken) || !strings.Contains(err.Error(), "12abc") {
		t.Fatalf("Get: %v; want ErrBadMetadata naming the value", err)
	}
	if err := s.Put(ctx, "bad", []byte("y"), 99); !errors.Is(err, blobfence.ErrBadMetadata) {
		t.Fatalf("Put over malformed metadata: %v; want ErrBadMetadata", err)
	}
	if err := s.Delete(ctx, "bad", 99); !errors.Is(err, blobfence.ErrBadMetadata) {
		t.Fatalf("Delete of malformed metadata: %v; want ErrBadMetadata", err)
	}
}

func TestFencedDelete(t *testing.T) {
	ctx := context.Background()
	s, c, _ := newStore(t, nil)
	if err := s.Put(ctx, "d", []byte("keep me"), 20); err != nil {
		t.Fatal(err)
	}
	err := s.Delete(ctx, "d", 19)
	var se *fence.StaleError
	if !errors.As(err, &se) || se.Current != 20 || se.Presented != 19 {
		t.Fatalf("stale delete: %v; want StaleError 19 < 20", err)
	}
	wantStored(t, s, "d", "keep me", 20)
	before := c.total()
	if err := s.Delete(ctx, "d", 20); err != nil {
		t.Fatalf("delete with the current token: %v", err)
	}
	if n := c.total() - before; n != 2 {
		t.Fatalf("uncontended delete sent %d requests, want 2", n)
	}
	if _, _, err := s.Get(ctx, "d"); !errors.Is(err, blobfence.ErrNotFound) {
		t.Fatalf("Get after delete: %v, want ErrNotFound", err)
	}
	if _, err := s.Head(ctx, "d"); !errors.Is(err, blobfence.ErrNotFound) {
		t.Fatalf("Head after delete: %v, want ErrNotFound", err)
	}
	before = c.total()
	if err := s.Delete(ctx, "d", 21); err != nil || c.total()-before != 1 {
		t.Fatalf("delete of an absent key: %v after %d requests; want nil after 1 HEAD", err, c.total()-before)
	}
}

func TestDeleteLosesRaceThenDecidesAgain(t *testing.T) {
	ctx := context.Background()
	env := newRacer(t)
	s := mustNew(t, env, env.env.Bucket, nil)
	if err := s.Put(ctx, "k", []byte("v1"), 5); err != nil {
		t.Fatal(err)
	}
	// Between Delete's HEAD and its DELETE, a writer with token 6 replaces
	// the object: the DELETE gets 412, the second round sees token 6.
	env.beforeDelete = func() {
		if err := mustNew(t, env.env.Client, env.env.Bucket, nil).Put(ctx, "k", []byte("v2"), 6); err != nil {
			t.Error(err)
		}
	}
	err := s.Delete(ctx, "k", 5)
	var se *fence.StaleError
	if !errors.As(err, &se) || se.Current != 6 {
		t.Fatalf("delete that lost a race to token 6: %v; want StaleError current 6", err)
	}
	if _, tok := mustGet(t, s, "k"); tok != 6 {
		t.Fatalf("token = %d, want 6", tok)
	}
}

// TestSameBytesChangeTheETag: a newer holder that writes the very bytes
// the object holds must change its ETag, or a writer that read the older
// version and paused would pass its If-Match over the newer token. Before
// the fix, the stale PutAfter below was accepted. Writing the same bytes
// under the same token and fields is a no-op; a third token gets
// ErrSameBytes, with nothing written.
func TestSameBytesChangeTheETag(t *testing.T) {
	ctx := context.Background()
	s, c, _ := newStore(t, nil)
	v5, err := s.PutReader(ctx, "k", strings.NewReader("same bytes"), 5)
	if err != nil {
		t.Fatal(err)
	}
	before := c.total()
	// PutAfter with the current version reads it all the same: the
	// rewrite needs its write record.
	v9, err := s.PutAfter(ctx, "k", strings.NewReader("same bytes"), 9, v5.Version)
	if err != nil || v9.ETag == v5.ETag || v9.Replaced != v5.Version {
		t.Fatalf("the same bytes under token 9: %+v, %v; want a new ETag, replacing %+v", v9, err, v5.Version)
	}
	if n, mp := c.total()-before, c.multipart.Load(); n != 4 || mp != 3 {
		t.Fatalf("the rewrite sent %d requests (%d multipart); want 4: HEAD, create, part, complete", n, mp)
	}
	// The stale writer (token 7) read version 5 before it paused.
	_, err = s.PutAfter(ctx, "k", strings.NewReader("stale"), 7, v5.Version)
	var se *fence.StaleError
	if !errors.As(err, &se) || se.Current != 9 {
		t.Fatalf("PutAfter with token 7 on version 5's ETag: %v; want StaleError current 9", err)
	}
	wantStored(t, s, "k", "same bytes", 9)
	if _, v, err := s.GetVersion(ctx, "k"); err != nil || v != v9.Version {
		t.Fatalf("GetVersion of the multipart version: %+v, %v; want %+v", v, err, v9.Version)
	}

	before = c.total()
	again, err := s.PutReader(ctx, "k", strings.NewReader("same bytes"), 9)
	if err != nil || again.Version != v9.Version || again.Replaced != v9.Version || c.total()-before != 1 {
		t.Fatalf("the same bytes, token and fields again: %+v, %v after %d requests; want no write after 1 HEAD", again, err, c.total()-before)
	}
	before = c.total()
	for _, w := range []struct {
		tok fence.Token
		opt []blobfence.PutOption
	}{{12, nil}, {9, []blobfence.PutOption{blobfence.ContentType("text/plain")}}} {
		err = s.Put(ctx, "k", []byte("same bytes"), w.tok, w.opt...)
		if !errors.Is(err, blobfence.ErrSameBytes) || errors.Is(err, fence.ErrStale) {
			t.Fatalf("the same bytes under token %d after tokens 5 and 9: %v; want ErrSameBytes", w.tok, err)
		}
	}
	if n := c.total() - before; n != 2 {
		t.Fatalf("refusing twice sent %d requests; want 2 HEADs", n)
	}
	if _, v, err := s.GetVersion(ctx, "k"); err != nil || v != v9.Version {
		t.Fatalf("after ErrSameBytes: %+v, %v; want %+v unchanged", v, err, v9.Version)
	}
	// Other bytes start a new run.
	if err := s.Put(ctx, "k", []byte("other bytes"), 12); err != nil {
		t.Fatal(err)
	}
	wantStored(t, s, "k", "other bytes", 12)
}

func TestMissingBucket(t *testing.T) {
	ctx := context.Background()
	_, _, env := newStore(t, nil)
	c := &counting{S3API: env.Client}
	s := mustNew(t, c, env.Bucket+"-missing", nil)
	err := s.Put(ctx, "k", []byte("x"), 1)
	if err == nil || errors.Is(err, blobfence.ErrContention) || !strings.Contains(err.Error(), "NoSuchBucket") {
		t.Fatalf("put to a missing bucket: %v; want the NoSuchBucket error at once", err)
	}
	if c.puts.Load() != 1 {
		t.Fatalf("%d PUTs sent; a missing bucket is not a lost race, want 1", c.puts.Load())
	}
}
