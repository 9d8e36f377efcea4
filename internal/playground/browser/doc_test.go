// Package browser holds the playground's browser tests: headless Chromium,
// driven with chromedp, against the built page. It is a module of its own
// so that fencekit's users do not inherit chromedp.
package browser
