package sim

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/fencetest"
)

// Result is what a run recorded: every event in order, every write with its
// outcome, and the stored value at the end.
type Result struct {
	Seed      uint64
	Storage   Storage
	TTL       time.Duration
	Heartbeat time.Duration
	Resource  string
	Clients   []string
	Events    []Event
	Writes    []Write
	// Final lists, in order, the writes whose data the stored value holds
	// at the end: every write appends its own index to the value it read.
	Final []int
	// End is the virtual time of the last event.
	End time.Duration
	// Horizon is the run's [Config.Horizon] (0 for a recorded run). Cut
	// reports that the run reached it with actions still pending: what
	// would have happened later is not in Events.
	Horizon time.Duration
	Cut     bool

	// Recorded reports that [NewRecorded] built the result from events
	// observed on real servers: times are real, and there is no seed.
	Recorded bool

	accepted []fence.Token
}

// Write is one write a client sent.
type Write struct {
	Client int
	Token  fence.Token
	Sent   time.Duration
	At     time.Duration // when the storage decided
	// Accepted is the storage's decision; Live says whether Token was the
	// lease service's live lease when the storage decided.
	Accepted, Live bool
	// Read is the write's base: the writes the client saw when it read.
	Read []int

	value   []byte // what the client sent: the value read plus its job's writes
	readLen int    // value[:readLen] is what the client read
}

// clientState is one client's mutable state during a run.
type clientState struct {
	spec      *ClientSpec
	crashed   bool
	pauseFrom time.Duration // real time the current pause began
	pauseEnd  time.Duration // real time the current pause ends; 0 when running
	steps     int           // work steps begun, for pauses counted from a step
	gen       uint32        // job generation: stale timers and replies carry an older one
	holding   bool
	lost      bool
	tok       fence.Token
	deadline  time.Duration // local clock
	jobsDone  int
	writesDue int
	value     []byte // local copy: the value read plus this job's writes
	readLen   int    // length of the value as read
	pending   []byte // read result parked by the storage until the reply fires
	waiting   bool   // refused; waiting for a release notice or its timer
	waitGen   uint32
}

// Runner runs simulations, reusing its buffers between runs. A Runner is
// not safe for concurrent use; use one per goroutine.
type Runner struct {
	cfg     Config
	pcg     rand.PCG
	rng     *rand.Rand
	q       queue
	now     time.Duration
	clients []clientState
	events  []Event
	writes  []Write

	// lease service
	holder    int
	leaseTok  fence.Token
	expiresAt time.Duration
	nextTok   fence.Token
	waiters   uint32 // bit c set: client c waits for a release notice

	// storage: mem for StorageWrites and StorageClaim; plainVal and
	// plainTok (the token the last write or claim left) for the others
	mem      *fencetest.Store
	plainVal []byte
	plainTok fence.Token
	accepted []fence.Token // tokens of accepted writes, in order
	rejected int
	names    []string
	final    []int // explore's decoded final value, reused

	cut bool // the run stopped at the horizon with actions pending

	// downtime sums the closed spans in which a crashed client held the
	// lease; downFrom is the start of the open one, for lease downTok.
	downtime time.Duration
	downFrom time.Duration
	downTok  fence.Token

	// quiet skips recording events and decoding Write.Read: explore only
	// needs the writes, the accepted tokens and the final value.
	quiet bool
}

// NewRunner returns a Runner with empty buffers.
func NewRunner() *Runner {
	r := &Runner{}
	r.rng = rand.New(&r.pcg)
	return r
}

// Run runs cfg on a fresh [Runner]. Errors name the invalid field or, when
// the run exceeds cfg.MaxSteps, the seed.
func Run(cfg *Config) (*Result, error) {
	return NewRunner().Run(cfg)
}

// Run validates cfg and runs it to the end: until nothing is left to do or
// the horizon passes. The Result shares buffers with r and is valid until
// r's next Run. Errors name the invalid field or, when the run needs more
// than cfg.MaxSteps actions, the seed ("failed for seed=N").
func (r *Runner) Run(cfg *Config) (*Result, error) {
	c, err := normalize(cfg)
	if err != nil {
		return nil, err
	}
	if err := r.run(c); err != nil {
		return nil, err
	}
	return r.result(), nil
}

// run runs an already normalized configuration; the outcome stays in r.
func (r *Runner) run(c Config) error {
	r.reset(c)
	for i := range r.cfg.Clients {
		s := &r.cfg.Clients[i]
		r.q.push(&item{at: s.Start, sent: s.Start, act: aStart, c: int8(i)})
		for _, p := range s.Pauses {
			if p.For > 0 && p.Step == 0 {
				r.q.push(&item{at: p.At, sent: p.At, act: aPauseStart, c: int8(i), local: p.For})
			}
		}
		if s.Crash {
			r.q.push(&item{at: s.CrashAt, sent: s.CrashAt, act: aCrash, c: int8(i)})
		}
	}
	steps := 0
	var it item
	for r.q.len() > 0 {
		r.q.pop(&it)
		if it.at > r.cfg.Horizon {
			r.cut = true
			break
		}
		if steps++; steps > r.cfg.MaxSteps {
			return fmt.Errorf("sim: failed for seed=%d: more than %d actions by %v", r.cfg.Seed, r.cfg.MaxSteps, it.at)
		}
		r.now = it.at
		r.fire(&it)
	}
	return nil
}

func (r *Runner) reset(c Config) {
	r.cfg = c
	r.pcg.Seed(c.Seed, 0x6b6c657070)
	r.q.reset()
	r.now = 0
	r.events = r.events[:0]
	r.writes = r.writes[:0]
	r.accepted = r.accepted[:0]
	for len(r.clients) < len(c.Clients) {
		r.clients = append(r.clients, clientState{})
	}
	r.clients = r.clients[:len(c.Clients)]
	for i := range r.clients {
		pending := r.clients[i].pending[:0] // keep the buffer between runs
		r.clients[i] = clientState{spec: &r.cfg.Clients[i], pending: pending}
	}
	r.rejected, r.cut = 0, false
	r.downtime, r.downFrom, r.downTok = 0, 0, 0
	r.holder, r.leaseTok, r.expiresAt, r.nextTok, r.waiters = -1, 0, 0, c.FirstToken, 0
	r.plainVal, r.plainTok = nil, 0
	r.mem = nil
	if c.Storage == StorageWrites || c.Storage == StorageClaim {
		r.mem = fencetest.NewStore()
	}
}

func (r *Runner) result() *Result {
	res := &Result{
		Seed: r.cfg.Seed, Storage: r.cfg.Storage, TTL: r.cfg.TTL, Heartbeat: r.cfg.Heartbeat,
		Resource: r.cfg.Resource, Events: r.events, Writes: r.writes, accepted: r.accepted, Cut: r.cut,
		Horizon: r.cfg.Horizon,
	}
	r.names = r.names[:0]
	for i := range r.cfg.Clients {
		r.names = append(r.names, r.cfg.Clients[i].Name)
	}
	res.Clients = r.names
	if n := len(r.events); n > 0 {
		res.End = r.events[n-1].At
	}
	val := r.value()
	res.Final = decodeValue(val)
	if !r.quiet {
		for i := range r.writes {
			w := &r.writes[i]
			w.Read = decodeValue(w.value[:w.readLen])
		}
	}
	return res
}

// record appends an event at the current time.
func (r *Runner) record(e Event) {
	if r.quiet {
		return
	}
	e.At = r.now
	switch e.Kind {
	case KindExpired, KindCheckFailed, KindPaused, KindResumed, KindCrashed, KindDone:
		e.Sent = r.now
	}
	r.events = append(r.events, e)
}

// send schedules a message's arrival after a random network delay.
func (r *Runner) send(it item) { r.sendLate(it, 0) }

// sendLate is send with extra added to the message's delay.
func (r *Runner) sendLate(it item, extra time.Duration) {
	d := r.cfg.DelayMin + extra
	if span := r.cfg.DelayMax - r.cfg.DelayMin; span > 0 {
		d += time.Duration(r.rng.Int64N(int64(span) + 1))
	}
	it.sent = r.now
	it.at = r.now + d
	r.q.push(&it)
}

// after schedules a client's own timer, d long by the client's clock.
func (r *Runner) after(c int, d time.Duration, it item) {
	it.c = int8(c)
	it.sent = r.now
	it.at = r.now + r.realDur(c, d)
	r.q.push(&it)
}

// local is client c's clock at real time t.
func (r *Runner) local(c int, t time.Duration) time.Duration {
	if d := r.clients[c].spec.Drift; d != 0 {
		return t + time.Duration(float64(t)*d)
	}
	return t
}

// realDur converts a duration on client c's clock to real time.
func (r *Runner) realDur(c int, d time.Duration) time.Duration {
	if drift := r.clients[c].spec.Drift; drift != 0 {
		return time.Duration(float64(d) / (1 + drift))
	}
	return d
}

// fire runs one action. Actions on a paused client wait until it resumes;
// actions on a crashed client are dropped.
func (r *Runner) fire(it *item) {
	if it.act.toClient() {
		cs := &r.clients[it.c]
		if cs.crashed {
			return
		}
		if cs.pauseEnd > r.now {
			// Timers and replies wait for the client to run again. Work
			// does not progress during a pause: a step resumes with the
			// work it had left when the pause began.
			if it.act == aStepDone {
				left := it.at - max(cs.pauseFrom, it.sent)
				it.sent, it.at = cs.pauseEnd, cs.pauseEnd+left
			} else {
				it.at = cs.pauseEnd
			}
			r.q.push(it)
			return
		}
	}
	switch it.act {
	case aStart:
		r.startAcquire(int(it.c))
	case aAcquireArrive:
		r.leaseAcquire(it)
	case aAcquireReply:
		r.clientAcquired(it)
	case aReadArrive:
		r.storageRead(it)
	case aReadReply:
		r.clientRead(it)
	case aStepDone:
		r.clientWrite(it)
	case aWriteArrive:
		r.storageWrite(it)
	case aWriteReply:
		r.clientWriteDone(it)
	case aCheckArrive:
		r.storageCheck(it)
	case aCheckReply:
		r.clientChecked(it)
	case aHeartbeat:
		r.clientHeartbeat(it)
	case aRenewArrive:
		r.leaseRenew(it)
	case aRenewReply:
		r.clientRenewed(it)
	case aReleaseArrive:
		r.leaseRelease(it)
	case aExpire:
		r.leaseExpire(it)
	case aPauseStart:
		r.pauseStart(it)
	case aPauseEnd:
		r.pauseEnd(it)
	case aCrash:
		r.crash(it)
	case aWake:
		r.clientWake(it)
	}
}

func (r *Runner) pauseStart(it *item) {
	cs := &r.clients[it.c]
	if cs.crashed {
		return
	}
	end := r.now + it.local
	if end <= cs.pauseEnd {
		return // inside a longer pause
	}
	if cs.pauseEnd <= r.now {
		cs.pauseFrom = r.now
		r.record(Event{Kind: KindPaused, Client: int(it.c), Write: -1, Dur: it.local})
	}
	cs.pauseEnd = end
	r.q.push(&item{at: end, sent: r.now, act: aPauseEnd, c: it.c})
}

func (r *Runner) pauseEnd(it *item) {
	cs := &r.clients[it.c]
	if cs.crashed || cs.pauseEnd != r.now {
		return // crashed, or extended by an overlapping pause
	}
	cs.pauseEnd = 0
	r.record(Event{Kind: KindResumed, Client: int(it.c), Write: -1})
}

func (r *Runner) crash(it *item) {
	cs := &r.clients[it.c]
	if cs.crashed {
		return
	}
	cs.crashed = true
	cs.pauseEnd = 0
	if r.holder == int(it.c) && r.live(r.leaseTok) {
		r.downFrom, r.downTok = r.now, r.leaseTok
	}
	r.record(Event{Kind: KindCrashed, Client: int(it.c), Token: cs.tok, Write: -1})
}

// randDur draws a duration uniformly from [0, d].
func randDur(r *Runner, d time.Duration) time.Duration {
	return time.Duration(r.rng.Int64N(int64(d) + 1))
}

func encodeID(b []byte, id int) []byte { return append(b, byte(id>>16), byte(id>>8), byte(id)) }

func decodeValue(b []byte) []int { return appendIDs(make([]int, 0, len(b)/3), b) }

func appendIDs(ids []int, b []byte) []int {
	for i := 0; i+2 < len(b); i += 3 {
		ids = append(ids, int(b[i])<<16|int(b[i+1])<<8|int(b[i+2]))
	}
	return ids
}
