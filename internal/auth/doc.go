// Package auth creates, checks and revokes API keys, and mints and checks the
// access tokens of the memory operation.
//
// API keys are "csk_" followed by 43 base62 characters (256 random bits). Only
// their SHA-256 is stored, with a visible prefix (the first 12 characters) so
// that people can tell keys apart; a fast hash is enough because the secret
// has full entropy. A key is checked against the store on every request, so a
// revocation is seen by every replica on its next request.
//
// Access tokens are "cst_" + base64url(JSON claims) + "." + base64url(HMAC-SHA256).
// The signing secret is a server secret kept in the store (shared by
// replicas). A token names the key it was minted from and the namespaces it
// may use; it is refused after its expiry and as soon as its key is revoked.
// Tokens carry only the memory scope.
package auth
