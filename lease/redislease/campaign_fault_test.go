package redislease

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/fencetest"
	"github.com/fencekit/fencekit/internal/testenv"
	"github.com/fencekit/fencekit/sqlfence"
)

func init() { testenv.RegisterChild("lease-campaigner", childCampaigner) }

// The audit tables of the campaign test, next to sqlfence's guard rows.
// campaign_terms is written without fencing (so that the test sees a new
// leader even while its fenced writes wait for a row lock); campaign_writes
// only through sqlfence.InTx, its seq drawn after the guard row is claimed,
// so seq order is commit order; campaign_refused records stale refusals.
const campaignSchema = `
CREATE TABLE campaign_terms (seq bigserial PRIMARY KEY, token bigint NOT NULL, pid int NOT NULL, started_ns bigint NOT NULL);
CREATE SEQUENCE campaign_seq;
CREATE TABLE campaign_writes (seq bigint PRIMARY KEY, token bigint NOT NULL, pid int NOT NULL);
CREATE TABLE campaign_refused (token bigint NOT NULL, current bigint NOT NULL, pid int NOT NULL);`

// childCampaigner campaigns for LEASE_CHILD_NAME on LEASE_CHILD_ADDR with
// LEASE_CHILD_TTL until SIGTERM. Each term records itself in
// campaign_terms and then writes through the guard row of the lease's name
// every 20ms. It writes once more after its term's context ends, as a
// leader whose write was already under way would: the guard row must
// refuse that write when a newer leader has written.
func childCampaigner() int {
	ttl, err := time.ParseDuration(os.Getenv("LEASE_CHILD_TTL"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	pool, err := pgxpool.New(ctx, os.Getenv("CAMPAIGN_PG_URL"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer pool.Close()
	rdb := redis.NewClient(&redis.Options{Addr: os.Getenv("LEASE_CHILD_ADDR"), ContextTimeoutEnabled: true})
	defer rdb.Close()
	name, pid := os.Getenv("LEASE_CHILD_NAME"), os.Getpid()
	fmt.Println("ready")
	c, err := New(rdb, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	err = c.Campaign(ctx, name, ttl, func(lctx context.Context, tok fence.Token) error {
		started := time.Now().UnixNano()
		if _, err := pool.Exec(lctx, "INSERT INTO campaign_terms (token, pid, started_ns) VALUES ($1, $2, $3)", int64(tok), pid, started); err != nil {
			return err
		}
		for ended := false; ; {
			wctx, cancel := context.WithTimeout(context.WithoutCancel(lctx), 30*time.Second)
			err := sqlfence.InTx(wctx, pool, name, tok, func(tx pgx.Tx) error {
				_, err := tx.Exec(wctx, "INSERT INTO campaign_writes (seq, token, pid) VALUES (nextval('campaign_seq'), $1, $2)", int64(tok), pid)
				return err
			})
			cancel()
			var stale *fence.StaleError
			if errors.As(err, &stale) {
				_, rerr := pool.Exec(context.Background(), "INSERT INTO campaign_refused (token, current, pid) VALUES ($1, $2, $3)",
					int64(stale.Presented), int64(stale.Current), pid)
				return errors.Join(err, rerr)
			}
			if err != nil || ended {
				return err
			}
			select {
			case <-lctx.Done():
				ended = true // one more write, as if it had been under way
			case <-time.After(20 * time.Millisecond):
			}
		}
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "campaign:", err)
		return 1
	}
	return 0
}

// termRow is one row of campaign_terms.
type termRow struct {
	seq     int64
	token   fence.Token
	pid     int
	started time.Time
}

// campaignAudit is the test's view of the shared tables.
type campaignAudit struct {
	t    *testing.T
	pool *pgxpool.Pool
	app  string // the children's application_name
}

// nextTerm waits for the first term after seq.
func (a campaignAudit) nextTerm(after int64, limit time.Duration) termRow {
	a.t.Helper()
	deadline := time.Now().Add(limit)
	for {
		var r termRow
		var tok, ns int64
		err := a.pool.QueryRow(context.Background(),
			"SELECT seq, token, pid, started_ns FROM campaign_terms WHERE seq > $1 ORDER BY seq LIMIT 1", after).Scan(&r.seq, &tok, &r.pid, &ns)
		if err == nil {
			r.token, r.started = fence.Token(tok), time.Unix(0, ns)
			return r
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			a.t.Fatal(err)
		}
		if time.Now().After(deadline) {
			a.t.Fatalf("no leader after term %d within %v", after, limit)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitWrite waits until a write with tok has been accepted or, with
// orBlocked, until a child's write waits for a row lock (a leader paused
// in the middle of its transaction holds the guard row).
func (a campaignAudit) waitWrite(tok fence.Token, orBlocked bool, limit time.Duration) {
	a.t.Helper()
	deadline := time.Now().Add(limit)
	for {
		var n, blocked int
		if err := a.pool.QueryRow(context.Background(), `SELECT
			(SELECT count(*) FROM campaign_writes WHERE token = $1),
			(SELECT count(*) FROM pg_stat_activity WHERE application_name = $2 AND wait_event_type = 'Lock')`,
			int64(tok), a.app).Scan(&n, &blocked); err != nil {
			a.t.Fatal(err)
		}
		if n > 0 || orBlocked && blocked > 0 {
			return
		}
		if time.Now().After(deadline) {
			a.t.Fatalf("the leader with token %v wrote nothing within %v", tok, limit)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (a campaignAudit) tokens(query string) []fence.Token {
	a.t.Helper()
	rows, err := a.pool.Query(context.Background(), query)
	if err != nil {
		a.t.Fatal(err)
	}
	toks, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (fence.Token, error) {
		var v int64
		err := r.Scan(&v)
		return fence.Token(v), err
	})
	if err != nil {
		a.t.Fatal(err)
	}
	return toks
}

// TestFaultCampaignThreeProcesses runs three campaigning child processes
// and ends the leader in turn: SIGKILL, SIGSTOP past its TTL, SIGTERM
// (graceful step-down), twice. It checks the ordering properties (no
// successor leads before the old leader's key could expire, except after
// a graceful step-down, where the successor leads before it would have
// expired), that every term has a larger token, and audits the accepted
// writes through the guard row: in commit order their tokens never go
// down. The take-over times are logged, not asserted.
func TestFaultCampaignThreeProcesses(t *testing.T) {
	c, renv := newTestClient(t, nil)
	pg := testenv.PostgresMigrated(t)
	if _, err := pg.Pool.Exec(context.Background(), campaignSchema); err != nil {
		t.Fatal(err)
	}
	audit := campaignAudit{t, pg.Pool, pg.Schema}
	name := renv.Name("leader")
	const ttl = 1500 * time.Millisecond
	interval := ttl / 3 // the default renew interval
	start := func() *testenv.Child {
		ch := testenv.StartChild(t, "lease-campaigner", "LEASE_CHILD_ADDR="+renv.Addr, "LEASE_CHILD_NAME="+name,
			"LEASE_CHILD_TTL="+ttl.String(), "CAMPAIGN_PG_URL="+pg.URL+"&application_name="+pg.Schema)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := ch.Expect(ctx, "ready"); err != nil {
			t.Fatal(err)
		}
		return ch
	}
	children := map[int]*testenv.Child{}
	for range 3 {
		ch := start()
		children[ch.Pid] = ch
	}
	// expiry returns the earliest moment the lock key can expire, read now:
	// the leader may renew it later, never shorten it.
	expiry := func() time.Time {
		before := time.Now()
		pttl, err := renv.Client.PTTL(context.Background(), lockKeyOf(c, name)).Result()
		if err != nil || pttl <= 0 {
			t.Fatalf("PTTL of the leader's key = %v, %v", pttl, err)
		}
		return before.Add(pttl - time.Millisecond) // PTTL is rounded to ms
	}

	const limit = 30 * time.Second
	leader := audit.nextTerm(0, limit)
	var report []string
	for i, how := range []string{"kill", "pause", "step-down", "kill", "pause", "step-down"} {
		audit.waitWrite(leader.token, false, limit)
		ch := children[leader.pid]
		if ch == nil {
			t.Fatalf("round %d: leader pid %d is not a child of this test", i, leader.pid)
		}
		expires := expiry()
		at := time.Now()
		switch how {
		case "kill":
			if err := ch.Kill(); err != nil {
				t.Fatal(err)
			}
		case "pause":
			if err := ch.Stop(); err != nil {
				t.Fatal(err)
			}
		case "step-down":
			if err := syscall.Kill(ch.Pid, syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
		}
		next := audit.nextTerm(leader.seq, limit)
		took := next.started.Sub(at)
		report = append(report, fmt.Sprintf("%s %v", how, took.Round(time.Millisecond)))
		t.Logf("round %d: %s of the leader (token %v): new leader (token %v) after %v (TTL %v, renew interval %v)",
			i, how, leader.token, next.token, took, ttl, interval)
		if next.token <= leader.token {
			t.Errorf("round %d: new term's token %v not above the old %v", i, next.token, leader.token)
		}
		if how == "step-down" {
			if !next.started.Before(expires) {
				t.Errorf("round %d: after a graceful step-down the new leader started at %v, after the old key could have expired (%v): the release did not hand over",
					i, next.started.Format(time.StampMicro), expires.Format(time.StampMicro))
			}
			if err := ch.Wait(); err != nil {
				t.Errorf("round %d: stepped-down child: %v\n%s", i, err, ch.Stderr())
			}
		} else if next.started.Before(expires) {
			t.Errorf("round %d: after a %s the new leader started at %v, before the old leader's key could expire (%v)",
				i, how, next.started.Format(time.StampMicro), expires.Format(time.StampMicro))
		}
		switch how {
		case "pause":
			// Resume the deposed leader only once its successor wrote (or
			// waits for the guard row the paused one holds): its late write
			// must meet the newer token.
			audit.waitWrite(next.token, true, limit)
			if err := ch.Cont(); err != nil {
				t.Fatal(err)
			}
		default:
			delete(children, ch.Pid)
			nc := start()
			children[nc.Pid] = nc
		}
		leader = next
	}
	audit.waitWrite(leader.token, false, limit)
	for _, ch := range children {
		syscall.Kill(ch.Pid, syscall.SIGTERM)
	}
	for _, ch := range children {
		if err := ch.Wait(); err != nil {
			t.Errorf("child %d: %v\n%s", ch.Pid, err, ch.Stderr())
		}
	}

	terms := audit.tokens("SELECT token FROM campaign_terms ORDER BY seq")
	for i := 1; i < len(terms); i++ {
		if terms[i] <= terms[i-1] {
			t.Errorf("term %d has token %v, not above term %d's %v", i, terms[i], i-1, terms[i-1])
		}
	}
	writes := audit.tokens("SELECT token FROM campaign_writes ORDER BY seq")
	if err := fencetest.VerifyHistory(name, writes); err != nil {
		t.Errorf("terms overlapped in the fenced store: %v", err)
	}
	for _, w := range slices.Compact(slices.Clone(writes)) {
		if !slices.Contains(terms, w) {
			t.Errorf("accepted write with token %v, which no term had", w)
		}
	}
	refused := audit.tokens("SELECT token FROM campaign_refused WHERE token < current")
	var bad int
	if err := pg.Pool.QueryRow(context.Background(), "SELECT count(*) FROM campaign_refused WHERE token >= current").Scan(&bad); err != nil || bad != 0 {
		t.Errorf("refusals that were not stale: %d (%v)", bad, err)
	}
	if len(refused) == 0 {
		t.Error("no deposed leader's late write was refused: the paused leaders never met the fence")
	}
	t.Logf("%d terms, %d accepted writes, %d stale writes refused (tokens %v); take-over after: %s",
		len(terms), len(writes), len(refused), refused, strings.Join(report, ", "))
}
