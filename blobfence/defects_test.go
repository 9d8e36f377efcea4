package blobfence_test

// Regression tests, one per defect found on versitygw: each failed before
// its fix.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/fencekit/fencekit/blobfence"
	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/testenv"
)

// pauseBeforeWrite is an S3 client that runs meanwhile once, right before
// its first write is sent: what newer holders do while an older holder,
// having read the object and passed its check, is paused before its write.
type pauseBeforeWrite struct {
	blobfence.S3API
	once      sync.Once
	meanwhile func()
}

func (p *pauseBeforeWrite) PutObject(ctx context.Context, in *s3.PutObjectInput, o ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	p.once.Do(p.meanwhile)
	return p.S3API.PutObject(ctx, in, o...)
}

func (p *pauseBeforeWrite) DeleteObject(ctx context.Context, in *s3.DeleteObjectInput, o ...func(*s3.Options)) (*s3.DeleteObjectOutput, error) {
	p.once.Do(p.meanwhile)
	return p.S3API.DeleteObject(ctx, in, o...)
}

// mustPut puts body under tok and fails the test if it is refused.
func mustPut(t *testing.T, s *blobfence.Store, key, body string, tok fence.Token) {
	t.Helper()
	if err := s.Put(context.Background(), key, []byte(body), tok); err != nil {
		t.Fatalf("put %q with token %d: %v", body, tok, err)
	}
}

// wantStale fails the test unless err is a stale verdict.
func wantStale(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, fence.ErrStale) {
		t.Errorf("%s: %v; want ErrStale", what, err)
	}
}

// TestContentGoesBack (defect 1): an older holder (token 5) reads A,
// written by 4, and passes its check; newer holders write B (9) and A
// again (12). The older holder's write, delete, write of A itself (the
// record-only form, a one-part upload) and write after its own last
// version must all be refused, and token 12's A must stay.
func TestContentGoesBack(t *testing.T) {
	ctx := context.Background()
	env := testenv.S3(t)
	newer := mustNew(t, env.Client, env.Bucket, nil)
	aba := func(key string) func() {
		return func() {
			mustPut(t, newer, key, "B", 9)
			mustPut(t, newer, key, "A", 12)
		}
	}
	older := func(key string) *blobfence.Store {
		mustPut(t, newer, key, "A", 4)
		return mustNew(t, &pauseBeforeWrite{S3API: env.Client, meanwhile: aba(key)}, env.Bucket, nil)
	}
	wantStale(t, "put of other bytes", older("put").Put(ctx, "put", []byte("old"), 5))
	wantStale(t, "put of the same bytes", older("same").Put(ctx, "same", []byte("A"), 5))
	wantStale(t, "delete", older("delete").Delete(ctx, "delete", 5))
	for _, key := range []string{"put", "same", "delete"} {
		wantStored(t, newer, key, "A", 12)
	}

	// No race at all: the older holder's own last version, then B and A.
	v, err := putV(ctx, newer, "after", "A", 5)
	if err != nil {
		t.Fatal(err)
	}
	mustPut(t, newer, "after", "B", 9)
	mustPut(t, newer, "after", "A", 12)
	wantStale(t, "put after the older holder's own version", putAfter(ctx, newer, "after", "old", 5, v))
	wantStored(t, newer, "after", "A", 12)
}

// TestDeleteThenSameBytes (defect 2): a delete keeps the fence, and the
// same bytes written again after it do not reopen an older holder's read.
func TestDeleteThenSameBytes(t *testing.T) {
	ctx := context.Background()
	env := testenv.S3(t)
	newer := mustNew(t, env.Client, env.Bucket, nil)

	mustPut(t, newer, "gone", "A", 9)
	if err := newer.Delete(ctx, "gone", 9); err != nil {
		t.Fatal(err)
	}
	wantStale(t, "put after a delete by a newer token", newer.Put(ctx, "gone", []byte("old"), 5))

	mustPut(t, newer, "back", "A", 4)
	older := mustNew(t, &pauseBeforeWrite{S3API: env.Client, meanwhile: func() {
		if err := newer.Delete(ctx, "back", 9); err != nil {
			t.Error(err)
		}
		mustPut(t, newer, "back", "A", 12)
	}}, env.Bucket, nil)
	wantStale(t, "put over delete-then-the-same-bytes", older.Put(ctx, "back", []byte("old"), 5))
	wantStored(t, newer, "back", "A", 12)

	// An empty object as a "tombstone".
	mustPut(t, newer, "empty", "", 4)
	older = mustNew(t, &pauseBeforeWrite{S3API: env.Client, meanwhile: func() {
		mustPut(t, newer, "empty", "B", 9)
		mustPut(t, newer, "empty", "", 12)
	}}, env.Bucket, nil)
	wantStale(t, "delete over tombstone-B-tombstone", older.Delete(ctx, "empty", 5))
	wantStored(t, newer, "empty", "", 12)
}

// TestRacingStaleDelete (defect 3): a delete and a put of a newer token
// race, both having read the same object. Whatever the order, the put's
// object must survive: versitygw v1.8.0 checks a DELETE's If-Match outside
// its PUT lock, and a DELETE with If-Match removed an acknowledged
// newer object in about 1 round of 8.
func TestRacingStaleDelete(t *testing.T) {
	ctx := context.Background()
	env := testenv.S3(t)
	c := &counting{S3API: pooledClient(env, 8)}
	s := mustNew(t, c, env.Bucket, nil)
	rounds := 200
	if testing.Short() {
		rounds = 15
	}
	for round := range rounds {
		key := fmt.Sprintf("race-%02d", round)
		mustPut(t, s, key, "A", 10)
		writes := c.puts.Load() + c.deletes.Load()
		// Both read A before either writes: each waits at its first
		// write for the other to arrive there.
		var arrived sync.WaitGroup
		arrived.Add(2)
		meet := func() { arrived.Done(); arrived.Wait() }
		// The delete starts 0-2 ms after the put, so that it sometimes
		// arrives while the put is being committed.
		lag := time.Duration(round%9) * 250 * time.Microsecond
		deleter := mustNew(t, &pauseBeforeWrite{S3API: c, meanwhile: func() { meet(); time.Sleep(lag) }}, env.Bucket, nil)
		putter := mustNew(t, &pauseBeforeWrite{S3API: c, meanwhile: meet}, env.Bucket, nil)
		var wg sync.WaitGroup
		var delErr, putErr error
		wg.Go(func() { delErr = deleter.Delete(ctx, key, 10) })
		wg.Go(func() { putErr = putter.Put(ctx, key, []byte("B"), 20) })
		wg.Wait()
		if c.puts.Load()+c.deletes.Load() < writes+2 {
			t.Fatalf("round %d: the delete and the put sent %d writes; the race needs both sent", round, c.puts.Load()+c.deletes.Load()-writes)
		}
		if putErr != nil {
			t.Fatalf("round %d: put of token 20: %v", round, putErr)
		}
		if delErr != nil && !errors.Is(delErr, fence.ErrStale) {
			t.Fatalf("round %d: delete of token 10: %v; want nil or ErrStale", round, delErr)
		}
		wantStored(t, s, key, "B", 20)
	}
}

// integrityStore returns a store on a private versitygw whose ETags are
// derived from its data-integrity checksums, not MD5 (defect 4).
func integrityStore(t *testing.T) (*blobfence.Store, *s3.Client, string) {
	srv := testenv.StartS3Server(t, "--data-integrity-etag")
	c := srv.Client()
	const bucket = "integrity"
	if _, err := c.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	return mustNew(t, c, bucket, nil), c, bucket
}

// TestChecksumETags (defect 4): on a server whose ETags are content
// checksums other than MD5, the same bytes again must not reopen an older
// holder's read.
func TestChecksumETags(t *testing.T) {
	ctx := context.Background()
	newer, c, bucket := integrityStore(t)
	if err := newer.Verify(ctx); err != nil {
		t.Fatalf("Verify: %v", err)
	}
	mustPut(t, newer, "k", "A", 4)
	older := mustNew(t, &pauseBeforeWrite{S3API: c, meanwhile: func() {
		mustPut(t, newer, "k", "A", 9)
	}}, bucket, nil)
	wantStale(t, "put over the same bytes, non-MD5 ETags", older.Put(ctx, "k", []byte("old"), 5))
	wantStored(t, newer, "k", "A", 9)
}

// TestIdenticalBytesFromNewHolders (defect 5): successive holders writing
// the same bytes are all accepted.
func TestIdenticalBytesFromNewHolders(t *testing.T) {
	s, _, _ := newStore(t, nil)
	for _, tok := range []fence.Token{4, 9, 12, 13, 20} {
		mustPut(t, s, "report", "same every day", tok)
	}
	wantStored(t, s, "report", "same every day", 20)
}

// defaultConfigClient is the client docs/s3.md shows: LoadDefaultConfig
// (credentials and region from the environment, the SDK's default request
// checksums) and s3.NewFromConfig with the server's endpoint.
func defaultConfigClient(t *testing.T, env *testenv.S3Env) *s3.Client {
	t.Setenv("AWS_ACCESS_KEY_ID", env.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", env.SecretKey)
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_CONFIG_FILE", "/nonexistent")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.BaseEndpoint = aws.String(env.Endpoint)
		o.UsePathStyle = true
	})
}

// TestDefaultConfigClient (defect 6): the client users build passes Verify
// and writes the bytes the object already holds under a newer token.
func TestDefaultConfigClient(t *testing.T) {
	ctx := context.Background()
	env := testenv.S3(t)
	s := mustNew(t, defaultConfigClient(t, env), env.Bucket, nil)
	if err := s.Verify(ctx); err != nil {
		t.Fatalf("Verify with a LoadDefaultConfig client: %v", err)
	}
	mustPut(t, s, "k", "A", 4)
	mustPut(t, s, "k", "A", 9)
	if err := s.Delete(ctx, "k", 10); err != nil {
		t.Fatal(err)
	}
	wantStale(t, "put after delete", s.Put(ctx, "k", []byte("A"), 9))
}
