package blobfence_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/fencekit/fencekit/blobfence"
	"github.com/fencekit/fencekit/internal/testenv"
)

// BenchmarkPut compares, for 1 KiB and 1 MiB bodies, sequentially and with
// 8 writers (each on its own key, so uncontended):
//
//	plain    an unconditional PutObject, no fencing
//	fenced   Store.Put: HEAD + conditional PUT
//	known    Store.PutReader with After(the version the previous put
//	         returned): the conditional PUT alone
//
// requests/op counts the S3 requests per put through a counting S3API.
// Each put changes the body's first 8 bytes, as a workload would (the
// store's puts cost the same for identical bytes).
func BenchmarkPut(b *testing.B) {
	env := testenv.S3(b)
	client := pooledClient(env, 32)
	var id atomic.Int64 // writer keys stay unique across b.N rounds
	for _, size := range []int{1 << 10, 1 << 20} {
		body := bytes.Repeat([]byte("fencekit"), size/8)
		for _, writers := range []int{1, 8} {
			for _, mode := range []string{"plain", "fenced", "known"} {
				name := fmt.Sprintf("%s/%s/writers=%d", mode, sizeName(size), writers)
				b.Run(name, func(b *testing.B) {
					c := &counting{S3API: client}
					s := mustNew(b, c, env.Bucket, nil)
					put := putFunc(b, mode, c, s, env.Bucket, body)
					b.SetBytes(int64(size))
					if writers == 1 {
						w := put(fmt.Sprintf("%s/%d", name, id.Add(1)))
						for b.Loop() {
							w()
						}
					} else {
						b.SetParallelism((writers + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
						b.RunParallel(func(pb *testing.PB) {
							w := put(fmt.Sprintf("%s/%d", name, id.Add(1)))
							for pb.Next() {
								w()
							}
						})
					}
					b.ReportMetric(float64(c.total())/float64(b.N), "requests/op")
				})
			}
		}
	}
}

// putFunc returns, per writer key, the function that does one put.
func putFunc(b *testing.B, mode string, c *counting, s *blobfence.Store, bucket string, body []byte) func(key string) func() {
	ctx := context.Background()
	return func(key string) func() {
		body := bytes.Clone(body)
		var n uint64
		next := func() []byte { // the body with a new counter in its first 8 bytes
			n++
			binary.BigEndian.PutUint64(body, n)
			return body
		}
		switch mode {
		case "plain":
			return func() {
				_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key),
					Body: bytes.NewReader(next()), ContentLength: aws.Int64(int64(len(body)))})
				if err != nil {
					b.Error(err)
				}
			}
		case "fenced":
			return func() {
				if err := s.Put(ctx, key, next(), 1); err != nil {
					b.Error(err)
				}
			}
		default:
			var last blobfence.Version
			return func() {
				var opts []blobfence.PutOption
				if last.ETag() != "" {
					opts = append(opts, blobfence.After(last))
				}
				v, err := s.PutReader(ctx, key, bytes.NewReader(next()), 1, opts...)
				if err != nil {
					b.Error(err)
				}
				last = v
			}
		}
	}
}

func sizeName(n int) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%dMiB", n>>20)
	}
	return fmt.Sprintf("%dKiB", n>>10)
}

// BenchmarkPutOpaqueETags: Put and Put with After behind the proxy that
// gives every write an opaque ETag (as SSE-KMS does), 1 KiB bodies.
func BenchmarkPutOpaqueETags(b *testing.B) {
	env := testenv.S3(b)
	_, proxy := newOpaqueETags()
	c := &counting{S3API: proxy.client(b, env)}
	s := mustNew(b, c, env.Bucket, nil)
	body := bytes.Repeat([]byte("fencekit"), 128)
	for _, mode := range []string{"fenced", "known"} {
		b.Run(mode, func(b *testing.B) {
			w := putFunc(b, mode, c, s, env.Bucket, body)("opaque-" + mode)
			w() // the first put creates the key
			before := c.total()
			for b.Loop() {
				w()
			}
			b.ReportMetric(float64(c.total()-before)/float64(b.N), "requests/op")
		})
	}
}
