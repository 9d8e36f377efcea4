package bench

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
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
//	mode=fenced       blobfence Store.Put, repeated: the Store remembers the
//	                  version it wrote, so the conditional PUT alone (If-Match)
//	mode=fenced-read  Store.Put without the version cache: what a first put
//	                  costs, a ranged GET (current ETag and token), then the PUT
//	mode=fenced-etag  blobfence Store.PutReader with After(the version the
//	                  previous put returned): the conditional PUT alone
//	mode=plain-cond   PutObject sending what fenced-etag sends (If-Match on
//	                  the previous ETag, the token and write-record metadata,
//	                  an envelope header line before the body), built
//	                  without blobfence: plain-cond/plain is the server's and
//	                  the SDK's cost of those bytes, fenced-etag/plain-cond
//	                  blobfence's own
//
// Every put carries its token in the body's first 8 bytes.
//
// requests/op counts HTTP requests sent (retries included);
// client-cpu-ns/op is this process's CPU time, s3-cpu-ns/op the CPU time of
// the versitygw the benchmark started (10 ms resolution, so meaningful only
// over many puts; absent with FENCEKIT_S3_ENDPOINT).
func BenchmarkS3Put(b *testing.B) {
	env := newS3Env(b)
	store, err := blobfence.New(env.client, env.bucket, nil)
	if err != nil {
		b.Fatal(err)
	}
	reading, err := blobfence.New(env.client, env.bucket, &blobfence.Options{VersionCache: -1})
	if err != nil {
		b.Fatal(err)
	}
	var tok atomic.Int64
	for _, size := range s3Sizes {
		body := bytes.Repeat([]byte("fencekit"), size.n/8)
		for _, mode := range rotated([]string{"plain", "fenced", "fenced-read", "fenced-etag", "plain-cond"}) {
			b.Run("size="+size.name+"/mode="+mode, func(b *testing.B) {
				put := s3PutFunc(env, store, reading, mode, uniqueKey(size.name, mode), body, &tok)
				if err := put(); err != nil { // create the object: every timed put overwrites
					b.Fatal(err)
				}
				requests, cpu, srvCPU := env.requests.Load(), ProcessCPU(), env.serverCPU(b)
				b.SetBytes(int64(size.n))
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if err := put(); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				n := float64(b.N)
				b.ReportMetric(float64(env.requests.Load()-requests)/n, "requests/op")
				b.ReportMetric(float64(ProcessCPU()-cpu)/n, "client-cpu-ns/op")
				if env.pid != 0 {
					b.ReportMetric(float64(env.serverCPU(b)-srvCPU)/n, "s3-cpu-ns/op")
				}
			})
		}
	}
}

// s3PutFunc returns the function that does one put of mode (see
// BenchmarkS3Put) on key, with the next token of tok in body's first 8
// bytes.
func s3PutFunc(env *s3Env, store, reading *blobfence.Store, mode, key string, body []byte, tok *atomic.Int64) func() error {
	ctx := context.Background()
	var prev blobfence.Version
	var prevETag *string
	return func() error {
		t := fence.Token(tok.Add(1))
		// The token in the body, as a workload would change it
		// (blobfence's cost does not depend on it).
		binary.BigEndian.PutUint64(body, uint64(t))
		switch mode {
		case "plain":
			_, err := env.client.PutObject(ctx, &s3.PutObjectInput{Bucket: &env.bucket, Key: &key,
				Body: bytes.NewReader(body)})
			return err
		case "fenced":
			return store.Put(ctx, key, body, t)
		case "fenced-read":
			return reading.Put(ctx, key, body, t)
		case "plain-cond":
			nonce := rand.Text()
			stored := append([]byte("fencekit-blob 1 put "+t.String()+" "+nonce+"\n"), body...)
			sum := md5.Sum(stored)
			in := &s3.PutObjectInput{Bucket: &env.bucket, Key: &key, Body: bytes.NewReader(stored),
				ContentLength: aws.Int64(int64(len(stored))), IfMatch: prevETag,
				Metadata: map[string]string{"fencekit-token": t.String(),
					"fencekit-token-write": "2 put " + nonce + " " + hex.EncodeToString(sum[:])}}
			out, err := env.client.PutObject(ctx, in)
			if err == nil {
				prevETag = out.ETag
			}
			return err
		default:
			var opts []blobfence.PutOption
			if prev.ETag() != "" {
				opts = append(opts, blobfence.After(prev))
			}
			v, err := store.PutReader(ctx, key, bytes.NewReader(body), t, opts...)
			prev = v
			return err
		}
	}
}

// BenchmarkS3PutInterleaved times single 1 KiB puts of the modes of
// BenchmarkS3Put that send one request, one of each in turn (the order
// rotating) on one key per mode, so that every mode sees the same load:
// <mode>-us is the median time of one put, <mode>/plain the median ratio
// of a put to the plain put of the same turn, <mode>/plain-mean the ratio
// of their total times.
func BenchmarkS3PutInterleaved(b *testing.B) {
	env := newS3Env(b)
	store, err := blobfence.New(env.client, env.bucket, nil)
	if err != nil {
		b.Fatal(err)
	}
	modes := []string{"plain", "fenced", "fenced-etag", "plain-cond"}
	var tok atomic.Int64
	body := bytes.Repeat([]byte("fencekit"), 1<<10/8)
	puts := make([]func() error, len(modes))
	for i, mode := range modes {
		puts[i] = s3PutFunc(env, store, nil, mode, uniqueKey("1KiB", "interleaved", mode), bytes.Clone(body), &tok)
		if err := puts[i](); err != nil { // create the object: every timed put overwrites
			b.Fatal(err)
		}
	}
	took := make([]Samples, len(modes))
	ratio := make([]Samples, len(modes)) // as durations: ratio × 1 s
	turn := make([]time.Duration, len(modes))
	total := make([]time.Duration, len(modes))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j := range modes {
			m := (i + j) % len(modes)
			start := time.Now()
			if err := puts[m](); err != nil {
				b.Fatal(err)
			}
			turn[m] = time.Since(start)
			took[m].Add(turn[m])
			total[m] += turn[m]
		}
		for m := range modes {
			ratio[m].Add(time.Duration(float64(time.Second) * float64(turn[m]) / float64(turn[0])))
		}
	}
	b.StopTimer()
	for m, mode := range modes {
		b.ReportMetric(float64(took[m].Quantile(0.5))/float64(time.Microsecond), mode+"-us")
		if m > 0 {
			b.ReportMetric(ratio[m].Quantile(0.5).Seconds(), mode+"/plain")
			b.ReportMetric(float64(total[m])/float64(total[0]), mode+"/plain-mean")
		}
	}
}

// s3Env is the benchmark's bucket and a client counting its requests.
type s3Env struct {
	client   *s3.Client
	bucket   string
	requests *atomic.Int64
	pid      int // versitygw's, 0 when not started here
}

// serverCPU returns the CPU time of the versitygw process, 0 without one.
func (e *s3Env) serverCPU(b *testing.B) time.Duration {
	if e.pid == 0 {
		return 0
	}
	d, err := ProcCPU(e.pid)
	if err != nil {
		b.Fatal(err)
	}
	return d
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
func newS3Env(b testing.TB) *s3Env {
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
	return &s3Env{client: client, bucket: bucket, requests: n, pid: ep.Pid}
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
