package bench

import (
	"bufio"
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// CommandStats is a snapshot of a Redis server's INFO commandstats: calls
// per command name (lower case, subcommands as "client|setinfo"). Commands
// that a Lua script runs with redis.call are counted under their own names
// as well as the script's EVALSHA.
type CommandStats map[string]int64

// ReadCommandStats returns the server's current command counts.
func ReadCommandStats(ctx context.Context, c redis.UniversalClient) (CommandStats, error) {
	info, err := c.Info(ctx, "commandstats").Result()
	if err != nil {
		return nil, fmt.Errorf("bench: INFO commandstats: %w", err)
	}
	return ParseCommandStats(info)
}

// ParseCommandStats parses the text of INFO commandstats, whose lines read
// "cmdstat_NAME:calls=N,usec=...". Other lines are ignored.
func ParseCommandStats(info string) (CommandStats, error) {
	stats := CommandStats{}
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		rest, ok := strings.CutPrefix(line, "cmdstat_")
		if !ok {
			continue
		}
		name, fields, ok := strings.Cut(rest, ":")
		if !ok {
			return nil, fmt.Errorf("bench: commandstats line %q has no ':'", line)
		}
		calls, found := int64(-1), false
		for f := range strings.SplitSeq(fields, ",") {
			if v, ok := strings.CutPrefix(f, "calls="); ok {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil || n < 0 {
					return nil, fmt.Errorf("bench: commandstats line %q: bad calls %q", line, v)
				}
				calls, found = n, true
			}
		}
		if !found {
			return nil, fmt.Errorf("bench: commandstats line %q has no calls=", line)
		}
		stats[name] = calls
	}
	return stats, sc.Err()
}

// ignoredCommands are the harness's own commands and connection set-up,
// left out of Sub's totals.
var ignoredCommands = map[string]bool{"info": true, "ping": true, "hello": true, "client|setinfo": true}

// Sub returns the calls made between before and s, leaving out INFO, PING
// and connection set-up (HELLO, CLIENT SETINFO).
func (s CommandStats) Sub(before CommandStats) CommandStats {
	d := CommandStats{}
	for name, n := range s {
		if ignoredCommands[name] {
			continue
		}
		if n -= before[name]; n > 0 {
			d[name] = n
		}
	}
	return d
}

// Total returns the sum of all counts.
func (s CommandStats) Total() int64 {
	var t int64
	for _, n := range s {
		t += n
	}
	return t
}

// Scripts returns the number of script calls (EVAL, EVALSHA, FCALL and
// their read-only forms).
func (s CommandStats) Scripts() int64 {
	return s["eval"] + s["evalsha"] + s["eval_ro"] + s["evalsha_ro"] + s["fcall"] + s["fcall_ro"]
}

// PerOp formats the counts divided by ops, sorted by name, e.g.
// "evalsha=1.00 incr=1.00 set=1.00".
func (s CommandStats) PerOp(ops int) string {
	names := make([]string, 0, len(s))
	for name := range s {
		names = append(names, name)
	}
	sort.Strings(names)
	var b strings.Builder
	for i, name := range names {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s=%.2f", name, float64(s[name])/float64(max(ops, 1)))
	}
	return b.String()
}

// ServerCPU returns the Redis server's CPU time so far (used_cpu_user plus
// used_cpu_sys of INFO cpu, main thread and all).
func ServerCPU(ctx context.Context, c redis.UniversalClient) (time.Duration, error) {
	info, err := c.Info(ctx, "cpu").Result()
	if err != nil {
		return 0, fmt.Errorf("bench: INFO cpu: %w", err)
	}
	return ParseServerCPU(info)
}

// ParseServerCPU adds up used_cpu_user and used_cpu_sys (seconds) in the
// text of INFO cpu.
func ParseServerCPU(info string) (time.Duration, error) {
	var total float64
	found := 0
	for line := range strings.Lines(info) {
		name, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || (name != "used_cpu_user" && name != "used_cpu_sys") {
			continue
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 {
			return 0, fmt.Errorf("bench: INFO cpu %s=%q is not a number of seconds", name, v)
		}
		total += f
		found++
	}
	if found != 2 {
		return 0, fmt.Errorf("bench: INFO cpu lacks used_cpu_user or used_cpu_sys")
	}
	return time.Duration(total * float64(time.Second)), nil
}

// ProcessCPU returns this process's CPU time so far (user plus system,
// all threads), from getrusage.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// RoundTrips is a go-redis hook counting the requests a client sends: one
// per command, one per pipeline or transaction whatever its length. Add it
// with client.AddHook.
type RoundTrips struct{ n atomic.Int64 }

// Load returns the count so far.
func (r *RoundTrips) Load() int64 { return r.n.Load() }

// DialHook implements redis.Hook.
func (r *RoundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook implements redis.Hook.
func (r *RoundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		r.n.Add(1)
		return next(ctx, cmd)
	}
}

// ProcessPipelineHook implements redis.Hook.
func (r *RoundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		r.n.Add(1)
		return next(ctx, cmds)
	}
}

var _ redis.Hook = (*RoundTrips)(nil)
