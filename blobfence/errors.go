package blobfence

import (
	"fmt"
	"strconv"

	"github.com/fencekit/fencekit/fence"
)

// kind is a sentinel of this package. Alone it says "blobfence: what";
// inside an [opError], which says the package once, it says "what".
type kind string

func (k kind) Error() string { return "blobfence: " + string(k) }
func (k kind) bare() string  { return string(k) }

// innerError is an error of this package that an [opError] wraps; its
// message is built once, without the package name.
type innerError struct {
	msg  string
	errs []error
}

func (e *innerError) Error() string   { return "blobfence: " + e.msg }
func (e *innerError) bare() string    { return e.msg }
func (e *innerError) Unwrap() []error { return e.errs }

// errorf formats an inner error as fmt.Errorf does, with two differences:
// every error among args is wrapped (write %v for it, not %w), and each is
// shown without its package name, which the enclosing [opError] says.
func errorf(format string, args ...any) error {
	shown := make([]any, len(args))
	var errs []error
	for i, a := range args {
		shown[i] = a
		if err, ok := a.(error); ok && err != nil {
			shown[i] = bare(err)
			errs = append(errs, err)
		}
	}
	return &innerError{msg: fmt.Sprintf(format, shown...), errs: errs}
}

// bare is err's message without a package name in front: this package's
// own errors know theirs, a [*fence.StaleError] is told from its fields,
// and any other error (S3's, the context's) has none to drop.
func bare(err error) string {
	switch e := err.(type) {
	case interface{ bare() string }:
		return e.bare()
	case *fence.StaleError:
		return "stale token " + e.Presented.String() + " for " + strconv.Quote(e.Resource) +
			": token " + e.Current.String() + " was already accepted"
	}
	return err.Error()
}

// opError is an error of one call on one object, "blobfence: op
// bucket/key: what went wrong", naming the package and the object once
// even when err is a sentinel or a [*fence.StaleError] (which names the
// object: then resource is "").
type opError struct {
	op, resource string
	err          error
}

func (e *opError) Error() string {
	where := e.op
	if e.resource != "" {
		where += " " + e.resource
	}
	return "blobfence: " + where + ": " + bare(e.err)
}

func (e *opError) Unwrap() error { return e.err }
