package lease

import (
	"regexp"
	"testing"

	"github.com/fencekit/fencekit/internal/obs/obstest"
)

func TestMetricsLostAtZeroFromTheStart(t *testing.T) {
	mp, scrape := obstest.Provider(t)
	if _, err := NewClient(newFakeRedis(), &Options{MeterProvider: mp}); err != nil {
		t.Fatal(err)
	}
	text := scrape()
	for _, cause := range []string{CauseExpired, CauseMissing, CauseStolen} {
		if want := `(?m)^lease_lost_total\{cause="` + cause + `"\} 0$`; !regexp.MustCompile(want).MatchString(text) {
			t.Errorf("a new client's exposition lacks %s:\n%s", want, text)
		}
	}
}
