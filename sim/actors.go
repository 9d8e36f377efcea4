package sim

import (
	"time"

	"github.com/fencekit/fencekit/fence"
)

// This file holds the three kinds of actors: clients, the lease service and
// the storage. Each handler runs one action at r.now.

// --- clients ---

func (r *Runner) startAcquire(c int) {
	r.send(item{act: aAcquireArrive, c: int8(c), local: r.local(c, r.now)})
}

func (r *Runner) clientAcquired(it *item) {
	c := int(it.c)
	cs := &r.clients[c]
	if !it.ok {
		// Wait like lease.AcquireWait: until the release notice, or the
		// holder's remaining TTL plus a jitter of up to Retry.
		r.record(Event{Kind: KindRefused, Client: c, Sent: it.sent, Other: it.other, Write: -1, Dur: it.local})
		cs.waiting = true
		cs.waitGen++
		jitter := randDur(r, cs.spec.Retry/jitterUnit) * jitterUnit
		r.after(c, it.local+jitter, item{act: aWake, gen: cs.waitGen})
		return
	}
	cs.gen++
	cs.holding, cs.lost, cs.tok = true, false, it.tok
	cs.deadline = localDeadline(it.local, r.cfg.TTL)
	r.record(Event{Kind: KindAcquired, Client: c, Sent: it.sent, Token: it.tok, Write: -1,
		Dur: r.realDur(c, cs.deadline-r.local(c, r.now))})
	if r.cfg.Heartbeat > 0 {
		// Like the lease package, count the interval from the request's send.
		r.after(c, max(it.local+r.cfg.Heartbeat-r.local(c, r.now), 0), item{act: aHeartbeat, gen: cs.gen})
	}
	r.send(item{act: aReadArrive, c: it.c, tok: cs.tok, gen: cs.gen})
}

// localDeadline is the rule of the lease package: a client's lease ends,
// by its own clock, at the send time of the acquire or renew request that
// granted or extended it, plus the TTL, minus a drift margin (TTL/100 +
// 2ms, lease.Options.DriftMargin's default), so that the holder stops
// before the lease service can expire the lease. TestDeadlineRuleMatchesLease
// holds the two to the same answer.
func localDeadline(sent, ttl time.Duration) time.Duration {
	return sent + ttl - (ttl/100 + 2*time.Millisecond)
}

// jitterUnit is the resolution of a refused client's wait jitter, so that
// timelines read in tenths of a second.
const jitterUnit = 100 * time.Millisecond

// clientWake ends a wait: a release notice (gen 0) or the client's own
// timer for this wait.
func (r *Runner) clientWake(it *item) {
	c := int(it.c)
	cs := &r.clients[c]
	if !cs.waiting || (it.gen != 0 && it.gen != cs.waitGen) {
		return
	}
	cs.waiting = false
	r.startAcquire(c)
}

func (r *Runner) clientRead(it *item) {
	c := int(it.c)
	cs := &r.clients[c]
	if it.gen != cs.gen || !cs.holding {
		return
	}
	if !it.ok {
		r.endJob(c, false) // fenced out before doing anything
		return
	}
	// A fresh buffer per job: the job's writes keep sub-slices of it.
	cs.value = append(make([]byte, 0, len(cs.pending)+3*cs.spec.Writes), cs.pending...)
	cs.readLen = len(cs.pending)
	cs.writesDue = cs.spec.Writes
	r.beginStep(c)
}

// beginStep checks the lease by the client's own clock and, if it looks
// valid, works for one step and then writes. A client with a heartbeat
// checks that no renewal was refused and its deadline has not passed; one
// without checks that the lease outlasts the step. A pause during the step is
// exactly Kleppmann's case: the check passed, the write goes out late.
func (r *Runner) beginStep(c int) {
	cs := &r.clients[c]
	d := cs.spec.Step
	if j := cs.spec.StepJitter; j > 0 {
		d += randDur(r, j)
	}
	need := r.local(c, r.now)
	if r.cfg.Heartbeat == 0 {
		need += d // no heartbeat will extend the lease: the step must fit
	}
	if cs.lost || need >= cs.deadline {
		r.record(Event{Kind: KindCheckFailed, Client: c, Token: cs.tok, Write: -1})
		r.endJob(c, false)
		return
	}
	cs.steps++
	for _, p := range cs.spec.Pauses {
		if p.Step == cs.steps && p.For > 0 {
			// Queued before the step's end, so that a pause as long as
			// the step stops the client just before it writes.
			r.q.push(&item{at: r.now + p.At, sent: r.now, act: aPauseStart, c: int8(c), local: p.For})
		}
	}
	r.after(c, d, item{act: aStepDone, gen: cs.gen})
}

// clientWrite sends the step's write, unless a refused heartbeat has told
// the client during the step that its lease is lost (a client whose lease
// context was cancelled does not write). With a check-then-write storage it
// first sends the token check.
func (r *Runner) clientWrite(it *item) {
	c := int(it.c)
	cs := &r.clients[c]
	if it.gen != cs.gen || !cs.holding {
		return
	}
	if cs.lost {
		r.record(Event{Kind: KindCheckFailed, Client: c, Token: cs.tok, Write: -1})
		r.endJob(c, false)
		return
	}
	id := len(r.writes)
	cs.value = encodeID(cs.value, id)
	r.writes = append(r.writes, Write{Client: c, Token: cs.tok, Sent: r.now, readLen: cs.readLen,
		value: cs.value[:len(cs.value):len(cs.value)]})
	act := aWriteArrive
	if r.cfg.Storage == StorageCheckThenWrite || r.cfg.CheckFirst {
		act = aCheckArrive
	}
	r.sendLate(item{act: act, c: it.c, tok: cs.tok, w: int32(id), gen: cs.gen}, r.writeDelay(c, id))
}

// writeDelay is the extra network delay of write id, from client c's
// WriteDelay: only its first write is held.
func (r *Runner) writeDelay(c, id int) time.Duration {
	d := r.clients[c].spec.WriteDelay
	if d == 0 {
		return 0
	}
	for _, w := range r.writes[:id] {
		if w.Client == c {
			return 0
		}
	}
	return d
}

// clientChecked sends the write whose token check passed. It does not look
// at its lease again: the check was the look.
func (r *Runner) clientChecked(it *item) {
	c := int(it.c)
	cs := &r.clients[c]
	if it.gen != cs.gen || !cs.holding {
		return
	}
	r.writes[it.w].Sent = r.now
	r.send(item{act: aWriteArrive, c: it.c, tok: it.tok, w: it.w, gen: it.gen})
}

func (r *Runner) clientWriteDone(it *item) {
	c := int(it.c)
	cs := &r.clients[c]
	if it.gen != cs.gen || !cs.holding {
		return
	}
	if !it.ok {
		r.endJob(c, false)
		return
	}
	if cs.writesDue--; cs.writesDue > 0 {
		r.beginStep(c)
		return
	}
	r.endJob(c, true)
}

// endJob stops the job's heartbeat, releases the lease when the job
// finished, and schedules the next job.
func (r *Runner) endJob(c int, release bool) {
	cs := &r.clients[c]
	if release {
		r.send(item{act: aReleaseArrive, c: int8(c), tok: cs.tok})
	}
	cs.holding = false
	cs.gen++
	if cs.jobsDone++; cs.jobsDone < cs.spec.Jobs {
		r.after(c, cs.spec.Idle, item{act: aStart})
		return
	}
	r.record(Event{Kind: KindDone, Client: c, Write: -1})
}

func (r *Runner) clientHeartbeat(it *item) {
	c := int(it.c)
	cs := &r.clients[c]
	if it.gen != cs.gen || !cs.holding || cs.lost {
		return
	}
	r.send(item{act: aRenewArrive, c: it.c, tok: cs.tok, gen: cs.gen, local: r.local(c, r.now)})
	r.after(c, r.cfg.Heartbeat, item{act: aHeartbeat, gen: cs.gen})
}

// clientRenewed handles a heartbeat's answer. A refusal is recorded even
// when the job has just ended, as the lost lease's cause would be.
func (r *Runner) clientRenewed(it *item) {
	c := int(it.c)
	cs := &r.clients[c]
	if !it.ok && it.tok == cs.tok && !cs.lost && (it.gen == cs.gen || !cs.holding) {
		cs.lost = true
		r.record(Event{Kind: KindLost, Client: c, Sent: it.sent, Token: cs.tok, Other: it.other, Write: -1})
		return
	}
	if it.gen != cs.gen || !cs.holding || !it.ok {
		return
	}
	cs.deadline = max(cs.deadline, localDeadline(it.local, r.cfg.TTL))
}

// --- lease service ---

// expireIfDue frees a lease whose TTL has run out, so that a request
// arriving at the very instant of expiry sees it expired.
func (r *Runner) expireIfDue() {
	if r.holder >= 0 && r.now >= r.expiresAt {
		if r.downTok != 0 && r.downTok == r.leaseTok {
			r.downtime += r.now - r.downFrom
			r.downTok = 0
		}
		r.record(Event{Kind: KindExpired, Client: r.holder, Token: r.leaseTok, Write: -1})
		r.holder = -1
	}
}

func (r *Runner) leaseAcquire(it *item) {
	r.expireIfDue()
	reply := item{act: aAcquireReply, c: it.c, local: it.local}
	if r.holder >= 0 {
		r.record(Event{Kind: KindDenied, Client: int(it.c), Sent: it.sent, Other: r.leaseTok, Write: -1})
		reply.other, reply.local = r.leaseTok, r.expiresAt-r.now
		r.waiters |= 1 << it.c
	} else {
		r.holder, r.leaseTok = int(it.c), r.nextTok
		r.nextTok++
		r.expiresAt = r.now + r.cfg.TTL
		r.q.push(&item{at: r.expiresAt, sent: r.now, act: aExpire, tok: r.leaseTok})
		r.record(Event{Kind: KindGranted, Client: int(it.c), Sent: it.sent, Token: r.leaseTok, Write: -1, Dur: r.cfg.TTL})
		reply.ok, reply.tok = true, r.leaseTok
	}
	r.send(reply)
}

func (r *Runner) leaseRenew(it *item) {
	r.expireIfDue()
	reply := item{act: aRenewReply, c: it.c, gen: it.gen, local: it.local, tok: it.tok, other: r.leaseTok}
	if r.holder == int(it.c) && r.leaseTok == it.tok {
		r.expiresAt = r.now + r.cfg.TTL // the pending aExpire re-arms itself
		r.record(Event{Kind: KindRenewed, Client: int(it.c), Sent: it.sent, Token: it.tok, Write: -1, Dur: r.cfg.TTL})
		reply.ok = true
	} else {
		r.record(Event{Kind: KindRenewDenied, Client: int(it.c), Sent: it.sent, Token: it.tok, Other: r.leaseTok, Write: -1})
	}
	r.send(reply)
}

func (r *Runner) leaseRelease(it *item) {
	r.expireIfDue()
	if r.holder == int(it.c) && r.leaseTok == it.tok {
		r.holder = -1
		r.record(Event{Kind: KindReleased, Client: int(it.c), Sent: it.sent, Token: it.tok, Write: -1})
		for c := range r.clients {
			if r.waiters&(1<<c) != 0 {
				r.send(item{act: aWake, c: int8(c)})
			}
		}
		r.waiters = 0
	}
}

// leaseExpire is the lease's TTL timer. One timer is pending per grant: a
// renewal moves expiresAt and the timer, when it fires early, re-arms
// itself for the new deadline.
func (r *Runner) leaseExpire(it *item) {
	if r.holder < 0 || r.leaseTok != it.tok {
		return // released or already expired
	}
	if r.expiresAt > r.now {
		r.q.push(&item{at: r.expiresAt, sent: r.now, act: aExpire, tok: it.tok})
		return
	}
	r.expireIfDue()
}

// live reports whether tok is the lease service's unexpired lease now.
func (r *Runner) live(tok fence.Token) bool {
	return r.holder >= 0 && r.leaseTok == tok && r.now < r.expiresAt
}

// --- storage ---

// storageRead serves a read. A storage that claims ([StorageClaim],
// [StorageCheckThenWrite]) first records the reader's token, so that older
// holders are fenced out from then on even before the new holder writes.
func (r *Runner) storageRead(it *item) {
	reply := item{act: aReadReply, c: it.c, gen: it.gen, tok: it.tok, ok: true}
	cs := &r.clients[it.c]
	var err error
	switch r.cfg.Storage {
	case StorageClaim:
		err = r.mem.Claim(r.cfg.Resource, it.tok)
	case StorageCheckThenWrite:
		if err = fence.Check(r.cfg.Resource, it.tok, r.plainTok); err == nil {
			r.plainTok = it.tok
		}
	}
	if err != nil {
		reply.ok, reply.other = false, r.current()
		r.record(Event{Kind: KindReadRejected, Client: int(it.c), Sent: it.sent, Token: it.tok, Other: reply.other, Write: -1})
		r.send(reply)
		return
	}
	cs.pending = append(cs.pending[:0], r.value()...)
	r.record(Event{Kind: KindRead, Client: int(it.c), Sent: it.sent, Token: it.tok, Write: -1})
	r.send(reply)
}

// current is the newest token the storage has seen (claimed or written).
func (r *Runner) current() fence.Token {
	if r.mem != nil {
		return r.mem.Current(r.cfg.Resource)
	}
	return r.plainTok
}

// value is the stored value.
func (r *Runner) value() []byte {
	if r.mem != nil {
		v, _ := r.mem.Get(r.cfg.Resource)
		return v
	}
	return r.plainVal
}

// storageWrite applies a write. [StorageWrites] and [StorageClaim] decide
// with fencetest.Store's Put (hence fence.Check, atomically with the write);
// [StorageOff] and [StorageCheckThenWrite] (whose check came in an earlier
// request) store it unconditionally, the latter with its token.
func (r *Runner) storageWrite(it *item) {
	w := &r.writes[it.w]
	w.At = r.now
	w.Live = r.live(it.tok)
	reply := item{act: aWriteReply, c: it.c, gen: it.gen, tok: it.tok, ok: true}
	switch r.cfg.Storage {
	case StorageWrites, StorageClaim:
		if err := r.mem.Put(r.cfg.Resource, it.tok, w.value); err != nil {
			r.reject(it, reply)
			return
		}
	case StorageCheckThenWrite:
		r.plainVal, r.plainTok = w.value, it.tok
	default:
		r.plainVal = w.value
	}
	w.Accepted = true
	r.accepted = append(r.accepted, it.tok)
	r.record(Event{Kind: KindWriteAccepted, Client: int(it.c), Sent: it.sent, Token: it.tok, Write: int(it.w)})
	r.send(reply)
}

// storageCheck is the first request of a check-then-write: it checks the
// token with fence.Check and answers, and changes nothing.
func (r *Runner) storageCheck(it *item) {
	cur := r.current()
	if err := fence.Check(r.cfg.Resource, it.tok, cur); err != nil {
		w := &r.writes[it.w]
		w.At, w.Live = r.now, r.live(it.tok)
		r.reject(it, item{act: aWriteReply, c: it.c, gen: it.gen, tok: it.tok})
		return
	}
	r.record(Event{Kind: KindChecked, Client: int(it.c), Sent: it.sent, Token: it.tok, Other: cur, Write: int(it.w)})
	r.send(item{act: aCheckReply, c: it.c, gen: it.gen, tok: it.tok, w: it.w, ok: true})
}

// reject refuses it's write as stale and sends the refusal.
func (r *Runner) reject(it *item, reply item) {
	reply.ok, reply.other = false, r.current()
	r.rejected++
	r.record(Event{Kind: KindWriteRejected, Client: int(it.c), Sent: it.sent, Token: it.tok, Other: reply.other, Write: int(it.w)})
	r.send(reply)
}
