package readme

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// mdLink is an inline Markdown link or image: [text](target).
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestDocLinks checks every relative link of README.md and docs/*.md: the
// file or directory it names exists, and its #anchor is a heading of the
// page it points to, by GitHub's heading-slug rule.
func TestDocLinks(t *testing.T) {
	pages, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	pages = append(pages, "../../README.md")
	for _, page := range pages {
		for _, problem := range brokenLinks(t, page) {
			t.Errorf("%s: %s", strings.TrimPrefix(page, "../../"), problem)
		}
	}
}

// brokenLinks returns one line for each relative link of page that does not
// resolve.
func brokenLinks(t *testing.T, page string) []string {
	t.Helper()
	text, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	var problems []string
	for _, m := range mdLink.FindAllStringSubmatch(stripCode(string(text)), -1) {
		target := m[1]
		if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
			continue
		}
		file, anchor, _ := strings.Cut(target, "#")
		path := page
		if file != "" {
			path = filepath.Join(filepath.Dir(page), file)
			if _, err := os.Stat(path); err != nil {
				problems = append(problems, fmt.Sprintf("link %s: no such file or directory", target))
				continue
			}
		}
		if anchor == "" {
			continue
		}
		if !strings.HasSuffix(path, ".md") {
			problems = append(problems, fmt.Sprintf("link %s: an anchor into a file that is not Markdown", target))
			continue
		}
		if !anchors(t, path)[anchor] {
			problems = append(problems, fmt.Sprintf("link %s: %s has no heading with that anchor", target, filepath.Base(path)))
		}
	}
	return problems
}

// codeBlock is a fenced code block; links inside one are not links.
var codeBlock = regexp.MustCompile("(?ms)^```.*?^```")

// stripCode removes fenced code blocks and inline code spans.
func stripCode(text string) string {
	text = codeBlock.ReplaceAllString(text, "")
	return regexp.MustCompile("`[^`\n]*`").ReplaceAllString(text, "")
}

// anchors returns the anchors GitHub gives the headings of the page at path:
// the heading's text, lower-cased, without punctuation, spaces turned into
// hyphens, and "-1", "-2", ... appended to repeats.
func anchors(t *testing.T, path string) map[string]bool {
	t.Helper()
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	out := map[string]bool{}
	heading := regexp.MustCompile(`(?m)^#{1,6} +(.+?) *#* *$`)
	for _, m := range heading.FindAllStringSubmatch(codeBlock.ReplaceAllString(string(text), ""), -1) {
		slug := slugify(m[1])
		if n := seen[slug]; n > 0 {
			out[fmt.Sprintf("%s-%d", slug, n)] = true
		} else {
			out[slug] = true
		}
		seen[slug]++
	}
	return out
}

// slugify is GitHub's heading slug of one heading's Markdown text.
func slugify(heading string) string {
	heading = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`).ReplaceAllString(heading, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// TestSlugify pins the slug rule on headings of the kinds the docs use.
func TestSlugify(t *testing.T) {
	for heading, want := range map[string]string{
		"Reproduce":                      "reproduce",
		"The lease package's own checks": "the-lease-packages-own-checks",
		"Acquire + release: Redis work":  "acquire--release-redis-work",
		"`lease_lost_total` and alerts":  "lease_lost_total-and-alerts",
		"Lease issuers: Redis, etcd":     "lease-issuers-redis-etcd",
		"See [leases](leases.md)":        "see-leases",
		"Tokens: `max(counter+1, µs)`":   "tokens-maxcounter1-µs",
	} {
		if got := slugify(heading); got != want {
			t.Errorf("slugify(%q) = %q, want %q", heading, got, want)
		}
	}
}
