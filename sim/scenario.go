package sim

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Params are a scenario's knobs. Each scenario has its own defaults
// ([Scenario.Defaults]); the fencesim command overrides those the user sets.
type Params struct {
	TTL       time.Duration // the lease's time to live
	Heartbeat time.Duration // renewal interval; 0 = no heartbeat
	Pause     time.Duration // length of the holder's stop-the-world pause
	Work      time.Duration // length of a work step before a write
	Delay     time.Duration // one-way delay of every message
	Drift     float64       // holder's clock rate error (-0.5 = half speed)
	PauseAt   time.Duration // when A pauses, counted from the start of its work step (its lease check)
	Storage   Storage       // how the storage treats tokens
	Seed      uint64        // seeds the run's jitter; the scenarios default to 1

	// WriteDelay holds A's write in the network this much longer than
	// Delay (kleppmann): sent in time, it arrives late.
	WriteDelay time.Duration
}

// Validate returns an error naming the first invalid knob.
func (p Params) Validate() error {
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"ttl", p.TTL}, {"heartbeat", p.Heartbeat}, {"pause", p.Pause}, {"pause-at", p.PauseAt}, {"work", p.Work}, {"delay", p.Delay}, {"write-delay", p.WriteDelay}} {
		if d.v < 0 {
			return fmt.Errorf("sim: %s %v is negative", d.name, d.v)
		}
	}
	if p.TTL == 0 {
		return fmt.Errorf("sim: ttl must be positive")
	}
	if !(p.Drift > -0.9 && p.Drift <= 10) { // also refuses NaN
		return fmt.Errorf("sim: drift %g outside (-0.9, 10]", p.Drift)
	}
	if int(p.Storage) >= len(storageNames) {
		return fmt.Errorf("sim: unknown storage %d", p.Storage)
	}
	return nil
}

// Scenario is a named, hand-written schedule that shows one failure mode
// of leases.
type Scenario struct {
	Name  string
	Title string // one line for the timeline's header
	// Defaults are the scenario's knobs; Compare lists the storage modes
	// fencesim runs side by side unless told otherwise (Defaults.Storage
	// is the first).
	Defaults Params
	Compare  []Storage
	// knobs lists the scenario's own knobs among pause, pause-at, work and
	// drift; every scenario reads ttl, heartbeat, delay, seed and storage.
	knobs []string
	build func(p Params) Config
	story func(p Params) string
	tip   string
}

// Story says in a few sentences, with p's numbers, what the scenario sets
// up and what to look for.
func (s Scenario) Story(p Params) string { return s.story(p) }

// Tip suggests fencesim flags to try next ("" for none); the playground
// offers the same runs as buttons instead.
func (s Scenario) Tip() string { return s.tip }

// Uses reports whether the scenario reads the knob called name (a Params
// field as fencesim spells its flag: "ttl", "heartbeat", "pause", "work",
// "delay", "drift", "seed"). Run ignores the knobs a scenario does not use,
// such as the pause of "crash".
func (s Scenario) Uses(name string) bool {
	switch name {
	case "ttl", "heartbeat", "delay", "seed", "storage":
		return true
	}
	return slices.Contains(s.knobs, name)
}

// Config returns the scenario's configuration for p. Errors name the
// invalid knob.
func (s Scenario) Config(p Params) (*Config, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	c := s.build(p)
	c.TTL, c.Heartbeat, c.Storage, c.Seed = p.TTL, p.Heartbeat, p.Storage, p.Seed
	// Long enough for every scenario to play out, whatever the knobs.
	c.Horizon = time.Hour + 10*(p.TTL+p.Work+p.Delay+p.WriteDelay)
	if s.Uses("pause") {
		c.Horizon += 10 * (p.Pause + p.PauseAt)
	}
	c.DelayMin, c.DelayMax = p.Delay, p.Delay
	return &c, nil
}

// Run runs the scenario with p.
func (s Scenario) Run(p Params) (*Result, error) {
	cfg, err := s.Config(p)
	if err != nil {
		return nil, err
	}
	return Run(cfg)
}

// fmtT is FormatTime for the stories.
var fmtT = FormatTime

// compareDur says how a pause compares with the TTL.
func compareDur(pause, ttl time.Duration) string {
	switch {
	case pause > ttl:
		return "longer than the " + fmtT(ttl) + " TTL"
	case pause == ttl:
		return "as long as the TTL"
	}
	return "shorter than the " + fmtT(ttl) + " TTL"
}

// heartbeatStory says what A's heartbeat does during a pause.
func heartbeatStory(p Params) string {
	if p.Heartbeat == 0 {
		return "A has no heartbeat, so the lease lasts one TTL from the grant"
	}
	return "A's heartbeat (every " + fmtT(p.Heartbeat) + ") is paused with the rest of the process"
}

// pauseStory is the kleppmann and check-then-write pause, told from p.
func pauseStory(p Params, step time.Duration, where string) string {
	return fmt.Sprintf("A acquires the lease (token 33), reads, checks its lease and starts %s of work. "+
		"%s into the work, %s, A is paused (a GC stop-the-world) for %s, %s; %s. "+
		"B waits for the lease (it gets token 34) and works for %s.",
		fmtT(step), fmtT(p.PauseAt), where, fmtT(p.Pause), compareDur(p.Pause, p.TTL), heartbeatStory(p), fmtT(p.Work))
}

// whereInStep says where in a step of length step a pause at `at` falls.
func whereInStep(at, step time.Duration) string {
	switch {
	case at < step:
		return "with " + fmtT(step-at) + " of work left (work does not progress during a pause)"
	case at == step:
		return "with its work done, just before it sends its write"
	}
	return "after it sent its write"
}

// checkThenWriteStory tells check-then-write from p: with its work done,
// A sends its token check, and the pause falls as the storage answers it
// (the table prints the check and the pause at one time), before the
// answer reaches A; or, with -pause-at, elsewhere in or after the work.
func checkThenWriteStory(p Params) string {
	const step = 2 * time.Second
	after := " The check-then-write storage then applies A's late write without checking again. The atomic storage " +
		"(claim) checks each write in the same step as it applies it (it answers the early check too; not shown)."
	if p.PauseAt <= step || p.PauseAt > step+p.Delay {
		where := whereInStep(p.PauseAt, step)
		if p.PauseAt > step {
			where = "after its token check came back ok"
		}
		return pauseStory(p, step, where) + " The storage answers A's token check (33 is current: ok)." + after
	}
	return fmt.Sprintf("A acquires the lease (token 33), reads, checks its lease, does %s of work and sends its token check. "+
		"%s later, as the storage answers it (33 is current: ok), A is paused (a GC stop-the-world) for %s, %s, "+
		"before the answer reaches it; %s. B waits for the lease (it gets token 34) and works for %s.",
		fmtT(step), fmtT(p.PauseAt-step), fmtT(p.Pause), compareDur(p.Pause, p.TTL), heartbeatStory(p), fmtT(p.Work)) + after
}

// writeDelayStory tells the kleppmann write's extra network delay, if any.
func writeDelayStory(p Params) string {
	if p.WriteDelay == 0 {
		return ""
	}
	return " A's write then spends " + fmtT(p.WriteDelay+p.Delay) + " in the network: it was sent in time, it arrives late."
}

// kleppmannBuild is Kleppmann's figure: A's pause counts from its lease
// check; B's step is -work.
func kleppmannBuild(p Params) Config {
	return Config{FirstToken: 33, Clients: []ClientSpec{
		{Name: "A", Step: 2 * time.Second, Pauses: []Pause{{Step: 1, At: p.PauseAt, For: p.Pause}}, WriteDelay: p.WriteDelay},
		{Name: "B", Start: 2 * time.Second, Retry: 2 * time.Second, Step: p.Work},
	}}
}

var scenarios = []Scenario{
	{
		Name:  "kleppmann",
		Title: "Kleppmann's GC pause: A is paused holding the lease while B waits for it",
		story: func(p Params) string {
			return pauseStory(p, 2*time.Second, whereInStep(p.PauseAt, 2*time.Second)) + writeDelayStory(p)
		},
		tip: "Try -pause 5s (the pause ends in time), -pause-at 1s (A is paused mid-work) and " +
			"-work 8s -fencing writes,claim (two storages side by side, write check only and both rules; B is still working " +
			"when A writes: the write check alone loses A's update).",
		// B's step (-work) is short enough for B to write while A is still
		// paused, as in Kleppmann's figure.
		Defaults: Params{TTL: 10 * time.Second, Heartbeat: 3 * time.Second, Pause: 15 * time.Second,
			PauseAt: 2 * time.Second, Work: 2 * time.Second, Delay: 100 * time.Millisecond, Seed: 1},
		knobs: []string{"pause", "pause-at", "work", "write-delay"},
		build: kleppmannBuild,
	},
	{
		Name:  "check-then-write",
		Title: "Why the check must be atomic: A passes the token check, pauses, then writes unchecked",
		story: checkThenWriteStory,
		Defaults: Params{TTL: 10 * time.Second, Heartbeat: 3 * time.Second, Pause: 15 * time.Second,
			PauseAt: 2100 * time.Millisecond, Work: 2 * time.Second, Delay: 100 * time.Millisecond, Seed: 1,
			Storage: StorageCheckThenWrite},
		Compare: []Storage{StorageCheckThenWrite, StorageClaim},
		knobs:   []string{"pause", "pause-at", "work"},
		build: func(p Params) Config {
			c := kleppmannBuild(p)
			c.CheckFirst = true // the same client in both runs: only the storage differs
			return c
		},
	},
	{
		Name:  "crash",
		Title: "A crashes right after acquiring: the TTL is forced downtime",
		story: func(p Params) string {
			return fmt.Sprintf("A acquires the lease and crashes half a second later. Nobody can take over until "+
				"the lease expires, so the %s TTL means up to %s of outage; try -ttl 10s -heartbeat 3s.", fmtT(p.TTL), fmtT(p.TTL))
		},
		Defaults: Params{TTL: 60 * time.Second, Work: 2 * time.Second, Delay: 100 * time.Millisecond, Seed: 1},
		knobs:    []string{"work"},
		build: func(p Params) Config {
			return Config{FirstToken: 33, Clients: []ClientSpec{
				{Name: "A", Step: p.Work, Crash: true, CrashAt: 500 * time.Millisecond},
				{Name: "B", Start: time.Second, Retry: 5 * time.Second, Step: p.Work},
			}}
		},
	},
	{
		Name:  "heartbeat",
		Title: "A slow job outlives the TTL; the heartbeat keeps the lease alive",
		story: func(p Params) string {
			hb := fmt.Sprintf("A renews its lease every %s, so B waits until A releases. With -heartbeat 0 the "+
				"lease runs out mid-job: A's own clock tells it to stop, so the job never finishes and B starts over.", fmtT(p.Heartbeat))
			if p.Heartbeat == 0 {
				hb = "A has no heartbeat: the lease runs out mid-job, A's own clock tells it to stop, so the job " +
					"never finishes and B starts over."
			}
			return fmt.Sprintf("A's job takes three steps of %s each (%s in all) with a %s TTL. %s",
				fmtT(p.Work), fmtT(3*p.Work), fmtT(p.TTL), hb)
		},
		Defaults: Params{TTL: 10 * time.Second, Heartbeat: 3 * time.Second, Work: 8 * time.Second,
			Delay: 100 * time.Millisecond, Seed: 1},
		knobs: []string{"work"},
		build: func(p Params) Config {
			return Config{FirstToken: 33, Clients: []ClientSpec{
				{Name: "A", Writes: 3, Step: p.Work},
				{Name: "B", Start: 2 * time.Second, Retry: 4 * time.Second, Step: 2 * time.Second},
			}}
		},
	},
	{
		Name:  "pause-heartbeat",
		Title: "A process pause stops the heartbeat too",
		story: func(p Params) string {
			renew := "renewing its lease every " + fmtT(p.Heartbeat)
			if p.Heartbeat == 0 {
				renew = "without a heartbeat"
			}
			return fmt.Sprintf("A works through three steps of %s, %s. %s into its second step, %s, the whole "+
				"process pauses for %s, %s, heartbeat included. When A resumes, does its write go out before "+
				"the refused heartbeat tells it the lease is lost?",
				fmtT(p.Work), renew, fmtT(p.PauseAt), whereInStep(p.PauseAt, p.Work), fmtT(p.Pause), compareDur(p.Pause, p.TTL))
		},
		Defaults: Params{TTL: 10 * time.Second, Heartbeat: 3 * time.Second, Pause: 12 * time.Second,
			PauseAt: 5 * time.Second, Work: 5 * time.Second, Delay: 100 * time.Millisecond, Seed: 1},
		knobs: []string{"pause", "pause-at", "work"},
		build: func(p Params) Config {
			return Config{FirstToken: 33, Clients: []ClientSpec{
				{Name: "A", Writes: 3, Step: p.Work, Pauses: []Pause{{Step: 2, At: p.PauseAt, For: p.Pause}}},
				{Name: "B", Start: 2 * time.Second, Retry: 3 * time.Second, Step: 3 * time.Second},
			}}
		},
	},
	{
		Name:  "drift",
		Title: "A's clock runs slow: it believes its lease is valid after it expired",
		story: func(p Params) string {
			return fmt.Sprintf("A has no heartbeat and checks, before each %s step, that its lease outlasts the step "+
				"by its own clock. That clock runs at %g times real time, so A believes in its %s lease for %s.",
				fmtT(p.Work), 1+p.Drift, fmtT(p.TTL), fmtT(time.Duration(float64(p.TTL)/(1+p.Drift))))
		},
		Defaults: Params{TTL: 10 * time.Second, Work: 2 * time.Second, Drift: -0.5, Delay: 100 * time.Millisecond, Seed: 1},
		knobs:    []string{"work", "drift"},
		build: func(p Params) Config {
			return Config{FirstToken: 33, Clients: []ClientSpec{
				{Name: "A", Writes: 5, Step: p.Work, Drift: p.Drift},
				{Name: "B", Start: 2 * time.Second, Retry: 3 * time.Second, Step: 3 * time.Second},
			}}
		},
	},
}

// Storages returns the storage modes fencesim runs by default: Compare,
// or off and claim.
func (s Scenario) Storages() []Storage {
	if len(s.Compare) > 0 {
		return slices.Clone(s.Compare)
	}
	return []Storage{StorageOff, StorageClaim}
}

// Scenarios returns the built-in scenarios in a fixed order, kleppmann first.
func Scenarios() []Scenario { return slices.Clone(scenarios) }

// Lookup returns the scenario called name, or an error listing the known ones.
func Lookup(name string) (Scenario, error) {
	for _, s := range scenarios {
		if s.Name == name {
			return s, nil
		}
	}
	return Scenario{}, fmt.Errorf("sim: unknown scenario %q (known: %s)", name, strings.Join(ScenarioNames(), ", "))
}

// ScenarioNames returns the names of the built-in scenarios.
func ScenarioNames() []string {
	names := make([]string, len(scenarios))
	for i, s := range scenarios {
		names[i] = s.Name
	}
	return names
}
