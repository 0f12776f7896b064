package chat

import (
	"unicode"
	"unicode/utf8"
)

// PreTokenCounter counts the words and punctuation marks of a text as the
// BERT pre-tokenizer splits them: a lower bound of the WordPiece count, used
// for usage when the embedding model's vocabulary is not on this machine.
type PreTokenCounter struct{}

// CountTokens counts the pre-tokens of text.
func (PreTokenCounter) CountTokens(text string) int {
	n, inWord := 0, false
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRuneInString(text[i:])
		i += size
		switch {
		case unicode.IsSpace(r) || unicode.IsControl(r):
			inWord = false
		case unicode.IsPunct(r) || unicode.IsSymbol(r) || r < 128 && !unicode.IsLetter(r) && !unicode.IsDigit(r):
			n++
			inWord = false
		case unicode.Is(unicode.Han, r):
			n++
			inWord = false
		default:
			if !inWord {
				n++
				inWord = true
			}
		}
	}
	return n
}
