package parse

import (
	"bytes"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"golang.org/x/text/encoding/charmap"
)

// decodeText turns the bytes of a text file into a clean string: a BOM
// (UTF-8, UTF-16 LE/BE) is honoured and dropped; bytes that are not UTF-8 are
// read as Windows-1252 when the input has no valid multi-byte UTF-8 sequence
// at all (an 8-bit file), otherwise each bad byte becomes U+FFFD. Then
// cleanText applies.
func decodeText(data []byte) string {
	switch {
	case bytes.HasPrefix(data, []byte{0xEF, 0xBB, 0xBF}):
		data = data[3:]
	case bytes.HasPrefix(data, []byte{0xFF, 0xFE}):
		return cleanText(decodeUTF16(data[2:], false))
	case bytes.HasPrefix(data, []byte{0xFE, 0xFF}):
		return cleanText(decodeUTF16(data[2:], true))
	}
	if !utf8.Valid(data) && !hasMultibyteUTF8(data) {
		if s, err := charmap.Windows1252.NewDecoder().Bytes(data); err == nil {
			return cleanText(string(s))
		}
	}
	return cleanText(string(data))
}

func decodeUTF16(b []byte, bigEndian bool) string {
	u := make([]uint16, len(b)/2)
	for i := range u {
		if bigEndian {
			u[i] = uint16(b[2*i])<<8 | uint16(b[2*i+1])
		} else {
			u[i] = uint16(b[2*i+1])<<8 | uint16(b[2*i])
		}
	}
	return string(utf16.Decode(u))
}

// hasMultibyteUTF8 reports whether b holds at least one valid multi-byte
// UTF-8 sequence.
func hasMultibyteUTF8(b []byte) bool {
	for i := 0; i < len(b); {
		if b[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, n := utf8.DecodeRune(b[i:])
		if r != utf8.RuneError || n > 1 {
			return true
		}
		i++
	}
	return false
}

// cleanText makes s valid UTF-8 (bad bytes become U+FFFD), turns "\r\n",
// "\r", form feeds, vertical tabs and Unicode line/paragraph separators into
// "\n", and drops NULs, other C0/C1 control characters, BOMs and the
// replacement-prone zero-width no-break space. Tabs and newlines stay.
func cleanText(s string) string {
	if isClean(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			i++
			switch {
			case c == '\r':
				b.WriteByte('\n')
				if i < len(s) && s[i] == '\n' {
					i++
				}
			case c == '\f' || c == '\v':
				b.WriteByte('\n')
			case c == '\t' || c == '\n':
				b.WriteByte(c)
			case c < 0x20 || c == 0x7f:
				// drop
			default:
				b.WriteByte(c)
			}
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		switch {
		case r == utf8.RuneError && n == 1:
			b.WriteRune(utf8.RuneError)
		case r == '\u2028' || r == '\u2029' || r == '\u0085':
			b.WriteByte('\n')
		case r >= 0x80 && r < 0xA0, r == '\uFEFF':
			// C1 controls and BOMs: drop
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func isClean(s string) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if (c < 0x20 && c != '\t' && c != '\n') || c == 0x7f {
				return false
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n == 1) || r == '\u2028' || r == '\u2029' || r == '\uFEFF' || (r >= 0x80 && r < 0xA0) {
			return false
		}
		i += n
	}
	return true
}

// collapseSpace replaces every run of white space in s by one space.
func collapseSpace(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
