package blobfence_test

import (
	"bytes"
	"context"
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
//	known    Store.PutAfter with the version the previous put returned:
//	         the conditional PUT alone
//
// requests/op counts the S3 requests per put through a counting S3API.
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
		switch mode {
		case "plain":
			return func() {
				_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key),
					Body: bytes.NewReader(body), ContentLength: aws.Int64(int64(len(body)))})
				if err != nil {
					b.Error(err)
				}
			}
		case "fenced":
			return func() {
				if err := s.Put(ctx, key, body, 1); err != nil {
					b.Error(err)
				}
			}
		default:
			var last blobfence.Version
			return func() {
				res, err := s.PutAfter(ctx, key, bytes.NewReader(body), 1, last)
				if err != nil {
					b.Error(err)
				}
				last = res.Version
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
