package blobfence

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// limitWriter takes up to room bytes; a Write beyond that takes what fits
// and then returns err, or, when err is nil, returns the short count with
// no error (a writer breaking io.Writer's contract) and takes every later
// Write whole.
type limitWriter struct {
	got  bytes.Buffer
	room int
	err  error
}

var errWriterFull = errors.New("writer full")

func (w *limitWriter) Write(p []byte) (int, error) {
	if len(p) <= w.room {
		w.room -= len(p)
		return w.got.Write(p)
	}
	n, _ := w.got.Write(p[:w.room])
	w.room = 0
	if w.err == nil {
		w.room = 1 << 30
	}
	return n, w.err
}

// FuzzEnvelopeReadSeekWriteTo: any sequence of Read, Seek and WriteTo on an
// envelopeReader yields the bytes a bytes.Reader of the whole envelope
// yields at the same offsets, also when WriteTo's writer fails part way or
// writes short (the SDK hashes the body with io.Copy, seeks back and sends
// it with Read: what is sent must be what was hashed). A short write is an
// error, as io.Copy makes it, never a jump to other bytes.
func FuzzEnvelopeReadSeekWriteTo(f *testing.F) {
	f.Add([]byte("hdr"), []byte("xxcontent"), uint8(2), []byte{2, 0, 1, 0, 2, 0})
	f.Add([]byte("header:"), []byte("skipped-body-bytes"), uint8(8), []byte{0, 3, 2, 5, 1, 0, 2, 0})
	f.Add([]byte("header:"), []byte("skipped-body-bytes"), uint8(8), []byte{0, 10, 3, 2, 1, 0, 2, 4})
	f.Add([]byte("h"), []byte(""), uint8(0), []byte{2, 0, 1, 0, 0, 5})
	f.Add([]byte("header:"), []byte("skipped-body-bytes"), uint8(8), []byte{5, 2})
	f.Fuzz(func(t *testing.T, head, src []byte, start uint8, ops []byte) {
		if len(head) == 0 {
			return
		}
		st := int64(start) % int64(len(src)+1)
		c := &content{r: bytes.NewReader(src), start: st, size: int64(len(src)) - st}
		if start == 255 { // a header without content
			c = &content{}
		}
		r := &envelopeReader{head: head, content: c}
		want := append(bytes.Clone(head), src[st:]...)
		if c.r == nil {
			want = head
		}
		model := bytes.NewReader(want)
		for i := 0; i+1 < len(ops); i += 2 {
			op, arg := ops[i]%6, int(ops[i+1])
			pos, _ := model.Seek(0, io.SeekCurrent)
			switch op {
			case 0: // Read arg bytes
				p, q := make([]byte, arg), make([]byte, arg)
				n, err := io.ReadFull(r, p)
				m, merr := io.ReadFull(model, q)
				if n != m || !bytes.Equal(p[:n], q[:m]) || (err == nil) != (merr == nil) {
					t.Fatalf("op %d: Read(%d) at %d = %q, %v; want %q, %v", i/2, arg, pos, p[:n], err, q[:m], merr)
				}
			case 1, 2: // Seek
				whence := []int{io.SeekStart, io.SeekCurrent, io.SeekEnd}[arg%3]
				off := int64(arg/3) - 20
				if whence == io.SeekStart {
					off = int64(arg / 3)
				}
				got, err := r.Seek(off, whence)
				exp, merr := model.Seek(off, whence)
				if (err == nil) != (merr == nil) || err == nil && got != exp {
					t.Fatalf("op %d: Seek(%d, %d) at %d = %d, %v; want %d, %v", i/2, off, whence, pos, got, err, exp, merr)
				}
			default: // WriteTo a writer that takes all, fails after arg bytes, or writes short after arg bytes
				w := &limitWriter{room: len(want)}
				switch op {
				case 4:
					w = &limitWriter{room: arg, err: errWriterFull}
				case 5:
					w = &limitWriter{room: arg}
				}
				n, err := r.WriteTo(w)
				rest := want[min(pos, int64(len(want))):]
				if n != int64(w.got.Len()) || !bytes.HasPrefix(rest, w.got.Bytes()) {
					t.Fatalf("op %d: WriteTo at %d wrote %q, returned %d; want a prefix of %q and its length", i/2, pos, w.got.Bytes(), n, rest)
				}
				if full := int(n) == len(rest); full != (err == nil) {
					t.Fatalf("op %d: WriteTo at %d wrote %d of %d bytes and returned %v; want an error exactly when short", i/2, pos, n, len(rest), err)
				}
				model.Seek(pos+n, io.SeekStart)
			}
		}
		// Whatever happened, the envelope from the start is whole.
		r.Seek(0, io.SeekStart)
		var all bytes.Buffer
		if _, err := r.WriteTo(&all); err != nil || !bytes.Equal(all.Bytes(), want) {
			t.Fatalf("WriteTo from 0 after the sequence: %q, %v; want %q", all.Bytes(), err, want)
		}
	})
}
