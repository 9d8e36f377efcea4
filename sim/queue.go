package sim

import (
	"time"

	"github.com/fencekit/fencekit/fence"
)

// action is what a queued item does when it fires.
type action uint8

const (
	aStart         action = iota // client starts (or retries) acquiring
	aAcquireArrive               // lease service receives an acquire
	aAcquireReply                // client receives the lease service's answer
	aReadArrive                  // storage receives a read
	aReadReply                   // client receives the read's value
	aStepDone                    // client finished a work step and sends a write
	aWriteArrive                 // storage receives a write
	aWriteReply                  // client receives the write's outcome
	aHeartbeat                   // client's heartbeat timer
	aRenewArrive                 // lease service receives a heartbeat
	aRenewReply                  // client receives the heartbeat's answer
	aReleaseArrive               // lease service receives a release
	aExpire                      // lease service's TTL timer
	aPauseStart                  // client stops (not deferred by a pause)
	aPauseEnd                    // client runs again
	aCrash                       // client dies
	aWake                        // client is told the lease was released, or its wait timer fires
	aCheckArrive                 // check-then-write storage receives a token check
	aCheckReply                  // client receives the check's answer
)

// toClient reports whether the action runs on a client, so that a pause
// defers it and a crash drops it.
func (a action) toClient() bool {
	switch a {
	case aStart, aAcquireReply, aReadReply, aStepDone, aWriteReply, aHeartbeat, aRenewReply, aWake, aCheckReply:
		return true
	}
	return false
}

// item is one scheduled action. Items fire in order of (at, seq): seq is a
// counter of pushes, so items due at the same instant fire in the order
// they were scheduled, which makes every run deterministic.
type item struct {
	at, sent time.Duration
	seq      uint64
	// local is the client's own clock when it sent the message, for
	// acquire and renew: the lease's local deadline counts from it. In a
	// refused acquire's reply it is the holder's remaining TTL instead.
	local      time.Duration
	tok, other fence.Token
	w          int32
	gen        uint32
	c          int8
	act        action
	ok         bool
}

// queue is a binary min-heap of (time, seq, slot) keys; the items live in
// a slab whose freed slots are reused, so sifting moves 16-byte keys and a
// run allocates nothing once the slab has grown.
type queue struct {
	slab []item
	free []int32
	heap []qkey
	seq  uint64
}

type qkey struct {
	at  time.Duration
	seq uint32 // wraps only after 4e9 pushes; MaxSteps bounds a run far below
	idx int32
}

func (a qkey) less(b qkey) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	return a.seq < b.seq
}

func (q *queue) reset() {
	q.slab, q.free, q.heap, q.seq = q.slab[:0], q.free[:0], q.heap[:0], 0
}

func (q *queue) len() int { return len(q.heap) }

func (q *queue) push(it *item) {
	it.seq = q.seq
	q.seq++
	var idx int32
	if n := len(q.free); n > 0 {
		idx = q.free[n-1]
		q.free = q.free[:n-1]
		q.slab[idx] = *it
	} else {
		idx = int32(len(q.slab))
		q.slab = append(q.slab, *it)
	}
	k := qkey{at: it.at, seq: uint32(it.seq), idx: idx}
	h := append(q.heap, k)
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !k.less(h[p]) {
			break
		}
		h[i] = h[p]
		i = p
	}
	h[i] = k
	q.heap = h
}

// pop removes the earliest item and copies it into *it.
func (q *queue) pop(it *item) {
	h := q.heap
	idx := h[0].idx
	*it = q.slab[idx]
	q.free = append(q.free, idx)
	n := len(h) - 1
	k := h[n]
	h = h[:n]
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && h[r].less(h[l]) {
			m = r
		}
		if !h[m].less(k) {
			break
		}
		h[i] = h[m]
		i = m
	}
	if n > 0 {
		h[i] = k
	}
	q.heap = h
}
