// Package browsertest drives the dashboard in a real headless Chromium
// (Debian's chromium, through chromedp) against a real capsuled started on
// 127.0.0.1:0 with a temporary data directory.
//
// The tests sign in with the admin key, create a key and use it through the
// API, revoke it in the page and see the API refuse it, and (when the server
// has those services) upload a file and find it in the query playground and
// delete a memory namespace. Every page is checked for labelled inputs,
// headings in order, keyboard focus and no horizontal scrolling at phone
// width, and saved as a screenshot at desktop and phone width.
//
// Environment:
//
//	CAPSULED_CHROMIUM        the Chromium binary (default /usr/bin/chromium,
//	                         then chromium on PATH); without one the tests skip
//	CAPSULED_SCREENSHOT_DIR  where the screenshots go (default a temporary
//	                         directory); docs/screenshots holds the current ones
//	CAPSULED_TEST_LOG        non-empty: the server logs to stderr
//
// Run: go test ./internal/dashboard/browsertest/ -v
package browsertest
