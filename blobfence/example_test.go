package blobfence_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/fencekit/fencekit/blobfence"
	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/testenv"
)

// The set-up docs/s3.md shows: credentials and region from the
// environment (config.LoadDefaultConfig, with the SDK's default request
// checksums), a client for the server's endpoint with path-style
// addressing, a store, and Verify once at start-up. Here the server is the
// one at FENCEKIT_S3_ENDPOINT, with the keys FENCEKIT_S3_ACCESS_KEY and
// FENCEKIT_S3_SECRET_KEY when set (as fencectl does); for AWS, leave
// BaseEndpoint and UsePathStyle out.
func Example_customEndpoint() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg, err := config.LoadDefaultConfig(ctx) // AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION, ...
	if err != nil {
		fmt.Println(err)
		return
	}
	if key := os.Getenv("FENCEKIT_S3_ACCESS_KEY"); key != "" {
		cfg.Credentials = credentials.NewStaticCredentialsProvider(key, os.Getenv("FENCEKIT_S3_SECRET_KEY"), "")
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1" // any region, for a local server
	}
	client := s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.BaseEndpoint = aws.String(exampleEndpoint()) // such as "http://127.0.0.1:7070"
		o.UsePathStyle = true                          // http://host/bucket/key
	})
	bucket, remove := exampleBucket(client) // a fresh bucket, removed at the end
	defer remove()

	store, err := blobfence.New(client, bucket, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("verify:", store.Verify(ctx))
	err = store.Put(ctx, "daily.csv", []byte("a,b\n1,2\n"), 7,
		blobfence.ContentType("text/csv"), blobfence.Metadata(map[string]string{"job": "daily"}))
	fmt.Println("put:", err)
	head, err := client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String("daily.csv")})
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

// The same with a client built field by field (static credentials).
func Example_staticCredentials() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := s3.New(s3.Options{
		BaseEndpoint: aws.String(exampleEndpoint()),
		Region:       "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider(
			os.Getenv("FENCEKIT_S3_ACCESS_KEY"), os.Getenv("FENCEKIT_S3_SECRET_KEY"), ""),
		UsePathStyle: true,
	})
	bucket, remove := exampleBucket(client)
	defer remove()

	store, err := blobfence.New(client, bucket, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("verify:", store.Verify(ctx))
	// Output:
	// verify: <nil>
}

// Kleppmann's scenario on S3: client A holds token 33, pauses past its
// lease, client B gets token 34 and writes; A's late write is refused and
// B's object stays.
func ExampleStore_Put() {
	ctx := context.Background()
	store, done := exampleStore() // blobfence.New(s3Client, bucket, nil)
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
func ExampleAfter() {
	ctx := context.Background()
	store, done := exampleStore()
	defer done()

	last, err := store.PutReader(ctx, "log", strings.NewReader("entry 1"), 7)
	for i := 2; i <= 3 && err == nil; i++ {
		last, err = store.PutReader(ctx, "log", strings.NewReader(fmt.Sprint("entry ", i)), 7, blobfence.After(last))
	}
	body, tok, _ := store.Get(ctx, "log")
	fmt.Printf("%q, token %s, %v\n", body, tok, err)
	// A version names its key: it cannot stand for another key's object.
	err = store.Put(ctx, "other", []byte("x"), 7, blobfence.After(last))
	fmt.Println(errors.Is(err, fence.ErrInvalid))
	// Output:
	// "entry 3", token 7, <nil>
	// true
}

// PutReader streams the body from an io.ReadSeeker (a file, a section of
// one), rewinding it when it must try again.
func ExampleStore_PutReader() {
	ctx := context.Background()
	store, done := exampleStore()
	defer done()

	v, err := store.PutReader(ctx, "big.bin", strings.NewReader(strings.Repeat("x", 1<<20)), 12)
	fmt.Println(v.Token(), err)
	head, err := store.Head(ctx, "big.bin")
	fmt.Println(head == v, err)
	// Output:
	// 12 <nil>
	// true <nil>
}

// A delete keeps the fence: the key reads as absent, and an older holder
// cannot create it again.
func ExampleStore_Delete() {
	ctx := context.Background()
	store, done := exampleStore()
	defer done()

	_ = store.Put(ctx, "job/42", []byte("result"), 50)
	fmt.Println("stale delete refused:", errors.Is(store.Delete(ctx, "job/42", 49), fence.ErrStale))
	fmt.Println("delete:", store.Delete(ctx, "job/42", 50))
	_, _, err := store.Get(ctx, "job/42")
	fmt.Println("gone:", errors.Is(err, blobfence.ErrNotFound))
	err = store.Put(ctx, "job/42", []byte("late"), 49)
	fmt.Println("older holder after the delete:", errors.Is(err, fence.ErrStale))
	// Output:
	// stale delete refused: true
	// delete: <nil>
	// gone: true
	// older holder after the delete: true
}

// Retire removes a deleted key's fence for good (an operator's step).
func ExampleStore_Retire() {
	ctx := context.Background()
	store, done := exampleStore()
	defer done()

	_ = store.Put(ctx, "tmp/1", []byte("x"), 5)
	fmt.Println("live:", errors.Is(store.Retire(ctx, "tmp/1"), fence.ErrInvalid))
	_ = store.Delete(ctx, "tmp/1", 5)
	fmt.Println("retire:", store.Retire(ctx, "tmp/1"))
	fmt.Println("any token again:", store.Put(ctx, "tmp/1", []byte("y"), 1))
	// Output:
	// live: true
	// retire: <nil>
	// any token again: <nil>
}

// A new holder claims the key before it has anything to write: the older
// holder's late put is refused, and readers still get its predecessor's
// bytes.
func ExampleStore_Claim() {
	ctx := context.Background()
	store, done := exampleStore()
	defer done()

	_ = store.Put(ctx, "state", []byte("from 8"), 8)
	fmt.Println("claim 9:", store.Claim(ctx, "state", 9))
	fmt.Println("8 again:", errors.Is(store.Put(ctx, "state", []byte("late"), 8), fence.ErrStale))
	body, tok, err := store.Get(ctx, "state")
	fmt.Printf("%q, token %s, %v\n", body, tok, err)
	// Output:
	// claim 9: <nil>
	// 8 again: true
	// "from 8", token 9, <nil>
}

// New does no I/O; bad arguments are an error at once.
func ExampleNew() {
	_, err := blobfence.New(nil, "bucket", nil)
	fmt.Println(err)
	fmt.Println(errors.Is(err, fence.ErrInvalid))
	// Output:
	// blobfence: New: the S3 client is nil
	// true
}

// The same bytes from successive holders are all accepted: every write
// gets a new ETag, whatever the body.
func ExampleStore_Put_sameBytes() {
	ctx := context.Background()
	store, done := exampleStore()
	defer done()

	v1, _ := store.PutReader(ctx, "result", strings.NewReader("42"), 1)
	v2, _ := store.PutReader(ctx, "result", strings.NewReader("42"), 2)
	fmt.Println("new ETag for the same bytes:", v1.ETag() != v2.ETag())
	fmt.Println("holder 3, same bytes:", store.Put(ctx, "result", []byte("42"), 3))
	err := store.Put(ctx, "result", []byte("stale"), 1, blobfence.After(v1))
	fmt.Println("holder 1 on its old version:", errors.Is(err, fence.ErrFencedOut))
	// Output:
	// new ETag for the same bytes: true
	// holder 3, same bytes: <nil>
	// holder 1 on its old version: true
}

// A holder that restarts reads the object's current version once, and
// continues with one-request puts from there.
func ExampleStore_GetVersion() {
	ctx := context.Background()
	store, done := exampleStore()
	defer done()

	_ = store.Put(ctx, "state", []byte("step 1"), 21)
	body, v, err := store.GetVersion(ctx, "state")
	fmt.Printf("%q, token %s, %v\n", body, v.Token(), err)
	fmt.Println(store.Put(ctx, "state", []byte("step 2"), 22, blobfence.After(v)))
	// Output:
	// "step 1", token 21, <nil>
	// <nil>
}

func ExampleStore_Head() {
	ctx := context.Background()
	store, done := exampleStore()
	defer done()

	_, err := store.Head(ctx, "config.json")
	fmt.Println("absent:", errors.Is(err, blobfence.ErrNotFound))
	_ = store.Put(ctx, "config.json", []byte("{}"), 3)
	v, err := store.Head(ctx, "config.json")
	fmt.Println("token:", v.Token(), err)
	// Output:
	// absent: true
	// token: 3 <nil>
}

// exampleEndpoint is the examples' S3 server: FENCEKIT_S3_ENDPOINT, default
// http://127.0.0.1:7070.
func exampleEndpoint() string {
	if ep := os.Getenv("FENCEKIT_S3_ENDPOINT"); ep != "" {
		return ep
	}
	return "http://127.0.0.1:7070"
}

// exampleClient is the client of the S3 server at FENCEKIT_S3_ENDPOINT
// with the keys FENCEKIT_S3_ACCESS_KEY and FENCEKIT_S3_SECRET_KEY, built as
// in Example_staticCredentials.
func exampleClient() *s3.Client {
	return s3.New(s3.Options{
		BaseEndpoint: aws.String(exampleEndpoint()),
		Region:       "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider(
			os.Getenv("FENCEKIT_S3_ACCESS_KEY"), os.Getenv("FENCEKIT_S3_SECRET_KEY"), ""),
		UsePathStyle: true,
	})
}

// Get returns the body and the token of the write that stored it.
func ExampleStore_Get() {
	ctx := context.Background()
	store, done := exampleStore()
	defer done()

	_ = store.Put(ctx, "config", []byte("v2"), 7)
	body, tok, err := store.Get(ctx, "config")
	fmt.Printf("%s by token %s, %v\n", body, tok, err)
	_, _, err = store.Get(ctx, "missing")
	fmt.Println("missing:", errors.Is(err, blobfence.ErrNotFound))
	// Output:
	// v2 by token 7, <nil>
	// missing: true
}

// Create stores a write-once output as it is (other tools read the raw
// bytes); a second Create of the key is refused, whoever writes it.
func ExampleStore_Create() {
	ctx := context.Background()
	store, done := exampleStore()
	defer done()

	fmt.Println("first:", store.Create(ctx, "exports/2026-12.csv", []byte("id,total\n"), 34))
	err := store.Create(ctx, "exports/2026-12.csv", []byte("id,total\n"), 35)
	fmt.Println("second:", errors.Is(err, blobfence.ErrExists))
	body, tok, _ := store.Get(ctx, "exports/2026-12.csv")
	fmt.Printf("%q by token %s\n", body, tok)
	// Output:
	// first: <nil>
	// second: true
	// "id,total\n" by token 34
}

// exampleStore returns a store on a fresh bucket of exampleClient's server
// (blobfence.New(client, bucket, nil)) and the function that removes the
// bucket.
func exampleStore() (*blobfence.Store, func()) {
	client := exampleClient()
	bucket, remove := exampleBucket(client)
	store, err := blobfence.New(client, bucket, nil)
	if err != nil {
		fmt.Println(err)
	}
	return store, remove
}

// exampleBucket creates a bucket for one example and returns its name and
// the function that deletes it with its objects. Failures are printed, so
// that the example's output shows them.
func exampleBucket(client *s3.Client) (string, func()) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	bucket := fmt.Sprintf("example-%x", rand.Uint64())
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		fmt.Println("create the example's bucket:", err)
	}
	return bucket, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if err := testenv.EmptyBucket(ctx, client, bucket); err != nil {
			fmt.Fprintln(os.Stderr, "blobfence example: empty bucket:", err)
			return
		}
		if _, err := client.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(bucket)}); err != nil {
			fmt.Fprintln(os.Stderr, "blobfence example: delete bucket:", err)
		}
	}
}
