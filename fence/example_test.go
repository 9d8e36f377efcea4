package fence_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/fencekit/fencekit/fence"
)

// The storage side of Kleppmann's scenario: client A got token 33, paused
// past its lease's TTL, and client B got token 34 and wrote. A's late write is
// rejected instead of clobbering B's.
func ExampleCheck() {
	store := fence.NewMemStore()

	fmt.Println("A (token 33) writes:", store.Put("file", 33, []byte("A's data")))
	fmt.Println("B (token 34) writes:", store.Put("file", 34, []byte("B's data")))

	err := store.Put("file", 33, []byte("A's late data"))
	fmt.Println("A resumes and writes:", err)

	var se *fence.StaleError
	if errors.As(err, &se) {
		fmt.Printf("rejected: presented %s, storage has seen %s\n", se.Presented, se.Current)
	}
	data, tok := store.Get("file")
	fmt.Printf("stored: %q (token %s)\n", data, tok)
	// Output:
	// A (token 33) writes: <nil>
	// B (token 34) writes: <nil>
	// A resumes and writes: fence: stale token 33 for "file": token 34 was already accepted
	// rejected: presented 33, storage has seen 34
	// stored: "B's data" (token 34)
}

func ExampleParseToken() {
	tok, err := fence.ParseToken("34")
	fmt.Println(tok, err)
	_, err = fence.ParseToken("-1")
	fmt.Println(err)
	_, err = fence.ParseToken("0")
	fmt.Println(errors.Is(err, fence.ErrInvalid))
	// Output:
	// 34 <nil>
	// token "-1" is negative
	// true
}

func ExampleWithToken() {
	ctx := fence.WithToken(context.Background(), 34)
	if tok, ok := fence.TokenFrom(ctx); ok {
		fmt.Println("writing with token", tok)
	}
	// Output: writing with token 34
}

func ExampleVerifyHistory() {
	fmt.Println(fence.VerifyHistory("file", []fence.Token{33, 33, 34}))
	fmt.Println(fence.VerifyHistory("file", []fence.Token{33, 34, 33}))
	// Output:
	// <nil>
	// fence: history of "file" violates the fencing invariant: write 2 accepted token 33 after write 1 accepted token 34
}
