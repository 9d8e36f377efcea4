package lease

import (
	"fmt"
	"github.com/fencekit/fencekit/internal/valid"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/leasearg"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
)

// MinTTL is the shortest TTL a lease may have. Below it the renew interval,
// the drift margin and the latency of one round trip to the store leave no room
// for a heartbeat to arrive in time.
const MinTTL = 10 * time.Millisecond

// MaxTTL is the longest TTL a lease may have. A lease renews itself every
// TTL/3, so a long TTL buys nothing while the holder runs; it only sets how
// long everyone waits for a holder that crashed. A day covers any use
// (a job paused over a weekend should not keep its lease), and a longer
// TTL is more likely a unit mistake.
const MaxTTL = 24 * time.Hour

// ErrInvalid is [fence.ErrInvalid], matched by every error about bad input:
// an invalid name, TTL or option, a nil client, lease or function. Such
// errors are returned before anything is sent to the store.
var ErrInvalid = fence.ErrInvalid

// Options configures a [Client]. The zero value (or a nil *Options) gives the
// defaults. Durations that depend on the TTL are checked against each
// Acquire's TTL; the rest is checked by [NewClient], which refuses a bad
// value with an error wrapping [ErrInvalid].
type Options struct {
	// KeyPrefix namespaces the backend's keys, rows or nodes (each
	// backend's doc says how). Default "fencekit". It is at most 64 bytes
	// of UTF-8 without '{', '}', whitespace or control characters.
	KeyPrefix string

	// RenewInterval is the time between heartbeats, counted from when the
	// previous acquire or renew request was sent. Default TTL/3. It must be
	// shorter than the TTL minus DriftMargin.
	RenewInterval time.Duration

	// DriftMargin is taken off the TTL to get the local deadline, so that
	// the lease's Context ends before the store can expire the grant and give it to
	// someone else, despite clock rate differences and expiry granularity.
	// Default TTL/100 + 2ms (as Redlock). It must be shorter than the TTL.
	DriftMargin time.Duration

	// RetryDelay is the pause before retrying a renewal that failed with a
	// transient error (timeout, connection refused). Default RenewInterval/4,
	// at least 1ms. Retries stop at the local deadline.
	RetryDelay time.Duration

	// WaitJitter bounds the random delay AcquireWait adds to the holder's
	// remaining TTL before trying again, so that waiters do not all try at
	// the same instant. Default 10ms. Negative means none.
	WaitJitter time.Duration

	// Logger receives warnings (heartbeat p99 latency above TTL/10, leases
	// lost). Default slog.Default().
	Logger *slog.Logger

	// MeterProvider creates the instruments (see the package doc). Default
	// otel.GetMeterProvider(), a no-op unless the program installs one.
	MeterProvider metric.MeterProvider

	// Identity names this client's process to operators: every backend
	// stores it with each grant, and Inspect, fencectl, the loss log line
	// and [LostError] show it. Default "<hostname>/<pid>". It is at most
	// 128 bytes of UTF-8 without whitespace or control
	// characters.
	Identity string

	// NoBatch sends every call on its own, at once, even while other calls
	// of this Client are in flight. By default redislease sends a call that
	// finds another in flight, with every call waiting by then, as one
	// pipeline once that one returns: fewer round trips and system calls
	// under load, up to one round trip more for a call that arrives during
	// another. The other issuers ignore it.
	NoBatch bool
}

// maxIdentityLen is the longest Options.Identity, in bytes.
const maxIdentityLen = 128

// config is Options with defaults filled in and validated.
type config struct {
	prefix        string
	renewInterval time.Duration // 0: ttl/3
	driftMargin   time.Duration // <0: default from ttl
	retryDelay    time.Duration // 0: interval/4
	waitJitter    time.Duration
	logger        *slog.Logger
	meters        metric.MeterProvider
	identity      string
}

func newConfig(o *Options) (config, error) {
	if o == nil {
		o = &Options{}
	}
	c := config{
		prefix:        o.KeyPrefix,
		renewInterval: o.RenewInterval,
		driftMargin:   o.DriftMargin,
		retryDelay:    o.RetryDelay,
		waitJitter:    o.WaitJitter,
		logger:        o.Logger,
		meters:        o.MeterProvider,
		identity:      o.Identity,
	}
	if c.logger == nil {
		c.logger = slog.Default()
	}
	if c.meters == nil {
		c.meters = otel.GetMeterProvider()
	}
	if c.identity == "" {
		c.identity = defaultIdentity()
	}
	switch {
	case c.waitJitter == 0:
		c.waitJitter = 10 * time.Millisecond
	case c.waitJitter < 0:
		c.waitJitter = 0
	}
	var err error
	if c.prefix, err = leasearg.KeyPrefix(c.prefix); err != nil {
		return c, fmt.Errorf("lease: Options.KeyPrefix: %w", err)
	}
	if err := checkIdentity(c.identity); err != nil {
		return c, err
	}
	if c.renewInterval < 0 {
		return c, valid.Invalid("lease: Options.RenewInterval is %v, must not be negative", c.renewInterval)
	}
	if c.driftMargin < 0 {
		return c, valid.Invalid("lease: Options.DriftMargin is %v, must not be negative", c.driftMargin)
	}
	if c.retryDelay < 0 {
		return c, valid.Invalid("lease: Options.RetryDelay is %v, must not be negative", c.retryDelay)
	}
	return c, nil
}

// defaultIdentity is "<hostname>/<pid>", cut to maxIdentityLen.
func defaultIdentity() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown-host"
	}
	id := host + "/" + strconv.Itoa(os.Getpid())
	if len(id) > maxIdentityLen {
		id = id[len(id)-maxIdentityLen:]
	}
	return id
}

// checkIdentity validates Options.Identity (never empty here: empty means
// the default): a name valid.Name accepts, at most maxIdentityLen
// bytes, without whitespace.
func checkIdentity(id string) error {
	if len(id) > maxIdentityLen {
		return valid.Invalid("lease: Options.Identity is %d bytes long, the maximum is %d", len(id), maxIdentityLen)
	}
	if err := valid.Name("Options.Identity", id); err != nil {
		return fmt.Errorf("lease: %w", err)
	}
	if i := strings.IndexFunc(id, unicode.IsSpace); i >= 0 {
		return valid.Invalid("lease: Options.Identity %.40q has whitespace at byte %d", id, i)
	}
	return nil
}

// timing is the per-lease schedule derived from the TTL and the options.
type timing struct {
	ttl      time.Duration // whole milliseconds, as sent to the store
	interval time.Duration // between heartbeats
	margin   time.Duration // drift margin
	retry    time.Duration // between retries of a failed renewal
	early    time.Duration // how early a renewal may go to join a batch: interval/8
}

// deadline returns the local end of a lease whose last acquire or renew
// request was sent at sent.
func (t timing) deadline(sent time.Time) time.Time { return sent.Add(t.ttl - t.margin) }

// timingFor checks ttl against the options and returns the lease's schedule.
func (c *config) timingFor(ttl time.Duration) (timing, error) {
	if ttl < MinTTL {
		return timing{}, valid.Invalid("lease: TTL %v is below the minimum %v", ttl, MinTTL)
	}
	if ttl > MaxTTL {
		return timing{}, valid.Invalid("lease: TTL %v is above the maximum %v", ttl, MaxTTL)
	}
	if ttl%time.Millisecond != 0 {
		return timing{}, valid.Invalid("lease: TTL %v is not a whole number of milliseconds (the finest precision every store keeps)", ttl)
	}
	t := timing{ttl: ttl, interval: c.renewInterval, margin: c.driftMargin, retry: c.retryDelay}
	if t.margin == 0 {
		t.margin = ttl/100 + 2*time.Millisecond
	}
	if t.margin >= ttl {
		return timing{}, valid.Invalid("lease: Options.DriftMargin %v must be shorter than the TTL %v", t.margin, ttl)
	}
	if t.interval == 0 {
		t.interval = ttl / 3
	}
	if t.interval >= ttl-t.margin {
		return timing{}, valid.Invalid("lease: Options.RenewInterval %v must be shorter than the TTL %v minus the drift margin %v",
			t.interval, ttl, t.margin)
	}
	if t.retry == 0 {
		t.retry = max(t.interval/4, time.Millisecond)
	}
	t.early = t.interval / 8
	return t, nil
}
