package main

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fencekit/fencekit/sim"
)

// parseDuration parses a non-negative duration with a unit, such as "45s",
// "1m30s" or "250ms". A bare number is refused with a hint to add a unit,
// a negative duration is refused, and other errors name the input.
func parseDuration(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, errors.New("empty duration; write one with a unit, such as 10s")
	}
	if _, err := strconv.ParseFloat(t, 64); err == nil {
		if t == "0" {
			return 0, nil
		}
		return 0, fmt.Errorf("%q has no unit; write %ss or %sms", s, t, t)
	}
	d, err := time.ParseDuration(t)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration such as 10s, 1m30s or 250ms", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("%q is negative; durations must be 0 or more", s)
	}
	return d, nil
}

// durationValue is a flag.Value for parseDuration.
type durationValue struct{ d *time.Duration }

// String returns "" for zero, so that flag's help prints "(default D)"
// only for a flag whose default is not zero.
func (v durationValue) String() string {
	if v.d == nil || *v.d == 0 {
		return ""
	}
	return v.d.String()
}

func (v durationValue) Set(s string) error {
	d, err := parseDuration(s)
	if err != nil {
		return err
	}
	*v.d = d
	return nil
}

// fencingMode is the -fencing flag: "both" (the default comparison), or
// storage modes separated by commas, such as "writes,claim"; "on" means
// claim.
type fencingMode string

func (m *fencingMode) String() string { return string(*m) }

func (m *fencingMode) Set(s string) error {
	if _, err := fencingMode(s).storages(nil); err != nil {
		return err
	}
	*m = fencingMode(s)
	return nil
}

// storages returns the storage modes to run, in the order given; "both"
// (or "") means def.
func (m fencingMode) storages(def []sim.Storage) ([]sim.Storage, error) {
	if m == "" || m == "both" {
		return def, nil
	}
	var out []sim.Storage
	for _, name := range strings.Split(string(m), ",") {
		s, err := sim.ParseStorage(strings.TrimSpace(name))
		if err != nil {
			return nil, fmt.Errorf("%q is not a storage mode: use off, writes, claim (or on), check-then-write, or both", name)
		}
		if slices.Contains(out, s) {
			return nil, fmt.Errorf("storage %s listed twice", s)
		}
		out = append(out, s)
	}
	return out, nil
}

// probValue is a flag.Value for a probability in [0, 1].
type probValue struct{ p *float64 }

func (v probValue) String() string {
	if v.p == nil {
		return ""
	}
	return strconv.FormatFloat(*v.p, 'g', -1, 64)
}

func (v probValue) Set(s string) error {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f < 0 || f > 1 {
		return fmt.Errorf("%q is not a probability between 0 and 1", s)
	}
	*v.p = f
	return nil
}
