package parse

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"capsuled/internal/ingest"
)

// Limits on what a DOCX may unpack to.
const (
	maxDOCXEntries = 10000
	maxDOCXXML     = 64 << 20 // decompressed bytes of word/document.xml
	maxStylesXML   = 8 << 20
)

var headingStyleRe = regexp.MustCompile(`(?i)^(?:heading|berschrift|titre|título|titolo|kop)\s*([1-9])$`)

// parseDOCX extracts word/document.xml; see the package comment.
func parseDOCX(ctx context.Context, data []byte, _ string) (ingest.Document, error) {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		if bytes.HasPrefix(data, []byte{0xD0, 0xCF, 0x11, 0xE0}) {
			return ingest.Document{}, corrupt("DOCX", err, "the file is an OLE container (a password-protected document or a legacy .doc), not a zip")
		}
		return ingest.Document{}, corrupt("DOCX", err, "not a zip archive: %v", err)
	}
	if len(zr.File) > maxDOCXEntries {
		return ingest.Document{}, corrupt("DOCX", nil, "%d zip entries (more than %d)", len(zr.File), maxDOCXEntries)
	}
	var doc, styles *zip.File
	for _, f := range zr.File {
		switch f.Name {
		case "word/document.xml":
			doc = f
		case "word/styles.xml":
			styles = f
		}
	}
	if doc == nil {
		return ingest.Document{}, corrupt("DOCX", nil, "word/document.xml is missing (a zip archive, but not a Word document)")
	}
	headingOf := map[string]int{}
	if styles != nil {
		if raw, err := readZipFile(styles, maxStylesXML); err == nil {
			headingOf = styleHeadings(raw)
		}
	}
	raw, err := readZipFile(doc, maxDOCXXML)
	if err != nil {
		return ingest.Document{}, err
	}
	return docxBody(ctx, raw, headingOf)
}

func readZipFile(f *zip.File, limit int64) ([]byte, error) {
	if f.UncompressedSize64 > uint64(limit) {
		return nil, corrupt("DOCX", nil, "%s unpacks to %d bytes (limit %d): refusing a possible zip bomb", f.Name, f.UncompressedSize64, limit)
	}
	rc, err := f.Open()
	if err != nil {
		return nil, corrupt("DOCX", err, "%s: %v", f.Name, err)
	}
	defer rc.Close()
	raw, err := io.ReadAll(io.LimitReader(rc, limit+1))
	if err != nil {
		return nil, corrupt("DOCX", err, "%s: %v", f.Name, err)
	}
	if int64(len(raw)) > limit {
		return nil, corrupt("DOCX", nil, "%s unpacks to more than %d bytes: refusing a possible zip bomb", f.Name, limit)
	}
	return raw, nil
}

// styleHeadings maps style ids to heading levels, from the style's name
// ("heading 1", "Title") or its outline level.
func styleHeadings(raw []byte) map[string]int {
	out := map[string]int{}
	d := xml.NewDecoder(bytes.NewReader(raw))
	d.Strict = false
	var id string
	for {
		tok, err := d.Token()
		if err != nil {
			return out
		}
		se, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		switch se.Name.Local {
		case "style":
			id = attr(se, "styleId")
		case "name":
			name := strings.TrimSpace(attr(se, "val"))
			if m := headingStyleRe.FindStringSubmatch(name); m != nil && id != "" {
				out[id] = int(m[1][0] - '0')
			} else if strings.EqualFold(name, "title") && id != "" {
				out[id] = 1
			}
		case "outlineLvl":
			if n, err := strconv.Atoi(attr(se, "val")); err == nil && n >= 0 && n < 9 && id != "" {
				if _, set := out[id]; !set {
					out[id] = n + 1
				}
			}
		}
	}
}

func attr(se xml.StartElement, local string) string {
	for _, a := range se.Attr {
		if a.Name.Local == local {
			return a.Value
		}
	}
	return ""
}

// docxBody walks the body: w:p paragraphs (styles, numbering), w:t text,
// w:tab, w:br/w:cr, and w:tbl tables whose cells' paragraphs are joined.
func docxBody(ctx context.Context, raw []byte, headingOf map[string]int) (ingest.Document, error) {
	d := xml.NewDecoder(bytes.NewReader(raw))
	d.Strict = false
	var (
		b         builder
		para      strings.Builder
		level     int  // heading level of the current paragraph
		listItem  bool // the current paragraph is numbered
		inText    bool
		tblDepth  int
		rows      [][]string
		cell      strings.Builder
		row       []string
		listLines []string
		n         int
		pDepth    int
	)
	flushList := func() {
		if len(listLines) > 0 {
			b.add(ingest.BlockList, 0, strings.Join(listLines, "\n"))
			listLines = nil
		}
	}
	for {
		n++
		if n%8192 == 0 {
			if err := ctx.Err(); err != nil {
				return ingest.Document{}, err
			}
		}
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return ingest.Document{}, corrupt("DOCX", err, "word/document.xml: %v", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			switch t.Name.Local {
			case "p":
				// paragraphs nest inside text boxes; their text joins the outer one
				if pDepth == 0 {
					para.Reset()
					level, listItem = 0, false
				}
				pDepth++
			case "pStyle":
				style := attr(t, "val")
				if l, ok := headingOf[style]; ok {
					level = l
				} else if m := headingStyleRe.FindStringSubmatch(style); m != nil {
					level = int(m[1][0] - '0')
				} else if strings.EqualFold(style, "Title") {
					level = 1
				} else if strings.HasPrefix(strings.ToLower(style), "list") {
					listItem = true
				}
			case "outlineLvl":
				if v, err := strconv.Atoi(attr(t, "val")); err == nil && v >= 0 && v < 9 && level == 0 {
					level = v + 1
				}
			case "numPr":
				listItem = true
			case "t":
				inText = true
			case "tab":
				para.WriteByte('\t')
			case "br", "cr":
				para.WriteByte('\n')
			case "tbl":
				if tblDepth == 0 {
					flushList()
					rows = nil
				}
				tblDepth++
			case "tr":
				if tblDepth == 1 {
					row = nil
				}
			case "tc":
				if tblDepth == 1 {
					cell.Reset()
				}
			}
		case xml.CharData:
			if inText {
				para.Write(t)
			}
		case xml.EndElement:
			switch t.Name.Local {
			case "t":
				inText = false
			case "p":
				if pDepth > 0 {
					pDepth--
				}
				if pDepth > 0 {
					para.WriteByte('\n')
					continue
				}
				text := para.String()
				para.Reset()
				if tblDepth > 0 {
					if s := collapseSpace(text); s != "" {
						if cell.Len() > 0 {
							cell.WriteByte(' ')
						}
						cell.WriteString(s)
					}
					continue
				}
				switch {
				case level > 0:
					flushList()
					b.add(ingest.BlockHeading, min(level, 6), text)
				case listItem:
					if s := collapseSpace(text); s != "" {
						listLines = append(listLines, "- "+s)
					}
				default:
					flushList()
					b.add(ingest.BlockParagraph, 0, text)
				}
			case "tc":
				if tblDepth == 1 {
					row = append(row, cell.String())
				}
			case "tr":
				if tblDepth == 1 && len(row) > 0 {
					rows = append(rows, row)
				}
			case "tbl":
				tblDepth--
				if tblDepth == 0 && len(rows) > 0 {
					if len(rows) == 1 {
						b.add(ingest.BlockTable, 0, strings.Join(rows[0], " | "))
					} else {
						b.add(ingest.BlockTable, 0, renderTable(rows[0], rows[1:]))
					}
					rows = nil
				}
			}
		}
	}
	flushList()
	return b.doc(), nil
}

var _ = fmt.Sprint
