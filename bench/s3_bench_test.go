package bench

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/fencekit/fencekit/blobfence"
	"github.com/fencekit/fencekit/fence"
)

// s3Sizes are the object sizes of the put benchmarks.
var s3Sizes = []struct {
	name string
	n    int
}{{"1KiB", 1 << 10}, {"1MiB", 1 << 20}}

// BenchmarkS3Put compares fenced puts with plain ones, overwriting one key
// per benchmark on the S3 server:
//
//	mode=plain        PutObject, unconditional
//	mode=fenced       blobfence Store.Put: HEAD (current ETag and token), then a
//	                  PUT conditional on that ETag (If-Match, or If-None-Match: *)
//	mode=fenced-etag  blobfence Store.PutAfter with the version the previous
//	                  put returned: the conditional PUT alone
//
// requests/op counts HTTP requests sent (retries included).
func BenchmarkS3Put(b *testing.B) {
	env := newS3Env(b)
	store := blobfence.New(env.client, env.bucket, nil)
	var tok atomic.Int64
	for _, size := range s3Sizes {
		body := bytes.Repeat([]byte("fencekit"), size.n/8)
		for _, mode := range []string{"plain", "fenced", "fenced-etag"} {
			b.Run("size="+size.name+"/mode="+mode, func(b *testing.B) {
				ctx := context.Background()
				key := uniqueKey(size.name, mode)
				var prev blobfence.Version
				put := func() error {
					t := fence.Token(tok.Add(1))
					switch mode {
					case "plain":
						_, err := env.client.PutObject(ctx, &s3.PutObjectInput{Bucket: &env.bucket, Key: &key,
							Body: bytes.NewReader(body)})
						return err
					case "fenced":
						return store.Put(ctx, key, body, t)
					default:
						res, err := store.PutAfter(ctx, key, bytes.NewReader(body), t, prev)
						prev = res.Version
						return err
					}
				}
				if err := put(); err != nil { // create the object: every timed put overwrites
					b.Fatal(err)
				}
				requests := env.requests.Load()
				b.SetBytes(int64(size.n))
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if err := put(); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				b.ReportMetric(float64(env.requests.Load()-requests)/float64(b.N), "requests/op")
			})
		}
	}
}

// s3Env is the benchmark's bucket and a client counting its requests.
type s3Env struct {
	client   *s3.Client
	bucket   string
	requests *atomic.Int64
}

// countingHTTP counts the requests an S3 client sends.
type countingHTTP struct {
	next aws.HTTPClient
	n    *atomic.Int64
}

func (c countingHTTP) Do(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.next.Do(r)
}

// newS3Env creates a bucket on the S3 server (emptied and deleted at
// cleanup) and a path-style client counting its requests.
func newS3Env(b *testing.B) *s3Env {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ep, err := servers.S3(ctx)
	if err != nil {
		b.Fatal(err)
	}
	n := &atomic.Int64{}
	client := s3.New(s3.Options{
		BaseEndpoint: aws.String(ep.URL),
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider(ep.AccessKey, ep.SecretKey, ""),
		UsePathStyle: true,
		HTTPClient:   countingHTTP{next: awshttp.NewBuildableClient(), n: n},
	})
	bucket := "fkbench-" + strconv.FormatInt(time.Now().UnixNano()%1e12, 36)
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &bucket}); err != nil {
		b.Fatalf("bench: create bucket %s at %s: %v", bucket, ep.URL, err)
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := emptyAndDelete(ctx, client, bucket); err != nil {
			b.Errorf("bench: remove bucket %s: %v", bucket, err)
		}
	})
	return &s3Env{client: client, bucket: bucket, requests: n}
}

func emptyAndDelete(ctx context.Context, c *s3.Client, bucket string) error {
	p := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: &bucket})
	for pages := 0; p.HasMorePages(); pages++ {
		if pages > 10_000 {
			return fmt.Errorf("bench: bucket %s has too many objects", bucket)
		}
		page, err := p.NextPage(ctx)
		if err != nil {
			return err
		}
		for _, obj := range page.Contents {
			if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &bucket, Key: obj.Key}); err != nil {
				return err
			}
		}
	}
	_, err := c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: &bucket})
	return err
}
