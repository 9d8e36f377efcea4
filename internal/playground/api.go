package playground

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/fencekit/fencekit/sim"
)

// Query is one setting of the page's controls: a scenario and its knobs,
// Params.Storage being the storage mode of the fenced run and Base that
// of the run it is compared with (the scenario's baseline unless the
// query sets base: fencing off for most).
type Query struct {
	Scenario string
	Params   sim.Params
	Base     sim.Storage
}

// knob is one duration or number control; every knob is a URL parameter.
// The page draws its slider from Slider.
type knob struct {
	Slider
	dur func(p *sim.Params) *time.Duration // nil for drift
}

// Slider is how the page draws a knob: a range input from Min to Max by
// Step, in milliseconds for durations (Unit "s", shown in seconds) and as
// is for drift (Unit "%", shown as a percentage).
type Slider struct {
	Name  string  `json:"name"`
	Label string  `json:"label"`
	Help  string  `json:"help"`
	Min   float64 `json:"min"`
	Max   float64 `json:"max"`
	Step  float64 `json:"step"`
	Unit  string  `json:"unit"`
	Zero  string  `json:"zero,omitempty"` // shown instead of 0, such as "none"
}

func durKnob(name, label, help string, maxMs, stepMs float64, zero string, f func(p *sim.Params) *time.Duration) knob {
	return knob{Slider{Name: name, Label: label, Help: help, Max: maxMs, Step: stepMs, Unit: "s", Zero: zero}, f}
}

var knobs = []knob{
	{Slider{Name: "ttl", Label: "TTL", Help: "The lease's time to live", Min: 1000, Max: 60000, Step: 500, Unit: "s"},
		func(p *sim.Params) *time.Duration { return &p.TTL }},
	durKnob("heartbeat", "Heartbeat every", "How often the holder renews its lease (0: never)", 30000, 500, "none",
		func(p *sim.Params) *time.Duration { return &p.Heartbeat }),
	durKnob("pause-at", "Pause into A's work", "When A pauses, counted from the start of its work step, just after it checked its lease (its last check)",
		20000, 100, "", func(p *sim.Params) *time.Duration { return &p.PauseAt }),
	durKnob("pause", "Pause length", "How long A's whole process stops (a GC stop-the-world): work and heartbeat",
		60000, 500, "", func(p *sim.Params) *time.Duration { return &p.Pause }),
	durKnob("work", "Work step", "How long each work step takes before its write", 20000, 500, "",
		func(p *sim.Params) *time.Duration { return &p.Work }),
	durKnob("delay", "Message delay", "One-way delay of every message", 2000, 50, "",
		func(p *sim.Params) *time.Duration { return &p.Delay }),
	durKnob("write-delay", "A's write delayed", "Extra network delay of A's write: sent in time, it arrives late",
		30000, 500, "", func(p *sim.Params) *time.Duration { return &p.WriteDelay }),
	{Slider{Name: "drift", Label: "A's clock drift", Help: "A's clock runs at 1 + drift of real time",
		Min: -0.8, Max: 1, Step: 0.05, Unit: "%"}, nil},
}

// storageChoices are the fenced storage modes, in the order the page
// lists them, each with the page's short label.
var storageChoices = func() []Choice {
	labels := map[sim.Storage]string{sim.StorageWrites: "write check only", sim.StorageClaim: "write + claim",
		sim.StorageCheckThenWrite: "check, then write"}
	var out []Choice
	for _, s := range sim.Storages() {
		if s.Fenced() {
			out = append(out, Choice{Name: s.String(), Title: labels[s], Help: s.Describe()})
		}
	}
	return out
}()

// minHeartbeat bounds how often a run renews, so that every run stays a
// few thousand events long, quick enough to rerun as a slider moves.
const minHeartbeat = 250 * time.Millisecond

// ParseQuery reads a URL query such as "scenario=drift&ttl=10s&drift=-0.5".
// Missing parameters take the scenario's defaults; parameters the scenario
// does not use are ignored. Values must lie in their slider's range
// (durations in whole milliseconds), a heartbeat be 0 or at least 250ms.
// Errors name the parameter and its value.
func ParseQuery(raw string) (Query, error) {
	v, err := url.ParseQuery(strings.TrimPrefix(raw, "?"))
	if err != nil {
		return Query{}, fmt.Errorf("playground: query %q: %v", raw, err)
	}
	known := map[string]bool{"scenario": true, "storage": true, "base": true, "seed": true}
	for _, k := range knobs {
		known[k.Name] = true
	}
	for key := range v {
		if !known[key] {
			return Query{}, fmt.Errorf("playground: unknown parameter %q", key)
		}
	}
	q := Query{Scenario: v.Get("scenario")}
	if q.Scenario == "" {
		q.Scenario = "kleppmann"
	}
	sc, err := sim.Lookup(q.Scenario)
	if err != nil {
		return Query{}, fmt.Errorf("playground: %s", strings.TrimPrefix(err.Error(), "sim: "))
	}
	q.Params = sc.Defaults
	q.Params.Storage = defaultStorage(sc)
	if name := v.Get("storage"); name != "" {
		st, err := sim.ParseStorage(name)
		if err != nil || !st.Fenced() {
			return Query{}, fmt.Errorf("playground: storage %q is not one of %s", name, storageNames())
		}
		q.Params.Storage = st
	}
	q.Base = baseline(sc)
	if name := v.Get("base"); name != "" {
		if q.Base, err = sim.ParseStorage(name); err != nil {
			return Query{}, fmt.Errorf("playground: base %q is not off or one of %s", name, storageNames())
		}
	}
	if s := v.Get("seed"); s != "" {
		if q.Params.Seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			return Query{}, fmt.Errorf("playground: seed %q is not a whole number", s)
		}
	}
	for _, k := range knobs {
		s := v.Get(k.Name)
		if s == "" || !sc.Uses(k.Name) {
			continue
		}
		if k.dur == nil {
			if q.Params.Drift, err = strconv.ParseFloat(s, 64); err != nil || !(q.Params.Drift >= k.Min && q.Params.Drift <= k.Max) { // NaN fails too
				return Query{}, fmt.Errorf("playground: drift %q is not a number from %g to %g", s, k.Min, k.Max)
			}
			continue
		}
		d, err := time.ParseDuration(s)
		if err != nil {
			return Query{}, fmt.Errorf("playground: %s %q is not a duration such as 10s or 250ms", k.Name, s)
		}
		lo, hi := time.Duration(k.Min)*time.Millisecond, time.Duration(k.Max)*time.Millisecond
		if d%time.Millisecond != 0 || d < lo || d > hi {
			return Query{}, fmt.Errorf("playground: %s %q must be whole milliseconds from %v to %v", k.Name, s, lo, hi)
		}
		*k.dur(&q.Params) = d
	}
	if h := q.Params.Heartbeat; h > 0 && h < minHeartbeat {
		return Query{}, fmt.Errorf("playground: heartbeat %v is below %v (0: none)", h, minHeartbeat)
	}
	if err := q.Params.Validate(); err != nil {
		return Query{}, fmt.Errorf("playground: %s", strings.TrimPrefix(err.Error(), "sim: "))
	}
	return q, nil
}

// baseline is the storage of the run fencing is compared with: the first the scenario
// compares (fencing off, except for check-then-write).
func baseline(sc sim.Scenario) sim.Storage { return sc.Storages()[0] }

// defaultStorage is the fenced run's storage unless the query sets
// one: the last the scenario compares (write + claim for all of today's).
func defaultStorage(sc sim.Scenario) sim.Storage {
	st := sc.Storages()
	if last := st[len(st)-1]; last.Fenced() {
		return last
	}
	return sim.StorageClaim
}

func storageNames() string {
	names := make([]string, len(storageChoices))
	for i, c := range storageChoices {
		names[i] = c.Name
	}
	return strings.Join(names, ", ")
}

// Encode returns the query in canonical form: the scenario, the knobs it
// uses in a fixed order, the storage mode, the base storage where it is
// not the scenario's baseline, and the seed. ParseQuery of the result
// gives q back.
func (q Query) Encode() string {
	sc, err := sim.Lookup(q.Scenario)
	var b strings.Builder
	b.WriteString("scenario=" + url.QueryEscape(q.Scenario))
	for _, k := range knobs {
		if err != nil || !sc.Uses(k.Name) {
			continue
		}
		val := strconv.FormatFloat(q.Params.Drift, 'g', -1, 64)
		if k.dur != nil {
			val = sim.FormatTime(*k.dur(&q.Params))
		}
		b.WriteString("&" + k.Name + "=" + url.QueryEscape(val))
	}
	b.WriteString("&storage=" + url.QueryEscape(q.Params.Storage.String()))
	if err == nil && q.Base != baseline(sc) {
		b.WriteString("&base=" + url.QueryEscape(q.Base.String()))
	}
	b.WriteString("&seed=" + strconv.FormatUint(q.Params.Seed, 10))
	return b.String()
}
