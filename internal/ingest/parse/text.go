package parse

import (
	"context"
	"strings"

	"capsuled/internal/ingest"
)

// parsePlain keeps the text verbatim (cleaned) with one paragraph block per
// run of lines between blank lines.
func parsePlain(ctx context.Context, data []byte, _ string) (ingest.Document, error) {
	text := decodeText(data)
	if err := ctx.Err(); err != nil {
		return ingest.Document{}, err
	}
	return ingest.Document{Text: text, Blocks: ingest.ParagraphBlocks(text, nil)}, nil
}

// parseCode keeps source code verbatim. Blocks are split where a blank line
// is followed by an unindented line that does not close a bracket: top-level
// declarations and their doc comments, roughly, in most languages.
func parseCode(ctx context.Context, data []byte, _ string) (ingest.Document, error) {
	text := decodeText(data)
	if err := ctx.Err(); err != nil {
		return ingest.Document{}, err
	}
	return ingest.Document{Text: text, Blocks: codeBlocks(text)}, nil
}

func codeBlocks(text string) []ingest.Block {
	var out []ingest.Block
	start, end := -1, -1 // current block; end is one past its last non-blank line
	sawBlank := false
	pos := 0
	for pos <= len(text) && pos < len(text) {
		nl := strings.IndexByte(text[pos:], '\n')
		lineEnd := len(text)
		if nl >= 0 {
			lineEnd = pos + nl
		}
		line := text[pos:lineEnd]
		if strings.TrimSpace(line) == "" {
			sawBlank = true
		} else {
			if start < 0 {
				start = pos + (len(line) - len(strings.TrimLeft(line, " \t")))
			} else if sawBlank && startsDecl(line) {
				out = append(out, ingest.Block{Kind: ingest.BlockCode, Start: start, End: end})
				start = pos
			}
			end = lineEnd
			for end > pos && (text[end-1] == ' ' || text[end-1] == '\t') {
				end--
			}
			sawBlank = false
		}
		pos = lineEnd + 1
	}
	if start >= 0 {
		out = append(out, ingest.Block{Kind: ingest.BlockCode, Start: start, End: end})
	}
	return out
}

func startsDecl(line string) bool {
	if line == "" || line[0] == ' ' || line[0] == '\t' {
		return false
	}
	for _, p := range []string{"}", ")", "]", "end", "#endif", "#else", "else", "except", "finally", "catch"} {
		if strings.HasPrefix(line, p) {
			return false
		}
	}
	return true
}
