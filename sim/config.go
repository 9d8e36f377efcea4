package sim

import (
	"errors"
	"fmt"
	"time"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/valid"
)

// Config describes one run: the lease's TTL and heartbeat, whether the
// storage fences, the network, and the clients with their faults. The same
// Config (Seed included) always produces the same [Result].
type Config struct {
	// Seed seeds the run's one random source (message delays, step jitter).
	Seed uint64
	// TTL is the lease's time to live; it must be positive.
	TTL time.Duration
	// Heartbeat is the holder's renewal interval by its own clock; 0 means
	// no heartbeat (the lease lasts one TTL from the grant).
	Heartbeat time.Duration
	// Storage is how the storage treats tokens; the zero value,
	// [StorageOff], accepts everything.
	Storage Storage
	// DelayMin and DelayMax bound the one-way delay of every message; each
	// message draws its delay uniformly from [DelayMin, DelayMax].
	DelayMin, DelayMax time.Duration
	// FirstToken is the first token the lease service issues (default 1).
	FirstToken fence.Token
	// Resource names the stored object (default "file").
	Resource string
	// Clients are the competing workers, at most 26 (named A to Z by default).
	Clients []ClientSpec
	// Horizon ends the run at this virtual time (default 1h).
	Horizon time.Duration
	// CheckFirst makes every client ask the storage to check its token
	// before each write, and send the write when the answer is ok, whatever
	// the storage: with it, a check-then-write storage and an atomic one see
	// the same client (the check-then-write scenario). Without it, clients
	// check first only with [StorageCheckThenWrite].
	CheckFirst bool
	// MaxSteps bounds the number of actions processed (default 1,000,000);
	// a run that needs more fails with an error naming the seed.
	MaxSteps int
}

// ClientSpec is one client's script: it acquires the lease, reads the
// resource, and for each of Writes steps checks its lease by its own clock,
// works for Step and writes; then it releases and, after Idle, starts its
// next job. Times are by the client's own clock unless marked real.
type ClientSpec struct {
	// Name labels the client's lane (default "A", "B", ...).
	Name string
	// Start is the real time of the client's first acquire attempt.
	Start time.Duration
	// Retry bounds the random jitter added to a refused client's wait. A
	// refused client waits, as lease.AcquireWait does, until the holder
	// releases (a notice from the lease service) or the holder's remaining
	// TTL plus a jitter in [0, Retry] has passed (default TTL/5).
	Retry time.Duration
	// Jobs is how many times the client acquires and works (default 1).
	Jobs int
	// Writes is the number of writes per job (default 1).
	Writes int
	// Step is the work before each write; StepJitter adds a uniform random
	// extra in [0, StepJitter].
	Step, StepJitter time.Duration
	// Idle is the wait between a job's end and the next job's acquire.
	Idle time.Duration
	// Pauses stop the whole client (work, heartbeat, message handling) for
	// a window of real time: a GC stop-the-world or a VM suspension.
	Pauses []Pause
	// Crash kills the client at real time CrashAt.
	Crash   bool
	CrashAt time.Duration
	// Drift is the client's clock error rate: its clock advances 1+Drift
	// seconds per real second (-0.5: half speed). It must be above -0.9.
	Drift float64
	// WriteDelay holds the client's first write in the network this much
	// longer than the message delay (a packet stuck in a queue): the write
	// was sent in time and arrives late, whatever the heartbeat does.
	WriteDelay time.Duration
}

// Pause is a window of real time during which a client does nothing. A
// work step in progress resumes, after the pause, with the work it had left.
type Pause struct {
	// At is when the pause starts: real time since the start of the run,
	// or, when Step is n > 0, since the client's n-th work step began (its
	// n-th lease check passed): At equal to the step's length pauses it
	// just before that step's write.
	At, For time.Duration
	Step    int
}

const maxClients = 26

// errConfig prefixes every configuration error.
var errConfig = errors.New("sim: invalid config")

// normalize validates cfg and returns a copy with defaults filled in. Errors
// wrap errConfig and name the field.
func normalize(cfg *Config) (Config, error) {
	if cfg == nil {
		return Config{}, fmt.Errorf("%w: nil config", errConfig)
	}
	c := *cfg
	bad := func(format string, args ...any) (Config, error) {
		return Config{}, fmt.Errorf("%w: "+format, append([]any{errConfig}, args...)...)
	}
	switch {
	case c.TTL <= 0:
		return bad("TTL %v must be positive", c.TTL)
	case c.Heartbeat < 0:
		return bad("Heartbeat %v is negative", c.Heartbeat)
	case c.DelayMin < 0 || c.DelayMax < 0:
		return bad("message delay [%v, %v] is negative", c.DelayMin, c.DelayMax)
	case c.DelayMax < c.DelayMin:
		return bad("DelayMax %v is below DelayMin %v", c.DelayMax, c.DelayMin)
	case len(c.Clients) == 0 || len(c.Clients) > maxClients:
		return bad("%d clients, want 1 to %d", len(c.Clients), maxClients)
	case int(c.Storage) >= len(storageNames):
		return bad("unknown Storage %d", c.Storage)
	case c.Horizon < 0:
		return bad("Horizon %v is negative", c.Horizon)
	case c.MaxSteps < 0:
		return bad("MaxSteps %d is negative", c.MaxSteps)
	}
	if c.FirstToken == 0 {
		c.FirstToken = 1
	}
	if err := valid.Token(c.FirstToken); err != nil {
		return bad("FirstToken: %v", err)
	}
	if c.Resource == "" {
		c.Resource = "file"
	}
	if c.Horizon == 0 {
		c.Horizon = time.Hour
	}
	if c.MaxSteps == 0 {
		c.MaxSteps = 1_000_000
	}
	c.Clients = append([]ClientSpec(nil), c.Clients...)
	for i := range c.Clients {
		s := &c.Clients[i]
		if s.Name == "" {
			s.Name = string(rune('A' + i))
		}
		switch {
		case s.Start < 0 || s.Retry < 0 || s.Step < 0 || s.StepJitter < 0 || s.Idle < 0 || s.CrashAt < 0 || s.WriteDelay < 0:
			return bad("client %s: negative duration", s.Name)
		case s.Jobs < 0 || s.Writes < 0:
			return bad("client %s: negative Jobs or Writes", s.Name)
		case s.Drift <= -0.9 || s.Drift > 10:
			return bad("client %s: Drift %g outside (-0.9, 10]", s.Name, s.Drift)
		}
		for _, p := range s.Pauses {
			if p.At < 0 || p.For < 0 || p.Step < 0 {
				return bad("client %s: negative pause %v+%v", s.Name, p.At, p.For)
			}
		}
		if s.Retry == 0 {
			s.Retry = max(c.TTL/5, time.Millisecond)
		}
		if s.Jobs == 0 {
			s.Jobs = 1
		}
		if s.Writes == 0 {
			s.Writes = 1
		}
	}
	return c, nil
}
