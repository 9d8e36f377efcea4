package bench

import (
	"testing"
	"time"
)

func TestParseCommandStats(t *testing.T) {
	info := "# Commandstats\r\n" +
		"cmdstat_evalsha:calls=12,usec=300,usec_per_call=25.00,rejected_calls=0,failed_calls=1\r\n" +
		"cmdstat_client|setinfo:calls=4,usec=4,usec_per_call=1.00,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_set:calls=7,usec=9,usec_per_call=1.29,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_info:calls=3,usec=90,usec_per_call=30.00,rejected_calls=0,failed_calls=0\r\n"
	got, err := ParseCommandStats(info)
	if err != nil {
		t.Fatal(err)
	}
	want := CommandStats{"evalsha": 12, "client|setinfo": 4, "set": 7, "info": 3}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: got %d, want %d", k, got[k], v)
		}
	}
	before := CommandStats{"evalsha": 2, "set": 7, "info": 1}
	d := got.Sub(before)
	if d["evalsha"] != 10 || d["set"] != 0 || d["info"] != 0 || d["client|setinfo"] != 0 {
		t.Errorf("Sub = %v, want only evalsha=10 (info and connection set-up left out)", d)
	}
	if d.Total() != 10 || d.Scripts() != 10 {
		t.Errorf("Total %d Scripts %d, want 10 and 10", d.Total(), d.Scripts())
	}
	if s := d.PerOp(4); s != "evalsha=2.50" {
		t.Errorf("PerOp(4) = %q", s)
	}
}

func TestParseCommandStatsRejectsBadLines(t *testing.T) {
	for _, info := range []string{
		"cmdstat_get",
		"cmdstat_get:usec=3",
		"cmdstat_get:calls=x,usec=3",
		"cmdstat_get:calls=-1",
	} {
		if _, err := ParseCommandStats(info); err == nil {
			t.Errorf("ParseCommandStats(%q) succeeded, want an error", info)
		}
	}
}

func FuzzParseCommandStats(f *testing.F) {
	f.Add("cmdstat_get:calls=1,usec=2\r\ncmdstat_set:calls=3")
	f.Add("# Commandstats\ncmdstat_x:calls=")
	f.Fuzz(func(t *testing.T, info string) {
		s, err := ParseCommandStats(info)
		if err != nil {
			return
		}
		for k, v := range s {
			if v < 0 {
				t.Fatalf("%s has %d calls", k, v)
			}
		}
		if d := s.Sub(s); d.Total() != 0 {
			t.Fatalf("s.Sub(s) = %v, want empty", d)
		}
	})
}

func TestQuantile(t *testing.T) {
	var d []time.Duration
	for i := 100; i >= 1; i-- {
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{{0, time.Millisecond}, {0.5, 50 * time.Millisecond}, {0.99, 99 * time.Millisecond}, {1, 100 * time.Millisecond}} {
		if got := Quantile(d, c.q); got != c.want {
			t.Errorf("Quantile(%v) = %v, want %v", c.q, got, c.want)
		}
	}
	if d[0] != 100*time.Millisecond {
		t.Error("Quantile sorted its argument in place")
	}
	if Quantile(nil, 0.5) != 0 {
		t.Error("Quantile of no samples is not 0")
	}
}

func TestParseServerCPU(t *testing.T) {
	d, err := ParseServerCPU("# CPU\r\nused_cpu_sys:1.500000\r\nused_cpu_user:2.250000\r\nused_cpu_sys_children:9.0\r\n")
	if err != nil {
		t.Fatal(err)
	}
	if d != 3750*time.Millisecond {
		t.Errorf("got %v, want 3.75s", d)
	}
	for _, bad := range []string{"used_cpu_sys:1\r\n", "used_cpu_sys:x\r\nused_cpu_user:1\r\n"} {
		if _, err := ParseServerCPU(bad); err == nil {
			t.Errorf("ParseServerCPU(%q) succeeded", bad)
		}
	}
}

func TestParseProcStat(t *testing.T) {
	stat := "4242 (versity gw) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 37 0 0 20 0 9 0 123 456 789"
	d, err := parseProcStat(stat)
	if err != nil {
		t.Fatal(err)
	}
	if d != 287*clockTick {
		t.Errorf("got %v, want %v", d, 287*clockTick)
	}
	if _, err := parseProcStat("4242 versitygw S 1"); err == nil {
		t.Error("parseProcStat accepted a line without the command's parentheses")
	}
}

func TestRotated(t *testing.T) {
	names := []string{"a", "b", "c"}
	for round, want := range map[string]string{"": "abc", "1": "abc", "2": "bca", "3": "cab", "4": "abc", "x": "abc"} {
		t.Setenv(EnvRound, round)
		got := ""
		for _, n := range rotated(names) {
			got += n
		}
		if got != want {
			t.Errorf("round %q: got %s, want %s", round, got, want)
		}
	}
	if names[0] != "a" {
		t.Error("rotated changed its argument")
	}
}
