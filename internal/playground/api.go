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
// Params.Storage being the storage mode of the fenced run (the other run
// always has fencing off).
type Query struct {
	Scenario string
	Params   sim.Params
}

// knob is one duration or number control; every knob is a URL parameter.
type knob struct {
	name string
	dur  func(p *sim.Params) *time.Duration // nil for drift
}

var knobs = []knob{
	{"ttl", func(p *sim.Params) *time.Duration { return &p.TTL }},
	{"heartbeat", func(p *sim.Params) *time.Duration { return &p.Heartbeat }},
	{"pause-at", func(p *sim.Params) *time.Duration { return &p.PauseAt }},
	{"pause", func(p *sim.Params) *time.Duration { return &p.Pause }},
	{"work", func(p *sim.Params) *time.Duration { return &p.Work }},
	{"delay", func(p *sim.Params) *time.Duration { return &p.Delay }},
	{"write-delay", func(p *sim.Params) *time.Duration { return &p.WriteDelay }},
	{"drift", nil},
}

// storageChoices are the fenced storage modes, in the order the page
// lists them, each with the page's short label.
var storageChoices = func() []Choice {
	labels := map[sim.Storage]string{sim.StorageWrites: "write rule only", sim.StorageClaim: "write + claim",
		sim.StorageCheckThenWrite: "check, then write"}
	var out []Choice
	for _, s := range sim.Storages() {
		if s.Fenced() {
			out = append(out, Choice{Name: s.String(), Title: labels[s], Help: s.Describe()})
		}
	}
	return out
}()

// ParseQuery reads a URL query such as "scenario=drift&ttl=10s&drift=-0.5".
// Missing parameters take the scenario's defaults; parameters the scenario
// does not use are ignored. Errors name the parameter and its value.
func ParseQuery(raw string) (Query, error) {
	v, err := url.ParseQuery(strings.TrimPrefix(raw, "?"))
	if err != nil {
		return Query{}, fmt.Errorf("playground: query %q: %v", raw, err)
	}
	known := map[string]bool{"scenario": true, "storage": true, "seed": true}
	for _, k := range knobs {
		known[k.name] = true
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
	if s := v.Get("seed"); s != "" {
		if q.Params.Seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			return Query{}, fmt.Errorf("playground: seed %q is not a whole number", s)
		}
	}
	for _, k := range knobs {
		s := v.Get(k.name)
		if s == "" || !sc.Uses(k.name) {
			continue
		}
		if k.dur == nil {
			if q.Params.Drift, err = strconv.ParseFloat(s, 64); err != nil {
				return Query{}, fmt.Errorf("playground: drift %q is not a number", s)
			}
			continue
		}
		d, err := time.ParseDuration(s)
		if err != nil {
			return Query{}, fmt.Errorf("playground: %s %q is not a duration such as 10s or 250ms", k.name, s)
		}
		*k.dur(&q.Params) = d
	}
	if err := q.Params.Validate(); err != nil {
		return Query{}, fmt.Errorf("playground: %s", strings.TrimPrefix(err.Error(), "sim: "))
	}
	return q, nil
}

// defaultStorage is the first fenced storage the scenario compares.
func defaultStorage(sc sim.Scenario) sim.Storage {
	for _, s := range sc.Storages() {
		if s.Fenced() {
			return s
		}
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
// uses in a fixed order, the storage mode and the seed. ParseQuery of the
// result gives q back.
func (q Query) Encode() string {
	sc, err := sim.Lookup(q.Scenario)
	var b strings.Builder
	b.WriteString("scenario=" + url.QueryEscape(q.Scenario))
	for _, k := range knobs {
		if err != nil || !sc.Uses(k.name) {
			continue
		}
		val := strconv.FormatFloat(q.Params.Drift, 'g', -1, 64)
		if k.dur != nil {
			val = sim.FormatTime(*k.dur(&q.Params))
		}
		b.WriteString("&" + k.name + "=" + url.QueryEscape(val))
	}
	b.WriteString("&storage=" + url.QueryEscape(q.Params.Storage.String()))
	b.WriteString("&seed=" + strconv.FormatUint(q.Params.Seed, 10))
	return b.String()
}
