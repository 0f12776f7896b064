// Package dashboard serves capsuled's web dashboard at /dashboard: server-
// rendered pages (html/template, assets embedded with go:embed, nothing
// fetched from the network at run time) for API keys and access tokens,
// capsules and their items, a query playground, memory namespaces and the
// server's status.
//
// # Sessions
//
// An operator signs in with an API key that carries the admin scope. The
// session is an HMAC-SHA256-signed cookie (HttpOnly, SameSite=Strict, Secure
// when the request came over TLS or Config.PublicURL is https, Path
// /dashboard, with an expiry) holding the key's id, a random session id and the
// expiry; the signing secret lives in the store (auth.Store.Secret), so every
// replica accepts the same cookies and restarts keep sessions. The key secret
// itself is never stored in the cookie, logged or echoed. Every request
// re-reads the key: revoking it, or removing its admin scope, ends its
// sessions at once. Signing out clears the cookie and remembers the session id
// in this process until it would have expired.
//
// # Cross-site request forgery
//
// Every state-changing request is a POST that must carry the session's
// synchronizer token (an HMAC of the session id, in a hidden form field) and
// pass net/http's CrossOriginProtection (Sec-Fetch-Site same-origin, or an
// Origin of the request's host or of Config.PublicURL). The sign-in form,
// which has no session yet, uses a double-submit token in a SameSite=Strict
// cookie. Every response carries a Content-Security-Policy without inline
// scripts (script-src 'self'), frame-ancestors 'none' and X-Frame-Options,
// X-Content-Type-Options: nosniff and a same-origin Referrer-Policy.
//
// # Services
//
// The dashboard calls the services directly through the small interfaces it
// declares (Auth, Capsules, Memory, StatusFunc); a nil Capsules or Memory
// shows "not available on this server" on its pages. File uploads go to the
// dashboard's own form handler, which calls Capsules.AddFile, so no API key
// ever reaches the browser; with JavaScript on, the same form is sent with
// XMLHttpRequest to show upload progress.
package dashboard
