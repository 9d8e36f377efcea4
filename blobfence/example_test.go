package blobfence_test

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/fencekit/fencekit/blobfence"
	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/testenv"
)

// The whole set-up for an S3-compatible server: a client for its endpoint
// with path-style addressing, a store, and Verify once at start-up. For
// AWS, leave BaseEndpoint and UsePathStyle out (or use s3.NewFromConfig).
func Example_customEndpoint() {
	ctx := context.Background()
	tb, done := testenv.ExampleTB("Example_customEndpoint")
	defer done()
	env := testenv.S3(tb) // the test server: endpoint, keys and a fresh bucket

	client := s3.New(s3.Options{
		BaseEndpoint: aws.String(env.Endpoint), // such as "http://127.0.0.1:7070"
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider(env.AccessKey, env.SecretKey, ""),
		UsePathStyle: true, // http://host/bucket/key
	})
	store, err := blobfence.New(client, env.Bucket, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("verify:", store.Verify(ctx))
	err = store.Put(ctx, "daily.csv", []byte("a,b\n1,2\n"), 7,
		blobfence.ContentType("text/csv"), blobfence.Metadata(map[string]string{"job": "daily"}))
	fmt.Println("put:", err)
	head, err := client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(env.Bucket), Key: aws.String("daily.csv")})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(aws.ToString(head.ContentType), head.Metadata["job"], head.Metadata["fencekit-token"])
	// Output:
	// verify: <nil>
	// put: <nil>
	// text/csv daily 7
}

// Kleppmann's scenario on S3: client A holds token 33, pauses past its
// lease, client B gets token 34 and writes; A's late write is refused and
// B's object stays.
func ExampleStore_Put() {
	ctx := context.Background()
	store, done := exampleStore("ExampleStore_Put") // blobfence.New(s3Client, bucket, nil)
	defer done()

	fmt.Println("A (33):", store.Put(ctx, "report.csv", []byte("A's data"), 33))
	fmt.Println("B (34):", store.Put(ctx, "report.csv", []byte("B's data"), 34))

	err := store.Put(ctx, "report.csv", []byte("A's late data"), 33)
	var se *fence.StaleError
	if errors.As(err, &se) {
		fmt.Printf("A resumes: stale, presented %s, stored %s\n", se.Presented, se.Current)
	}
	body, tok, err := store.Get(ctx, "report.csv")
	fmt.Printf("stored: %q, token %s, %v\n", body, tok, err)
	// Output:
	// A (33): <nil>
	// B (34): <nil>
	// A resumes: stale, presented 33, stored 34
	// stored: "B's data", token 34, <nil>
}

// A holder that writes the same object repeatedly passes the version its
// last put returned: each further put is a single conditional PUT.
func ExampleStore_PutAfter() {
	ctx := context.Background()
	store, done := exampleStore("ExampleStore_PutAfter")
	defer done()

	var last blobfence.Version // zero: the key is absent
	for i := 1; i <= 3; i++ {
		res, err := store.PutAfter(ctx, "log", strings.NewReader(fmt.Sprint("entry ", i)), 7, last)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("put %d: token %s, %d attempt, replaced the previous version: %v\n",
			i, res.Token, res.Attempts, res.Replaced == last)
		last = res.Version
	}
	// Output:
	// put 1: token 7, 1 attempt, replaced the previous version: true
	// put 2: token 7, 1 attempt, replaced the previous version: true
	// put 3: token 7, 1 attempt, replaced the previous version: true
}

// PutReader streams the body from an io.ReadSeeker (a file, a section of
// one), rewinding it when it must try again.
func ExampleStore_PutReader() {
	ctx := context.Background()
	store, done := exampleStore("ExampleStore_PutReader")
	defer done()

	res, err := store.PutReader(ctx, "big.bin", strings.NewReader(strings.Repeat("x", 1<<20)), 12)
	fmt.Println(res.Token, res.Attempts, res.Replaced.Exists(), err)
	v, err := store.Head(ctx, "big.bin")
	fmt.Println(v == res.Version, err)
	// Output:
	// 12 1 false <nil>
	// true <nil>
}

func ExampleStore_Delete() {
	ctx := context.Background()
	store, done := exampleStore("ExampleStore_Delete")
	defer done()

	_ = store.Put(ctx, "job/42", []byte("result"), 50)
	fmt.Println("stale delete refused:", errors.Is(store.Delete(ctx, "job/42", 49), fence.ErrStale))
	fmt.Println("delete:", store.Delete(ctx, "job/42", 50))
	_, _, err := store.Get(ctx, "job/42")
	fmt.Println("gone:", errors.Is(err, blobfence.ErrNotFound))
	// Output:
	// stale delete refused: true
	// delete: <nil>
	// gone: true
}

// New does no I/O; bad arguments are an error at once.
func ExampleNew() {
	_, err := blobfence.New(nil, "bucket", nil)
	fmt.Println(err)
	fmt.Println(errors.Is(err, blobfence.ErrInvalidArgument))
	// Output:
	// blobfence: invalid argument: New: the S3 client is nil
	// true
}

// A put of the bytes the object holds, by a newer holder, still changes
// the ETag, so an older holder's If-Match cannot pass; a third token
// writing them is refused with ErrSameBytes.
func ExampleErrSameBytes() {
	ctx := context.Background()
	store, done := exampleStore("ExampleErrSameBytes")
	defer done()

	v1, _ := store.PutReader(ctx, "result", strings.NewReader("42"), 1)
	v2, _ := store.PutReader(ctx, "result", strings.NewReader("42"), 2)
	fmt.Println("new ETag for the same bytes:", v1.ETag != v2.ETag)
	_, err := store.PutAfter(ctx, "result", strings.NewReader("stale"), 1, v1.Version)
	fmt.Println("holder 1 on its old version:", errors.Is(err, fence.ErrFencedOut))
	err = store.Put(ctx, "result", []byte("42"), 3)
	fmt.Println("holder 3, same bytes:", errors.Is(err, blobfence.ErrSameBytes))
	fmt.Println("holder 3, token in the body:", store.Put(ctx, "result", []byte("42 (token 3)"), 3))
	// Output:
	// new ETag for the same bytes: true
	// holder 1 on its old version: true
	// holder 3, same bytes: true
	// holder 3, token in the body: <nil>
}

// A holder that restarts reads the object's current version once, and
// continues with one-request puts from there.
func ExampleStore_GetVersion() {
	ctx := context.Background()
	store, done := exampleStore("ExampleStore_GetVersion")
	defer done()

	_ = store.Put(ctx, "state", []byte("step 1"), 21)
	body, v, err := store.GetVersion(ctx, "state")
	fmt.Printf("%q, token %s, %v\n", body, v.Token, err)
	res, err := store.PutAfter(ctx, "state", strings.NewReader("step 2"), 22, v)
	fmt.Println("attempts:", res.Attempts, "replaced what was read:", res.Replaced == v, err)
	// Output:
	// "step 1", token 21, <nil>
	// attempts: 1 replaced what was read: true <nil>
}

func ExampleStore_Head() {
	ctx := context.Background()
	store, done := exampleStore("ExampleStore_Head")
	defer done()

	_, err := store.Head(ctx, "config.json")
	fmt.Println("absent:", errors.Is(err, blobfence.ErrNotFound))
	_ = store.Put(ctx, "config.json", []byte("{}"), 3)
	v, err := store.Head(ctx, "config.json")
	fmt.Println("token:", v.Token, "exists:", v.Exists(), err)
	// Output:
	// absent: true
	// token: 3 exists: true <nil>
}
