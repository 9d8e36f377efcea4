package blobfence

import (
	"bytes"
	"crypto/sha256"
	"io"
	"runtime"
	"strings"
	"testing"
)

// TestEnvelopeCopyNeedsNoBigBuffer: the SDK hashes a put's body with
// io.Copy; copying a 1 KiB envelope allocates well under io.Copy's 32 KiB
// buffer (envelopeReader.WriteTo), and yields the bytes Read yields, also
// from the middle of the header or of the content.
func TestEnvelopeCopyNeedsNoBigBuffer(t *testing.T) {
	body := []byte(strings.Repeat("fencekit", 128))
	src := bytes.NewReader(append([]byte("skipped"), body...))
	c := &content{r: src, start: 7, size: int64(len(body))}
	er := &envelopeReader{head: []byte("header:"), content: c}
	want, err := io.ReadAll(er)
	if err != nil {
		t.Fatal(err)
	}
	for _, from := range []int64{0, 3, 7, 500, int64(len(want))} {
		if _, err := er.Seek(from, io.SeekStart); err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		if n, err := io.Copy(&got, er); err != nil || n != int64(len(want))-from || !bytes.Equal(got.Bytes(), want[from:]) {
			t.Fatalf("io.Copy from %d: %d bytes, %v; want %d bytes equal to Read's", from, n, err, len(want)-int(from))
		}
	}
	const n = 50
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range n {
		if _, err := er.Seek(0, io.SeekStart); err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(sha256.New(), er); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / n; per > 8<<10 {
		t.Fatalf("hashing a %d-byte envelope with io.Copy allocated %d bytes per copy; want under 8 KiB (no 32 KiB copy buffer)", len(want), per)
	}
}
