package blobfence_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/logging"

	"github.com/fencekit/fencekit/blobfence"
	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/testenv"
	"github.com/fencekit/fencekit/internal/valid"
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
	if got := c.gets.Load() + c.puts.Load(); got != 2 || c.total() != 2 {
		t.Fatalf("uncontended put sent %d GET+PUT, %d requests in all; want 2", got, c.total())
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
	if h.Metadata[tokenMetadata] != "7" {
		t.Fatalf("metadata = %v, want fencekit-token=7", h.Metadata)
	}
}

func TestStaleRejectedWithCurrentToken(t *testing.T) {
	ctx := context.Background()
	s, _, env := newStore(t, nil)
	if err := s.Put(ctx, "k", []byte("B's data"), 34); err != nil {
		t.Fatal(err)
	}
	err := s.Put(ctx, "k", []byte("A's late data"), 33)
	var se *fence.StaleError
	if !errors.As(err, &se) || !errors.Is(err, fence.ErrStale) {
		t.Fatalf("stale put: err = %v, want a *fence.StaleError", err)
	}
	if se.Presented != 33 || se.Current != 34 || se.Resource != env.Bucket+"/k" {
		t.Fatalf("StaleError = %+v, want presented 33, current 34, resource %s/k", *se, env.Bucket)
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
	}{{10, "v1"}, {10, "v2 same holder"}, {11, "v3 newer"}, {valid.MaxToken, "v4 max"}} {
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
		if err != nil || !bytes.Equal(got, b) || v.Token() != tok || v.ETag() == "" {
			t.Fatalf("round trip %d: %d bytes, %+v, %v; want %d bytes, token %d", i, len(got), v, err, len(b), tok)
		}
	}
	h, err := env.Client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &env.Bucket, Key: aws.String("rt")})
	if err != nil {
		t.Fatal(err)
	}
	if h.Metadata["x-lease-token"] != "103" || h.Metadata[tokenMetadata] != "" {
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
	if res.Token() != 5 || res.ETag() == "" {
		t.Fatalf("PutReader returned %+v; want token 5 and an ETag", res)
	}
	if body, _ := mustGet(t, s, "off"); string(body) != "payload" {
		t.Fatalf("body = %q, want the reader's bytes from its offset, \"payload\"", body)
	}
}

func TestAfterOneRequest(t *testing.T) {
	ctx := context.Background()
	s, c, _ := newStore(t, nil)
	v, err := s.PutReader(ctx, "chain", strings.NewReader("v1"), 3)
	if err != nil || c.total() != 2 {
		t.Fatalf("put on an absent key: %v, %d requests; want nil, 2", err, c.total())
	}
	for i := 2; i <= 5; i++ {
		if v, err = s.PutReader(ctx, "chain", strings.NewReader(fmt.Sprint("v", i)), 3, blobfence.After(v)); err != nil {
			t.Fatalf("put %d: %v", i, err)
		}
	}
	if c.total() != 6 {
		t.Fatalf("4 puts with After the current version sent %d requests, want 4", c.total()-2)
	}
	// An out-of-date version falls back to read-decide-write.
	if err := s.Put(ctx, "chain", []byte("other"), 4); err != nil {
		t.Fatal(err)
	}
	err = s.Put(ctx, "chain", []byte("late"), 3, blobfence.After(v))
	if !errors.Is(err, fence.ErrStale) {
		t.Fatalf("put after an old version with an older token: %v, want ErrStale", err)
	}
	before := c.total()
	newest, err := s.PutReader(ctx, "chain", strings.NewReader("newest"), 9, blobfence.After(v))
	if err != nil || c.total()-before != 3 {
		t.Fatalf("put after an old version: %v after %d requests; want success after 3 (PUT, HEAD, PUT)", err, c.total()-before)
	}
	// A known version with a newer token than ours: stale, nothing sent.
	before = c.total()
	err = s.Put(ctx, "chain", []byte("x"), 8, blobfence.After(newest))
	if !errors.Is(err, fence.ErrStale) || c.total() != before {
		t.Fatalf("put older than the known version: %v after %d requests; want ErrStale after none", err, c.total()-before)
	}
	// A version names its key: another key's is refused, nothing sent.
	if err := s.Put(ctx, "other", []byte("x"), 9, blobfence.After(newest)); !errors.Is(err, fence.ErrInvalid) || c.total() != before {
		t.Fatalf("put after another key's version: %v; want fence.ErrInvalid, nothing sent", err)
	}
	if err := s.Put(ctx, "other", []byte("x"), 9, blobfence.After(blobfence.Version{})); !errors.Is(err, fence.ErrInvalid) || c.total() != before {
		t.Fatalf("put after the zero Version: %v; want fence.ErrInvalid, nothing sent", err)
	}
}

// TestRecordOnlyObjects: a record-only object (the body
// as it is, the token and its write record in the metadata) reads as it
// was, and its next fenced write, at the usual two requests, upgrades it
// to an envelope.
func TestRecordOnlyObjects(t *testing.T) {
	ctx := context.Background()
	s, c, env := newStore(t, &blobfence.Options{VersionCache: -1}) // count every read
	body := "a record-only object"
	sum := md5.Sum([]byte(body))
	record := "4 " + hex.EncodeToString(sum[:]) + " put ABC.0 - 0123456789abcdef"
	_, err := env.Client.PutObject(ctx, &s3.PutObjectInput{Bucket: &env.Bucket, Key: aws.String("old"), Body: strings.NewReader(body),
		Metadata: map[string]string{"fencekit-token": "4", "fencekit-token-write": record}})
	if err != nil {
		t.Fatal(err)
	}
	wantStored(t, s, "old", body, 4)
	if err := s.Put(ctx, "old", []byte("x"), 3); !errors.Is(err, fence.ErrStale) {
		t.Fatalf("put of token 3 over the record-only token 4: %v; want ErrStale", err)
	}
	before := c.total()
	if err := s.Put(ctx, "old", []byte("upgraded"), 5); err != nil || c.total()-before != 2 {
		t.Fatalf("put over the record-only object: %v after %d requests; want nil after 2", err, c.total()-before)
	}
	wantStored(t, s, "old", "upgraded", 5)
}

func TestObjectWithoutTokenIsZero(t *testing.T) {
	ctx := context.Background()
	s, c, env := newStore(t, nil)
	_, err := env.Client.PutObject(ctx, &s3.PutObjectInput{Bucket: &env.Bucket, Key: aws.String("plain"),
		Body: strings.NewReader("from another tool")})
	if err != nil {
		t.Fatal(err)
	}
	wantStored(t, mustNew(t, env.Client, env.Bucket, nil), "plain", "from another tool", 0) // s's own Get would remember the version
	before := c.total()
	if err := s.Put(ctx, "plain", []byte("fenced"), 1); err != nil {
		t.Fatalf("token 1 over an object without token: %v", err)
	}
	// The ranged GET read the whole small object, whose MD5 is its ETag.
	if n := c.total() - before; n != 2 {
		t.Fatalf("put over a foreign object sent %d requests; want 2", n)
	}
	if _, tok := mustGet(t, s, "plain"); tok != 1 {
		t.Fatalf("token = %d, want 1", tok)
	}
}

func TestMalformedTokenMetadata(t *testing.T) {
	ctx := context.Background()
	s, _, env := newStore(t, nil)
	_, err := env.Client.PutObject(ctx, &s3.PutObjectInput{Bucket: &env.Bucket, Key: aws.String("bad"),
		Body: strings.NewReader("fencekit-blob 1 put 12abc nonce\nx"), Metadata: map[string]string{tokenMetadata: "12abc"}})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = s.Get(ctx, "bad")
	if !errors.Is(err, blobfence.ErrBadMetadata) || errors.Is(err, fence.ErrInvalid) || !strings.Contains(err.Error(), "12abc") {
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
	s, c, env := newStore(t, nil)
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
	if n := c.total() - before; n != 2 || c.deletes.Load() != 0 {
		t.Fatalf("uncontended delete sent %d requests (%d DELETEs), want 2 (HEAD, PUT of the tombstone)", n, c.deletes.Load())
	}
	if _, _, err := s.Get(ctx, "d"); !errors.Is(err, blobfence.ErrNotFound) {
		t.Fatalf("Get after delete: %v, want ErrNotFound", err)
	}
	if _, err := s.Head(ctx, "d"); !errors.Is(err, blobfence.ErrNotFound) {
		t.Fatalf("Head after delete: %v, want ErrNotFound", err)
	}
	var se2 *fence.StaleError
	if err := s.Put(ctx, "d", []byte("late"), 19); !errors.As(err, &se2) || se2.Current != 20 {
		t.Fatalf("put of token 19 after token 20's delete: %v; want StaleError current 20", err)
	}
	before = c.total()
	if err := s.Delete(ctx, "d", 20); err != nil || c.total()-before != 1 {
		t.Fatalf("delete of a key deleted under the same token: %v after %d requests; want nil after 1 HEAD", err, c.total()-before)
	}
	// The tombstone is an object other tools see: the envelope, no body.
	out, err := env.Client.GetObject(ctx, &s3.GetObjectInput{Bucket: &env.Bucket, Key: aws.String("d")})
	if err != nil {
		t.Fatal(err)
	}
	stored, _ := io.ReadAll(out.Body)
	out.Body.Close()
	if e, b, err := blobfence.Decode(stored); err != nil || !e.Deleted || e.Token != 20 || len(b) != 0 {
		t.Fatalf("the tombstone decodes as %+v, %q, %v; want deleted under token 20, no body", e, b, err)
	}
	// Deleting a key never written leaves a tombstone too.
	if err := s.Delete(ctx, "never", 30); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, "never", []byte("late"), 29); !errors.Is(err, fence.ErrStale) {
		t.Fatalf("put of token 29 after token 30's delete of an absent key: %v; want ErrStale", err)
	}
	// Retire removes the fence, with a DELETE.
	if err := s.Retire(ctx, "never"); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, "never", []byte("any token"), 1); err != nil {
		t.Fatalf("put after Retire: %v", err)
	}
}

func TestDeleteLosesRaceThenDecidesAgain(t *testing.T) {
	ctx := context.Background()
	env := newRacer(t)
	s := mustNew(t, env, env.env.Bucket, nil)
	if err := s.Put(ctx, "k", []byte("v1"), 5); err != nil {
		t.Fatal(err)
	}
	// Between Delete's HEAD and its tombstone, a writer with token 6
	// replaces the object: the tombstone gets 412, the second round sees
	// token 6.
	var once sync.Once
	env.beforePut = func() {
		once.Do(func() {
			if err := mustNew(t, env.env.Client, env.env.Bucket, nil).Put(ctx, "k", []byte("v2"), 6); err != nil {
				t.Error(err)
			}
		})
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

// TestClaim: a claim records its token without changing what readers get
// (body, Content-Type, user metadata), so an older holder's put is refused
// from then on; on an absent key it leaves a tombstone.
func TestClaim(t *testing.T) {
	ctx := context.Background()
	s, c, env := newStore(t, nil)
	if err := s.Put(ctx, "k", []byte("from 8"), 8, blobfence.ContentType("text/plain"), blobfence.Metadata(map[string]string{"job": "j"})); err != nil {
		t.Fatal(err)
	}
	before := c.total()
	if err := s.Claim(ctx, "k", 9); err != nil || c.total()-before != 3 {
		t.Fatalf("claim: %v after %d requests; want nil after 3 (HEAD, GET, PUT)", err, c.total()-before)
	}
	wantStored(t, s, "k", "from 8", 9)
	h, err := env.Client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &env.Bucket, Key: aws.String("k")})
	if err != nil || aws.ToString(h.ContentType) != "text/plain" || h.Metadata["job"] != "j" {
		t.Fatalf("after the claim: %v, Content-Type %q, metadata %v; want the put's", err, aws.ToString(h.ContentType), h.Metadata)
	}
	wantStale(t, "put of token 8 after claim 9", s.Put(ctx, "k", []byte("late"), 8))
	wantStale(t, "claim of token 8 after claim 9", s.Claim(ctx, "k", 8))
	before = c.total()
	if err := s.Claim(ctx, "k", 9); err != nil || c.total()-before != 1 {
		t.Fatalf("claim of the token the key has: %v after %d requests; want nil after 1 HEAD", err, c.total()-before)
	}

	before = c.total()
	if err := s.Claim(ctx, "absent", 5); err != nil || c.total()-before != 2 {
		t.Fatalf("claim of an absent key: %v after %d requests; want nil after 2", err, c.total()-before)
	}
	if _, _, err := s.Get(ctx, "absent"); !errors.Is(err, blobfence.ErrNotFound) {
		t.Fatalf("Get after a claim of an absent key: %v; want ErrNotFound", err)
	}
	wantStale(t, "put of token 4 after claim 5", s.Put(ctx, "absent", []byte("late"), 4))
	if err := s.Put(ctx, "absent", []byte("mine"), 5); err != nil {
		t.Fatal(err)
	}
	wantStored(t, s, "absent", "mine", 5)
}

// TestSameBytesChangeTheETag: every write of the same bytes gets a new
// ETag, so a writer holding an older version's ETag is refused, at the
// usual two requests per put.
func TestSameBytesChangeTheETag(t *testing.T) {
	ctx := context.Background()
	s, c, _ := newStore(t, &blobfence.Options{VersionCache: -1}) // count every read
	v5, err := s.PutReader(ctx, "k", strings.NewReader("same bytes"), 5)
	if err != nil {
		t.Fatal(err)
	}
	before := c.total()
	v9, err := s.PutReader(ctx, "k", strings.NewReader("same bytes"), 9)
	if err != nil || v9.ETag() == v5.ETag() || c.total()-before != 2 {
		t.Fatalf("the same bytes under token 9: %+v, %v after %d requests; want a new ETag after 2", v9, err, c.total()-before)
	}
	var se *fence.StaleError
	if err := s.Put(ctx, "k", []byte("stale"), 7, blobfence.After(v5)); !errors.As(err, &se) || se.Current != 9 {
		t.Fatalf("put of token 7 after version 5: %v; want StaleError current 9", err)
	}
	wantStored(t, s, "k", "same bytes", 9)
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
	if c.puts.Load() != 0 {
		t.Fatalf("%d PUTs sent; the GET's NoSuchBucket ends the call, want 0", c.puts.Load())
	}
}

// TestNoChecksumSkippedWarnings: the store's GETs do not make the SDK log
// "Response has no supported checksum" (SeaweedFS sends no checksum, and
// a client from config.LoadDefaultConfig prints the line for each GET);
// the store proves its reads itself. Versitygw sends checksums: run it
// with FENCEKIT_S3_SERVER=seaweedfs.
func TestNoChecksumSkippedWarnings(t *testing.T) {
	ctx := context.Background()
	env := testenv.S3(t)
	var mu sync.Mutex
	var logged []string
	client := s3.New(env.Client.Options(), func(o *s3.Options) {
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenSupported // config.LoadDefaultConfig's default
		o.Logger = logging.LoggerFunc(func(_ logging.Classification, format string, v ...any) {
			mu.Lock()
			defer mu.Unlock()
			logged = append(logged, fmt.Sprintf(format, v...))
		})
	})
	s := mustNew(t, client, env.Bucket, &blobfence.Options{VersionCache: -1})
	for range 2 {
		if err := s.Put(ctx, "k", []byte("body"), 1); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := s.Get(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Head(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, l := range logged {
		if strings.Contains(l, "no supported checksum") {
			t.Fatalf("the SDK logged %d lines, among them %q", len(logged), l)
		}
	}
}
