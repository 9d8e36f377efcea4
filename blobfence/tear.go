package blobfence

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// The bounds of Verify's probe for torn metadata: at most tearPuts PUTs,
// tearHeads HEADs (from tearReaders readers) and tearTime.
const (
	tearPuts    = 20
	tearHeads   = 400
	tearReaders = 2
	tearTime    = 2 * time.Second
)

// shown is what a HEAD shows: the ETag and the token metadata.
type shown struct{ etag, meta string }

// tears reports whether the server can keep an object in a state whose
// ETag is one write's and whose metadata is another's (versitygw
// --sidecar stores them as two files, one after the other). It puts the
// key again and again, each write with its own metadata value, while
// readers HEAD it back to back. A reader's HEAD can straddle a write on
// any server, reading the metadata before it and the ETag after; so a
// tear counts only when two HEADs in a row, the second sent after the
// first's reply, show the same torn state: the object was in it between
// them. Writes stop at the first tear found.
func (p *probe) tears(parent context.Context) (bool, error) {
	ctx, cancel := context.WithTimeout(parent, tearTime)
	defer cancel()
	var (
		mu      sync.Mutex
		written = map[string]string{} // a PUT's reply ETag → the metadata it wrote
		held    []shown               // shown by two HEADs in a row, not known whole
		found   bool
	)
	torn := func(s shown) bool { // with mu held
		m, ok := written[s.etag]
		return ok && m != s.meta
	}
	put := func(i int) error {
		v := "tear-" + strconv.Itoa(i)
		out, err := p.s.client.PutObject(ctx, &s3.PutObjectInput{
			Bucket: aws.String(p.s.bucket), Key: aws.String(p.key), Body: strings.NewReader("fencekit verify " + v),
			Metadata: map[string]string{p.s.tokenKey: v},
		}, noSDKRetry)
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		written[aws.ToString(out.ETag)] = v
		for _, s := range held {
			found = found || torn(s)
		}
		if found {
			cancel()
		}
		return nil
	}
	if err := put(0); err != nil { // the readers see only the probe's states
		return false, err
	}
	var wg sync.WaitGroup
	var heads atomic.Int64
	for range tearReaders {
		wg.Go(func() {
			var last shown
			for ctx.Err() == nil && heads.Add(1) <= tearHeads {
				head, err := p.s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(p.s.bucket), Key: aws.String(p.key)})
				if err != nil {
					continue // ends with ctx; a failed HEAD proves nothing
				}
				meta, _ := lookupMeta(head.Metadata, p.s.tokenKey)
				s := shown{aws.ToString(head.ETag), meta}
				if s == last && s.etag != "" {
					mu.Lock()
					if written[s.etag] != s.meta {
						held = append(held, s) // torn, or its PUT's reply is still on its way
					}
					if torn(s) {
						found = true
						cancel()
					}
					mu.Unlock()
				}
				last = s
			}
		})
	}
	var err error
	for i := 1; i < tearPuts && ctx.Err() == nil; i++ {
		if err = put(i); err != nil {
			break
		}
	}
	cancel()
	wg.Wait()
	if parent.Err() != nil {
		return false, context.Cause(parent)
	}
	mu.Lock()
	defer mu.Unlock()
	if found || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return found, nil
	}
	return false, err
}
