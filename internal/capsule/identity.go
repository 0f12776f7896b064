package capsule

import (
	"path"
	"strings"
)

// Item identity within a capsule (docs/ingestion.md, "Item identity"):
//
//   - An item is named by its URI: the one the client gave, normalised by
//     normalizeURI, else file:<file name> for a file and sha256:<content
//     hash> for a text. Adding to a URI the capsule has updates that item.
//   - Identical bytes are one item: content of a kind (file or text) and
//     file type (the resolved MIME type, which decides how it is read) that
//     the capsule already holds under another URI is that item, whatever
//     URI or file name the new request names, so that one document sent by
//     two routes (capsuled add's file:///abs/path, a form upload's
//     file:name) never yields duplicate chunks. The item keeps its URI.
//   - Adding content the item already has is a no-op, except for the
//     fields the request sends: metadata and time_authored replace the
//     item's only when given.

// normalizeURI is the form of a URI that identifies an item: surrounding
// white space trimmed (before and after the rest); for a URI with a scheme, the scheme and the host in
// lower case, file://localhost/ as file:///, and the path of a file or
// http(s) URI with its dot segments and doubled slashes resolved. Nothing
// is escaped or unescaped, and a string without a scheme is kept as it is
// (trimmed). The form is its own normal form: trimming after resolving dot
// segments can expose a new one ("/. /." is "/. ", trimmed "/.", which is
// "/"), so the steps repeat until nothing changes. Each step keeps or
// shortens the string, so the loop ends.
func normalizeURI(s string) string {
	for {
		n := normalizeURIOnce(s)
		if n == s {
			return n
		}
		s = n
	}
}

// normalizeURIOnce is one pass of normalizeURI's steps.
func normalizeURIOnce(s string) string {
	s = strings.TrimSpace(s)
	colon := strings.IndexByte(s, ':')
	if colon <= 0 || !isScheme(s[:colon]) {
		return s
	}
	scheme, rest := strings.ToLower(s[:colon]), s[colon+1:]
	var b strings.Builder
	b.WriteString(scheme)
	b.WriteByte(':')
	hier := scheme == "file" || scheme == "http" || scheme == "https"
	if strings.HasPrefix(rest, "//") {
		end := len(rest)
		if i := strings.IndexAny(rest[2:], "/?#"); i >= 0 {
			end = 2 + i
		}
		host := strings.ToLower(rest[2:end])
		if scheme == "file" && host == "localhost" {
			host = ""
		}
		b.WriteString("//")
		b.WriteString(host)
		rest = rest[end:]
	} else if scheme == "file" && !strings.HasPrefix(rest, "/") {
		hier = false // file:name, a name without a path
	}
	p, tail := rest, ""
	if i := strings.IndexAny(rest, "?#"); i >= 0 {
		p, tail = rest[:i], rest[i:]
	}
	if hier && strings.HasPrefix(p, "/") {
		p = cleanPath(p)
	}
	b.WriteString(p)
	b.WriteString(tail)
	// Resolving dot segments can leave white space at the end ("/ /." is
	// "/ "): trim it; normalizeURI repeats the pass if that exposed more.
	return strings.TrimSpace(b.String())
}

// isScheme reports whether s is a URI scheme (RFC 3986: a letter, then
// letters, digits, +, - or .).
func isScheme(s string) bool {
	for i, r := range s {
		switch {
		case r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z':
		case i > 0 && (r >= '0' && r <= '9' || r == '+' || r == '-' || r == '.'):
		default:
			return false
		}
	}
	return s != ""
}

// cleanPath resolves dot segments and doubled slashes, keeping a trailing
// slash.
func cleanPath(p string) string {
	c := path.Clean(p)
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	return c
}
