package fence_test

import (
	"errors"
	"fmt"

	"github.com/fencekit/fencekit/fence"
)

// The storage side of Kleppmann's scenario: client A got token 33, paused
// past its lease's TTL, and client B got token 34 and wrote. A store that
// keeps the newest token it accepted refuses A's late write instead of
// letting it clobber B's.
func ExampleCheck() {
	var newest fence.Token // what the storage keeps with the data
	write := func(tok fence.Token) error {
		if err := fence.Check("file", tok, newest); err != nil {
			return err
		}
		newest = tok // in the same atomic step as the write
		return nil
	}

	fmt.Println("A (token 33) writes:", write(33))
	fmt.Println("B (token 34) writes:", write(34))
	err := write(33)
	fmt.Println("A resumes and writes:", err)

	var se *fence.StaleError
	if errors.As(err, &se) {
		fmt.Printf("refused: presented %s, storage has seen %s\n", se.Presented, se.Current)
	}
	fmt.Println("stop, do not retry:", errors.Is(err, fence.ErrFencedOut))
	// Output:
	// A (token 33) writes: <nil>
	// B (token 34) writes: <nil>
	// A resumes and writes: fence: stale token 33 for "file": token 34 was already accepted
	// refused: presented 33, storage has seen 34
	// stop, do not retry: true
}
