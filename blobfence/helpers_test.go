package blobfence_test

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/fencekit/fencekit/blobfence"
	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/testenv"
)

func TestMain(m *testing.M) { testenv.MainWithServers(m, testenv.EnvS3Endpoint) }

// counting wraps an S3API and counts the requests per operation.
type counting struct {
	blobfence.S3API
	heads, puts, gets, deletes atomic.Int64
}

func (c *counting) total() int64 {
	return c.heads.Load() + c.puts.Load() + c.gets.Load() + c.deletes.Load()
}

func (c *counting) HeadObject(ctx context.Context, in *s3.HeadObjectInput, o ...func(*s3.Options)) (*s3.HeadObjectOutput, error) {
	c.heads.Add(1)
	return c.S3API.HeadObject(ctx, in, o...)
}

func (c *counting) PutObject(ctx context.Context, in *s3.PutObjectInput, o ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	c.puts.Add(1)
	return c.S3API.PutObject(ctx, in, o...)
}

func (c *counting) GetObject(ctx context.Context, in *s3.GetObjectInput, o ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	c.gets.Add(1)
	return c.S3API.GetObject(ctx, in, o...)
}

func (c *counting) DeleteObject(ctx context.Context, in *s3.DeleteObjectInput, o ...func(*s3.Options)) (*s3.DeleteObjectOutput, error) {
	c.deletes.Add(1)
	return c.S3API.DeleteObject(ctx, in, o...)
}

// mustNew is blobfence.New for arguments that must be valid.
func mustNew(tb testing.TB, c blobfence.S3API, bucket string, opts *blobfence.Options) *blobfence.Store {
	tb.Helper()
	s, err := blobfence.New(c, bucket, opts)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// wantStored fails the test unless key holds body with token tok.
func wantStored(t *testing.T, s *blobfence.Store, key, body string, tok fence.Token) {
	t.Helper()
	got, gotTok, err := s.Get(context.Background(), key)
	if err != nil || string(got) != body || gotTok != tok {
		t.Fatalf("stored %q: %q, token %d, %v; want %q, token %d", key, got, gotTok, err, body, tok)
	}
}

// newStore returns a store on a fresh bucket, its request counter and the
// raw client (for writes that bypass fencing).
func newStore(tb testing.TB, opts *blobfence.Options) (*blobfence.Store, *counting, *testenv.S3Env) {
	tb.Helper()
	env := testenv.S3(tb)
	c := &counting{S3API: env.Client}
	return mustNew(tb, c, env.Bucket, opts), c, env
}

// pooledClient is a client of env's server that keeps up to conns idle
// connections, so that many concurrent writers reuse them instead of
// opening a connection per request (the SDK's default keeps 10); with
// conns 0 it keeps none, a connection per request.
func pooledClient(env *testenv.S3Env, conns int) *s3.Client {
	return s3.New(s3.Options{
		BaseEndpoint: aws.String(env.Endpoint),
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider(env.AccessKey, env.SecretKey, ""),
		UsePathStyle: true,
		HTTPClient: awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) {
			tr.MaxIdleConns, tr.MaxIdleConnsPerHost = conns, conns
			tr.DisableKeepAlives = conns == 0
		}),
	})
}

// putV puts body and returns the version written.
func putV(ctx context.Context, s *blobfence.Store, key, body string, tok fence.Token) (blobfence.Version, error) {
	return s.PutReader(ctx, key, strings.NewReader(body), tok)
}

// putAfter puts body after version v.
func putAfter(ctx context.Context, s *blobfence.Store, key, body string, tok fence.Token, v blobfence.Version) error {
	return s.Put(ctx, key, []byte(body), tok, blobfence.After(v))
}

// What a program sees of a Store's defaults: the user-metadata name of the
// token (x-amz-meta-fencekit-token), the rounds a call makes before
// ErrContention, and S3's longest key.
const (
	tokenMetadata   = "fencekit-token"
	defaultAttempts = 8
	maxKeyLen       = 1024
)
