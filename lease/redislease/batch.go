package redislease

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// batcher sends the scripts of one backend's concurrent calls (acquires,
// releases, renewals) together. A call that finds no send in flight sends
// its scripts at once, on its own goroutine, as it would without the
// batcher: one round trip. A call that finds a send in flight waits in the
// queue. When a send returns, its sender wakes one queued call to send the
// whole queue as one pipeline (go-redis splits a Cluster client's pipeline
// by node), so at most one send is in flight and the calls that arrive
// meanwhile share the next round trip. No goroutine is started: every send
// runs on a caller's goroutine.
//
// The call woken to send is the one with the latest deadline, and the
// pipeline's context has the latest deadline of the batch, so no call's
// request is cut short by a neighbour's deadline. Each call waits with its
// own context: one that ends while queued returns at once, its requests
// not sent; one that ends while another call's send carries its requests
// returns at once too, its outcome unknown as after a lost reply.
type batcher struct {
	rdb redis.UniversalClient
	off bool // send every call at once (lease.Options.NoBatch)

	mu    sync.Mutex
	busy  bool    // a send is in flight, or a queued call was woken to send
	queue []*call // calls waiting, in arrival order
}

// request is one script call and, once sent, its reply.
type request struct {
	script *redis.Script
	keys   []string
	args   []any
	argv   [3]any // args' array: one allocation for the request and its arguments
	cmd    *redis.Cmd
}

// call is one caller's requests waiting in the queue.
type call struct {
	ctx  context.Context
	reqs []*request
	wake chan struct{} // receives once: the replies are in, or lead is set
	lead bool          // set before wake: this call sends the queue
}

// do sends reqs and sets their replies. It returns ctx's error when ctx
// ends before the replies are in; reqs must then not be read.
func (q *batcher) do(ctx context.Context, reqs ...*request) error {
	if q.off {
		q.send(ctx, reqs)
		return nil
	}
	q.mu.Lock()
	if !q.busy {
		q.busy = true
		q.mu.Unlock()
		q.send(ctx, reqs)
		q.handOff()
		return nil
	}
	// A copy: the caller's slice then stays on its stack when sent at once.
	c := &call{ctx: ctx, reqs: slices.Clone(reqs), wake: make(chan struct{}, 1)}
	q.queue = append(q.queue, c)
	q.mu.Unlock()
	select {
	case <-c.wake:
	case <-ctx.Done():
		select {
		case <-c.wake: // the replies came as well: use them
		default:
			q.leave(c)
			return ctx.Err()
		}
	}
	if c.lead {
		return q.sendQueue(c)
	}
	return nil
}

// leave takes c, whose context ended, out of the queue. When c was woken
// to send the queue, another queued call is woken instead. When c is no
// longer queued, another call's send carries its requests.
func (q *batcher) leave(c *call) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if i := slices.Index(q.queue, c); i >= 0 {
		q.queue = slices.Delete(q.queue, i, i+1)
		if c.lead {
			q.handOffLocked()
		}
	}
}

// sendQueue, run by the woken call lead, sends every queued call's
// requests as one pipeline, then hands the next send off and wakes the
// calls it carried. Queued calls whose context ended are left out.
func (q *batcher) sendQueue(lead *call) error {
	if err := lead.ctx.Err(); err != nil {
		q.leave(lead)
		return err
	}
	q.mu.Lock()
	queued := q.queue
	q.queue = nil
	q.mu.Unlock()
	batch := queued[:0]
	var reqs []*request
	deadline, bounded := time.Time{}, true
	for _, c := range queued {
		if c != lead && c.ctx.Err() != nil {
			continue // it returns ctx's error: not sent
		}
		batch = append(batch, c)
		reqs = append(reqs, c.reqs...)
		if d, ok := c.ctx.Deadline(); !ok {
			bounded = false
		} else if d.After(deadline) {
			deadline = d
		}
	}
	ctx := context.WithoutCancel(lead.ctx)
	if bounded {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	q.send(ctx, reqs)
	q.handOff()
	for _, c := range batch {
		if c != lead {
			c.wake <- struct{}{}
		}
	}
	return nil
}

// handOff ends a send: it wakes a queued call to send the queue, or marks
// the batcher idle.
func (q *batcher) handOff() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.handOffLocked()
}

func (q *batcher) handOffLocked() {
	if len(q.queue) == 0 {
		q.busy = false
		return
	}
	lead := q.queue[0]
	for _, c := range q.queue[1:] {
		if later(c.ctx, lead.ctx) {
			lead = c
		}
	}
	lead.lead = true
	lead.wake <- struct{}{}
}

// later reports whether a's deadline is after b's (no deadline is latest).
func later(a, b context.Context) bool {
	da, okA := a.Deadline()
	db, okB := b.Deadline()
	return okB && (!okA || da.After(db))
}

// send sends reqs: one alone with Script.Run (EVALSHA, then EVAL if Redis
// has not cached the script), several as one pipeline of EVALSHAs, then
// one of EVALs for those Redis answered NOSCRIPT (SCRIPT FLUSH, a restart,
// a failover), which caches them again.
func (q *batcher) send(ctx context.Context, reqs []*request) {
	if len(reqs) == 1 {
		r := reqs[0]
		r.cmd = r.script.Run(ctx, q.rdb, r.keys, r.args...)
		return
	}
	q.pipeline(ctx, reqs, (*redis.Script).EvalSha)
	var missed []*request
	for _, r := range reqs {
		if isNoScript(r.cmd.Err()) {
			missed = append(missed, r)
		}
	}
	if missed != nil {
		q.pipeline(ctx, missed, (*redis.Script).Eval)
	}
}

// pipeline sends run(script) of each request as one pipeline and sets
// their replies. Exec's own error is the first failed command's, read from
// each request's reply.
func (q *batcher) pipeline(ctx context.Context, reqs []*request,
	run func(*redis.Script, context.Context, redis.Scripter, []string, ...any) *redis.Cmd) {
	pipe := q.rdb.Pipeline()
	for _, r := range reqs {
		r.cmd = run(r.script, ctx, pipe, r.keys, r.args...)
	}
	_, _ = pipe.Exec(ctx)
}
