package blobfence_test

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/fencekit/fencekit/blobfence"
	"github.com/fencekit/fencekit/fence"
)

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
