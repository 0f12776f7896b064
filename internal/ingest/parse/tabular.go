package parse

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"capsuled/internal/ingest"
	"capsuled/internal/ingest/detect"
)

func parseCSV(ctx context.Context, data []byte, _ string) (ingest.Document, error) {
	text := decodeText(data)
	return parseDelimited(ctx, text, detect.CSVDelimiter(text), "CSV")
}

func parseTSV(ctx context.Context, data []byte, _ string) (ingest.Document, error) {
	return parseDelimited(ctx, decodeText(data), '\t', "TSV")
}

// MaxColumns bounds the columns of one CSV or TSV record. Each record
// becomes one row block naming every column, so a record of 65,536 short
// columns makes about 1,560 chunks to embed, and one of 200,000 several
// thousand (a 1.9 MB file was still indexing after 7 minutes); a file with
// a wider record fails with the reason.
const MaxColumns = 4096

// parseDelimited reads a header and renders each record as a row block
// "header: value; …". A record wider than the header names its extra
// columns colN (1-based); one wider than MaxColumns fails the document.
func parseDelimited(ctx context.Context, text string, delim rune, format string) (ingest.Document, error) {
	r := csv.NewReader(strings.NewReader(text))
	r.Comma = delim
	r.FieldsPerRecord = -1
	r.LazyQuotes = true
	r.ReuseRecord = false
	var b builder
	var header []string
	for n := 0; ; n++ {
		if n%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return ingest.Document{}, err
			}
		}
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return ingest.Document{}, corrupt(format, err, "%v", err)
		}
		if len(rec) > MaxColumns {
			line, _ := r.FieldPos(0)
			return ingest.Document{}, unprocessable("too_many_columns", nil,
				"%s record on line %d has %d columns, more than the limit of %d per record", format, line, len(rec), MaxColumns)
		}
		if header == nil {
			header = make([]string, len(rec))
			for i, h := range rec {
				h = collapseSpace(h)
				if h == "" {
					h = "col" + strconv.Itoa(i+1)
				}
				header[i] = h
			}
			continue
		}
		for i := len(header); i < len(rec); i++ {
			header = append(header, "col"+strconv.Itoa(i+1))
		}
		for i := range rec {
			rec[i] = collapseSpace(rec[i])
		}
		b.add(ingest.BlockRow, 0, renderRow(header, rec))
	}
	if len(b.blocks) == 0 && len(header) > 0 {
		b.add(ingest.BlockRow, 0, strings.Join(header, "; "))
	}
	return b.doc(), nil
}

const maxJSONDepth = 64

// parseJSON flattens a JSON document: one row block per element of a
// top-level array, per member of a top-level object, or one for a scalar.
func parseJSON(ctx context.Context, data []byte, _ string) (ingest.Document, error) {
	text := decodeText(data)
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return ingest.Document{}, corrupt("JSON", err, "%v", jsonErr(err))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return ingest.Document{}, corrupt("JSON", err, "extra data after the top-level value (JSON lines should be sent as application/x-ndjson)")
	}
	var b builder
	switch t := v.(type) {
	case []any:
		for i, e := range t {
			if i%1024 == 0 {
				if err := ctx.Err(); err != nil {
					return ingest.Document{}, err
				}
			}
			b.add(ingest.BlockRow, 0, flatten(e))
		}
	case map[string]any:
		for _, k := range sortedKeys(t) {
			var lines []string
			flattenInto(&lines, k, t[k], 1)
			b.add(ingest.BlockRow, 0, strings.Join(lines, "\n"))
		}
	default:
		b.add(ingest.BlockRow, 0, flatten(t))
	}
	return b.doc(), nil
}

// parseNDJSON flattens JSON lines: one row block per line.
func parseNDJSON(ctx context.Context, data []byte, _ string) (ingest.Document, error) {
	text := decodeText(data)
	var b builder
	n := 0
	for len(text) > 0 {
		n++
		line := text
		if i := strings.IndexByte(text, '\n'); i >= 0 {
			line, text = text[:i], text[i+1:]
		} else {
			text = ""
		}
		if strings.TrimSpace(line) == "" {
			continue
		}
		if n%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return ingest.Document{}, err
			}
		}
		dec := json.NewDecoder(strings.NewReader(line))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return ingest.Document{}, corrupt("JSON lines", err, "line %d: %v", n, jsonErr(err))
		}
		b.add(ingest.BlockRow, 0, flatten(v))
	}
	return b.doc(), nil
}

func jsonErr(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("%v at byte %d", se, se.Offset)
	}
	if errors.Is(err, io.EOF) {
		return "empty document"
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return "unexpected end of data (truncated?)"
	}
	return err.Error()
}

func flatten(v any) string {
	var lines []string
	flattenInto(&lines, "", v, 0)
	return strings.Join(lines, "\n")
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// flattenInto appends "path: value" lines for v. Objects add ".key" (keys
// sorted, for determinism), arrays "[i]"; scalars are written as JSON
// writes them, strings without quotes and with white space collapsed.
func flattenInto(lines *[]string, path string, v any, depth int) {
	if depth > maxJSONDepth {
		*lines = append(*lines, path+": …")
		return
	}
	switch t := v.(type) {
	case map[string]any:
		if len(t) == 0 {
			if path != "" {
				*lines = append(*lines, path+": {}")
			}
			return
		}
		for _, k := range sortedKeys(t) {
			p := k
			if path != "" {
				p = path + "." + k
			}
			flattenInto(lines, p, t[k], depth+1)
		}
	case []any:
		if len(t) == 0 {
			if path != "" {
				*lines = append(*lines, path+": []")
			}
			return
		}
		for i, e := range t {
			flattenInto(lines, path+"["+strconv.Itoa(i)+"]", e, depth+1)
		}
	default:
		var s string
		switch x := t.(type) {
		case nil:
			s = "null"
		case string:
			s = collapseSpace(x)
		case bool:
			s = strconv.FormatBool(x)
		case json.Number:
			s = x.String()
		default:
			s = fmt.Sprint(x)
		}
		if path == "" {
			*lines = append(*lines, s)
		} else {
			*lines = append(*lines, path+": "+s)
		}
	}
}
