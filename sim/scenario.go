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
	Fencing   bool          // whether the storage checks tokens
	Seed      uint64        // seeds the run's jitter; the scenarios default to 1
}

// Validate returns an error naming the first invalid knob.
func (p Params) Validate() error {
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"ttl", p.TTL}, {"heartbeat", p.Heartbeat}, {"pause", p.Pause}, {"work", p.Work}, {"delay", p.Delay}} {
		if d.v < 0 {
			return fmt.Errorf("sim: %s %v is negative", d.name, d.v)
		}
	}
	if p.TTL == 0 {
		return fmt.Errorf("sim: ttl must be positive")
	}
	if p.Drift <= -0.9 || p.Drift > 10 {
		return fmt.Errorf("sim: drift %g outside (-0.9, 10]", p.Drift)
	}
	return nil
}

// Scenario is a named, hand-written schedule that shows one failure mode
// of leases.
type Scenario struct {
	Name  string
	Title string // one line for the timeline's header
	// Story says in two or three sentences what happens and what to look for.
	Story    string
	Defaults Params
	// knobs lists the scenario's own knobs among pause, work and drift;
	// every scenario reads ttl, heartbeat, delay, seed and fencing.
	knobs []string
	build func(p Params) Config
}

// Uses reports whether the scenario reads the knob called name (a Params
// field as fencesim spells its flag: "ttl", "heartbeat", "pause", "work",
// "delay", "drift", "seed"). Run ignores the knobs a scenario does not use,
// such as the pause of "crash".
func (s Scenario) Uses(name string) bool {
	switch name {
	case "ttl", "heartbeat", "delay", "seed":
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
	c.TTL, c.Heartbeat, c.Fencing, c.Seed = p.TTL, p.Heartbeat, p.Fencing, p.Seed
	// Long enough for every scenario to play out, whatever the knobs.
	c.Horizon = time.Hour + 10*(p.TTL+p.Work+p.Delay)
	if s.Uses("pause") {
		c.Horizon += 10 * p.Pause
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

var scenarios = []Scenario{
	{
		Name:  "kleppmann",
		Title: "Kleppmann's GC pause: A pauses past its TTL, B takes over, A writes anyway",
		Story: "A acquires the lease (token 33), checks it, starts a step of work and is paused " +
			"(a GC stop-the-world) for longer than the TTL. Its heartbeat stops too, the lease " +
			"expires, B acquires it (token 34) and writes. A resumes and sends the write it was " +
			"about to send, with token 33. A pause that ends before the lease expires (-pause 5s) " +
			"shows no conflict; with -work 8s B is still working when A writes.",
		// B's step (-work) is short enough for B to write while A is still
		// paused, as in Kleppmann's figure.
		Defaults: Params{TTL: 10 * time.Second, Heartbeat: 3 * time.Second, Pause: 15 * time.Second,
			Work: 2 * time.Second, Delay: 100 * time.Millisecond, Seed: 1},
		knobs: []string{"pause", "work"},
		build: func(p Params) Config {
			return Config{FirstToken: 33, Clients: []ClientSpec{
				{Name: "A", Step: 2 * time.Second, Pauses: []Pause{{At: time.Second, For: p.Pause}}},
				{Name: "B", Start: 2 * time.Second, Retry: 2 * time.Second, Step: p.Work},
			}}
		},
	},
	{
		Name:  "crash",
		Title: "A crashes right after acquiring: the TTL is forced downtime",
		Story: "A acquires the lease and crashes half a second later. Nobody can take over until " +
			"the lease expires, so a long TTL is a long outage; try -ttl 10s -heartbeat 3s.",
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
		Story: "A's job takes three steps of -work each, longer than the TTL in total. Its " +
			"heartbeat renews the lease, so B waits until A releases. With -heartbeat 0 the lease " +
			"runs out mid-job: A's own clock tells it to stop, so the job never finishes and B " +
			"starts over.",
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
		Story: "A renews its lease every -heartbeat while it works, then the whole process " +
			"pauses: the heartbeat is paused with it, the lease expires and B takes over. When A " +
			"resumes, its pending write goes out before the refused heartbeat tells it the lease is lost.",
		Defaults: Params{TTL: 10 * time.Second, Heartbeat: 3 * time.Second, Pause: 12 * time.Second,
			Work: 5 * time.Second, Delay: 100 * time.Millisecond, Seed: 1},
		knobs: []string{"pause", "work"},
		build: func(p Params) Config {
			return Config{FirstToken: 33, Clients: []ClientSpec{
				{Name: "A", Writes: 3, Step: p.Work, Pauses: []Pause{{At: 7 * time.Second, For: p.Pause}}},
				{Name: "B", Start: 2 * time.Second, Retry: 3 * time.Second, Step: 3 * time.Second},
			}}
		},
	},
	{
		Name:  "drift",
		Title: "A's clock runs slow: it believes its lease is valid after it expired",
		Story: "A has no heartbeat and checks, before each step, that its lease outlasts the step " +
			"by its own clock. That clock runs at 1+drift of real time, so A keeps writing after the " +
			"lease service has expired the lease and given it to B.",
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
