package browser

import (
	"context"
	"encoding/xml"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/fencekit/fencekit/internal/playground"
	"github.com/fencekit/fencekit/internal/testenv"
)

var screenshot = flag.String("playground.screenshot", "", "write a screenshot of the playground to `FILE` (make playground-screenshot: docs/img/playground.png)")

// built is the playground folder, built once per test binary.
var built struct {
	once sync.Once
	dir  string
	err  error
}

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// playgroundDir builds the playground (wasm included) the first time a
// test asks for it.
func playgroundDir(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		built.dir, built.err = os.MkdirTemp("", "fencekit-playground-")
		if built.err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			built.err = playground.Build(ctx, built.dir)
		}
	})
	if built.err != nil {
		t.Fatalf("building the playground: %v", built.err)
	}
	return built.dir
}

// chromium returns the path of Chromium: FENCEKIT_CHROMIUM, else chromium
// on PATH. Missing, it fails the test under FENCEKIT_REQUIRE_SERVERS=1 (as
// make test runs) and skips it otherwise.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("FENCEKIT_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "chromium not found on PATH (make tools installs Debian's chromium; or set FENCEKIT_CHROMIUM)"
	if testenv.Required() {
		t.Fatal(msg + " (failing because " + testenv.EnvRequireServers + "=1)")
	}
	t.Skip(msg + " (skipping; set " + testenv.EnvRequireServers + "=1 to fail instead)")
	return ""
}

// browser starts headless Chromium with a fresh profile and no network
// beyond the test's own server, and returns a tab's context.
func browser(t *testing.T) context.Context {
	t.Helper()
	return browserSized(t, 1600, 1100)
}

// browserSized is browser with a window of w x h pixels.
func browserSized(t *testing.T, w, h int) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium(t)),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(w, h),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(cancelAlloc)
	tab, cancelTab := chromedp.NewContext(alloc)
	t.Cleanup(cancelTab)
	return tab
}

// shown is what the page shows for one run.
type shown struct {
	Heading, What, Verdict        string
	Accepted, Rejected, Lost, Fin string
	SVGText                       string
	Summary, Tones                []string
}

const readRunJS = `(() => {
  const el = document.getElementById(%q);
  const count = (k) => el.querySelector('dd[data-count="' + k + '"]').textContent;
  return {
    Heading: el.querySelector("h2").textContent,
    What: el.querySelector(".what").textContent,
    Verdict: el.querySelector(".verdict").className.replace("verdict ", ""),
    Accepted: count("accepted"), Rejected: count("rejected"), Lost: count("lost"), Fin: count("final value"),
    SVGText: (() => { // lane names aside: the page draws them last, over the figure
      const svg = el.querySelector(".timeline svg").cloneNode(true);
      for (const n of svg.querySelectorAll(".lane-name")) n.remove();
      return svg.textContent;
    })(),
    Summary: [...el.querySelectorAll(".summary li")].map((li) => li.textContent),
    Tones: [...el.querySelectorAll(".summary li")].map((li) => li.className),
  };
})()`

// pageWidth is the figures' width on the page readPage read last.
var pageWidth int

// readPage waits until the page shows query and returns both runs; it
// sets pageWidth.
func readPage(t *testing.T, tab context.Context) (query string, runs [2]shown) {
	t.Helper()
	if err := chromedp.Do(tab, chromedp.WaitVisible(chromedp.CSS(`#run-on .timeline svg`))); err != nil {
		t.Fatalf("waiting for the page to draw: %v", err)
	}
	query, err := chromedp.Run(tab, chromedp.Evaluate[string](`document.body.dataset.query`))
	if err != nil {
		t.Fatalf("reading the page's query: %v", err)
	}
	w, err := chromedp.Run(tab, chromedp.Evaluate[string](`document.body.dataset.width`))
	if err != nil {
		t.Fatalf("reading the page's figure width: %v", err)
	}
	if pageWidth, err = strconv.Atoi(w); err != nil || pageWidth < 300 {
		t.Fatalf("the page drew its figures for a %q px column, want 300 or more", w)
	}
	for i, id := range []string{"run-off", "run-on"} {
		if runs[i], err = chromedp.Run(tab, chromedp.Evaluate[shown](fmt.Sprintf(readRunJS, id))); err != nil {
			t.Fatalf("reading %s: %v", id, err)
		}
	}
	return query, runs
}

// expect runs query natively at the page's width (pageWidth) and checks
// the page shows the same runs.
func expect(t *testing.T, got [2]shown, query string) *playground.Response {
	t.Helper()
	width := pageWidth
	resp, err := playground.Run(query, width)
	if err != nil {
		t.Fatalf("playground.Run(%q, %d): %v", query, width, err)
	}
	for i, o := range resp.Runs {
		want := shown{Heading: o.Heading, What: o.What, Verdict: o.Verdict, Accepted: fmt.Sprint(o.Accepted),
			Rejected: fmt.Sprint(o.Rejected), Lost: strings.Join(o.Lost, " "), Fin: o.Final,
			SVGText: svgText(t, o.SVG), Summary: o.Summary, Tones: o.Tones}
		if want.Lost == "" {
			want.Lost = "none"
		}
		g := got[i]
		g.SVGText = strings.Join(strings.Fields(g.SVGText), " ")
		if fmt.Sprintf("%#v", g) != fmt.Sprintf("%#v", want) {
			t.Errorf("run %d (%s) of %s:\n page shows %#v\n simulator  %#v", i, o.Storage, query, g, want)
		}
	}
	return resp
}

// svgText is the text an SVG shows (its textContent) but its lane names
// (which the page moves to the end, to draw them over the figure),
// spaces collapsed.
func svgText(t *testing.T, svg string) string {
	t.Helper()
	var b strings.Builder
	dec := xml.NewDecoder(strings.NewReader(svg))
	laneName := 0 // the depth inside a lane name (its second line is a tspan)
	for {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			if laneName > 0 || slices.ContainsFunc(tok.Attr, func(a xml.Attr) bool { return a.Name.Local == "class" && a.Value == "lane-name" }) {
				laneName++
			}
		case xml.EndElement:
			laneName = max(0, laneName-1)
		case xml.CharData:
			if laneName == 0 {
				b.Write(tok)
			}
		}
	}
	return strings.Join(strings.Fields(b.String()), " ")
}

// setControl moves a control the way a user does: a new value, then the
// input event the page listens to.
func setControl(id, value string) chromedp.Action[string] {
	return chromedp.Evaluate[string](fmt.Sprintf(`(() => {
  const el = document.getElementById(%q);
  el.value = %q;
  el.dispatchEvent(new Event("input", { bubbles: true }));
  return el.value;
})()`, id, value))
}

// TestBrowserMovesPause loads the playground in headless Chromium, checks
// that it shows what the simulator computes, moves the pause past the TTL
// and checks that the outcome and the drawing change as the simulator
// says, that the URL carries the new parameters, and that loading that
// URL again reproduces the run.
func TestBrowserMovesPause(t *testing.T) {
	tab := browser(t) // first: no build when Chromium is missing
	dir := playgroundDir(t)
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	t.Cleanup(srv.Close)

	start := "scenario=kleppmann&pause=5s"
	if err := chromedp.Do(tab, chromedp.Navigate(srv.URL+"/?"+start)); err != nil {
		t.Fatal(err)
	}
	q1, before := readPage(t, tab)
	if !strings.Contains(q1, "pause=5s") {
		t.Fatalf("the page runs %q, want pause=5s from the URL", q1)
	}
	expect(t, before, start)
	if before[0].Verdict != "safe" {
		t.Errorf("a 5s pause under a 10s TTL: fencing off shows %q, want safe", before[0].Verdict)
	}

	if _, err := chromedp.Run(tab, setControl("pause", "15000")); err != nil {
		t.Fatal(err)
	}
	q2, after := readPage(t, tab)
	want := strings.Replace(q1, "pause=5s", "pause=15s", 1)
	if q2 != want {
		t.Fatalf("after moving the pause to 15s the page runs %q, want %q", q2, want)
	}
	loc, err := chromedp.Run(tab, chromedp.Evaluate[string](`location.search`))
	if err != nil {
		t.Fatal(err)
	}
	if loc != "?"+q2 {
		t.Errorf("the address bar has %q, want ?%s", loc, q2)
	}
	expect(t, after, q2)
	if after[0].Verdict != "backwards" || after[1].Verdict != "safe" || after[1].Rejected == "0" {
		t.Errorf("a 15s pause: fencing off %q, fencing on %q with %s rejected; want backwards, then safe with a rejection",
			after[0].Verdict, after[1].Verdict, after[1].Rejected)
	}
	if after[0].SVGText == before[0].SVGText {
		t.Error("the fencing-off timeline did not change when the pause moved from 5s to 15s")
	}
	// The figure says what each read returned and marks the write that was lost.
	for _, want := range []string{`read ""`, "B1 (token 34): ok, later LOST"} {
		if !strings.Contains(after[0].SVGText, want) {
			t.Errorf("the fencing-off figure lacks %q: %s", want, after[0].SVGText)
		}
	}

	// The link reproduces the run.
	if err := chromedp.Do(tab, chromedp.Navigate(srv.URL+"/?"+q2)); err != nil {
		t.Fatal(err)
	}
	q3, again := readPage(t, tab)
	if q3 != q2 || fmt.Sprint(again) != fmt.Sprint(after) {
		t.Errorf("reloading ?%s shows another run (%s)", q2, q3)
	}

	// A key press on the TTL slider: one step (0.5s) up.
	if err := chromedp.Do(tab, chromedp.SendKeys(chromedp.ID("ttl"), kb.ArrowRight)); err != nil {
		t.Fatal(err)
	}
	q4, keyed := readPage(t, tab)
	if want := strings.Replace(q2, "ttl=10s", "ttl=10.5s", 1); q4 != want {
		t.Fatalf("after ArrowRight on the TTL the page runs %q, want %q", q4, want)
	}
	expect(t, keyed, q4)

	// A click on another storage mode changes the fenced run only.
	if err := chromedp.Do(tab, chromedp.Click(chromedp.CSS(`#storage input[value="writes"]`))); err != nil {
		t.Fatal(err)
	}
	q5, clicked := readPage(t, tab)
	if want := strings.Replace(q4, "storage=claim", "storage=writes", 1); q5 != want {
		t.Fatalf("after clicking the write rule the page runs %q, want %q", q5, want)
	}
	expect(t, clicked, q5)
	if fmt.Sprint(clicked[0]) != fmt.Sprint(keyed[0]) || clicked[1].Heading != "Write check only" {
		t.Errorf("the storage click: the fencing-off run changed, or the fenced run's heading is %q", clicked[1].Heading)
	}
	if err := chromedp.Do(tab, chromedp.Navigate(srv.URL+"/?"+q2)); err != nil {
		t.Fatal(err)
	}
	readPage(t, tab)

	if *screenshot != "" {
		png, err := chromedp.Run(tab, chromedp.CaptureScreenshot()) // the window: controls and both runs
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(*screenshot, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", *screenshot)
	}
}

// TestBrowserScenarioSwitch picks another scenario in the menu: the page
// resets the knobs to the scenario's defaults and disables the ones the
// scenario does not read.
func TestBrowserScenarioSwitch(t *testing.T) {
	tab := browser(t) // first: no build when Chromium is missing
	dir := playgroundDir(t)
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	t.Cleanup(srv.Close)
	if err := chromedp.Do(tab, chromedp.Navigate(srv.URL+"/")); err != nil {
		t.Fatal(err)
	}
	readPage(t, tab)
	if _, err := chromedp.Run(tab, setControl("scenario", "drift")); err != nil {
		t.Fatal(err)
	}
	q, runs := readPage(t, tab)
	resp := expect(t, runs, "scenario=drift")
	if q != resp.Query {
		t.Errorf("the page runs %q, want the drift defaults %q", q, resp.Query)
	}
	disabled, err := chromedp.Run(tab, chromedp.Evaluate[map[string]bool](
		`Object.fromEntries([...document.querySelectorAll("[data-knob] input")].map((i) => [i.name, i.disabled]))`))
	if err != nil {
		t.Fatal(err)
	}
	if !disabled["pause"] || disabled["drift"] || disabled["ttl"] {
		t.Errorf("drift scenario: disabled controls %v, want pause disabled, drift and ttl enabled", disabled)
	}

	// A bad link: the page says what is wrong and shows the defaults.
	if err := chromedp.Do(tab, chromedp.Navigate(srv.URL+"/?pause=abc")); err != nil {
		t.Fatal(err)
	}
	q, runs = readPage(t, tab)
	msg, err := chromedp.Run(tab, chromedp.Evaluate[string](`document.getElementById("status").hidden ? "" : document.getElementById("status").textContent`))
	if err != nil {
		t.Fatal(err)
	}
	if want := `playground: pause "abc" is not a duration`; !strings.HasPrefix(msg, want) {
		t.Errorf("a bad link shows %q, want %q...", msg, want)
	}
	expect(t, runs, q)
	if def, _ := playground.Run("", 0); q != def.Query {
		t.Errorf("a bad link runs %q, want the defaults %q", q, def.Query)
	}
}

// TestBrowserRedrawsTheMap clicks the map's button: the page draws, in
// WebAssembly, the same map as Map in Go for its heartbeat/TTL.
func TestBrowserRedrawsTheMap(t *testing.T) {
	tab := browser(t)
	dir := playgroundDir(t)
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	t.Cleanup(srv.Close)
	if err := chromedp.Do(tab, chromedp.Navigate(srv.URL+"/?heartbeat=5s")); err != nil {
		t.Fatal(err)
	}
	q, _ := readPage(t, tab)
	if err := chromedp.Do(tab, chromedp.Click(chromedp.ID("redraw-map")), chromedp.Poll[chromedp.Void](`document.body.dataset.map === document.body.dataset.query`)); err != nil {
		t.Fatal(err)
	}
	ms, err := chromedp.Run(tab, chromedp.Evaluate[string](`document.body.dataset.mapMs`))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the page redrew the map in %s ms (in WebAssembly; reported, not asserted)", ms)
	got, err := chromedp.Run(tab, chromedp.Evaluate[string](`(() => {
  const svg = document.querySelector("#map-figure svg").cloneNode(true);
  svg.querySelectorAll(".here").forEach((e) => e.remove());
  return svg.textContent;
})()`))
	if err != nil {
		t.Fatal(err)
	}
	want, err := playground.Map(q)
	if err != nil {
		t.Fatal(err)
	}
	if g, w := strings.Join(strings.Fields(got), " "), svgText(t, want); g != w {
		t.Fatalf("the page's map for %s:\n%s\nwant:\n%s", q, g, w)
	}
	pagePoints, err := chromedp.Run(tab, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#map-figure polyline")].map((p) => p.getAttribute("points"))`))
	if err != nil {
		t.Fatal(err)
	}
	var goPoints []string
	for _, m := range regexp.MustCompile(`points="([^"]*)"`).FindAllStringSubmatch(want, -1) {
		goPoints = append(goPoints, m[1])
	}
	if len(goPoints) != 16 || !reflect.DeepEqual(pagePoints, goPoints) {
		t.Errorf("the page's lines (%d) differ from Go's (%d)", len(pagePoints), len(goPoints))
	}
	if !strings.Contains(got, "heartbeat every 1/2 TTL") || !strings.Contains(got, "80 schedules per point") {
		t.Errorf("the redrawn map does not say heartbeat every 1/2 TTL, 80 schedules: %q", got)
	}
	if n, err := chromedp.Run(tab, chromedp.Evaluate[int](`document.querySelectorAll("#map-figure line.here").length`)); err != nil || n != 4 {
		t.Errorf("the redrawn map marks this run on %d panels (%v), want 4", n, err)
	}
}

// TestBuildFolder checks the built folder has what a static host needs.
func TestBuildFolder(t *testing.T) {
	dir := playgroundDir(t)
	for _, name := range []string{"index.html", "playground.js", "style.css", "wasm_exec.js", "fencesim.wasm", "violation-map.svg"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil || fi.Size() == 0 {
			t.Errorf("%s: missing or empty (%v)", name, err)
		}
	}
	page, err := os.ReadFile(filepath.Join(dir, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, external := range []string{"http://", "https://", "//cdn"} {
		if strings.Contains(string(page), external) {
			t.Errorf("index.html refers to %q: the page must need no network", external)
		}
	}
}
