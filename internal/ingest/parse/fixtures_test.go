package parse

import (
	"archive/zip"
	"bytes"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the generated fixtures in testdata/")

// pdfEscape escapes a string for a PDF literal string.
func pdfEscape(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `(`, `\(`, `)`, `\)`)
	return r.Replace(s)
}

// buildPDF writes a minimal, valid PDF 1.4 with one page per element of
// pages; each line of a page is drawn with Helvetica 12pt, 14pt apart, and
// an empty line leaves a paragraph gap.
func buildPDF(pages [][]string) []byte { return buildPDFInfo(pages, "") }

// buildPDFInfo is buildPDF with a document information dictionary (info is
// its body, such as "/Title (x)"; none when empty).
func buildPDFInfo(pages [][]string, info string) []byte {
	var buf bytes.Buffer
	var offsets []int
	obj := func(body string) {
		offsets = append(offsets, buf.Len())
		fmt.Fprintf(&buf, "%d 0 obj\n%s\nendobj\n", len(offsets), body)
	}
	buf.WriteString("%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
	n := len(pages)
	// 1: catalog, 2: pages, 3: font, then (page, content) pairs
	obj("<< /Type /Catalog /Pages 2 0 R >>")
	kids := make([]string, n)
	for i := range pages {
		kids[i] = fmt.Sprintf("%d 0 R", 4+2*i)
	}
	obj(fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", strings.Join(kids, " "), n))
	obj("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
	for i, lines := range pages {
		obj(fmt.Sprintf("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>", 5+2*i))
		var cs strings.Builder
		y := 740
		for _, l := range lines {
			if l == "" {
				y -= 28
				continue
			}
			fmt.Fprintf(&cs, "BT /F1 12 Tf 1 0 0 1 72 %d Tm (%s) Tj ET\n", y, pdfEscape(l))
			y -= 14
		}
		obj(fmt.Sprintf("<< /Length %d >>\nstream\n%sendstream", cs.Len(), cs.String()))
	}
	infoRef := ""
	if info != "" {
		obj("<< " + info + " >>")
		infoRef = fmt.Sprintf(" /Info %d 0 R", len(offsets))
	}
	xref := buf.Len()
	fmt.Fprintf(&buf, "xref\n0 %d\n0000000000 65535 f \n", len(offsets)+1)
	for _, o := range offsets {
		fmt.Fprintf(&buf, "%010d 00000 n \n", o)
	}
	fmt.Fprintf(&buf, "trailer\n<< /Size %d /Root 1 0 R%s >>\nstartxref\n%d\n%%%%EOF\n", len(offsets)+1, infoRef, xref)
	return buf.Bytes()
}

// encryptedPDF is a PDF whose trailer carries a Standard /Encrypt dictionary
// that the empty password does not open.
func encryptedPDF() []byte {
	var pdf bytes.Buffer
	pdf.WriteString("%PDF-1.4\n")
	xref := pdf.Len()
	pdf.WriteString("xref\n0 1\n0000000000 65535 f \n")
	fmt.Fprintf(&pdf, "trailer\n<< /Size 1 /ID [(%s)] /Encrypt << /Filter /Standard /V 1 /R 2 /Length 40 /O (%s) /U (%s) /P 0 >> >>\n",
		strings.Repeat("I", 16), strings.Repeat("O", 32), strings.Repeat("U", 32))
	fmt.Fprintf(&pdf, "startxref\n%d\n%%%%EOF\n", xref)
	return pdf.Bytes()
}

func zipOf(files map[string]string, order []string) []byte {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, name := range order {
		w, err := zw.Create(name)
		if err != nil {
			panic(err)
		}
		if _, err := w.Write([]byte(files[name])); err != nil {
			panic(err)
		}
	}
	if err := zw.Close(); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

const docxNS = `xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"`

func docxPara(style, text string) string {
	ppr := ""
	if style != "" {
		ppr = `<w:pPr><w:pStyle w:val="` + style + `"/></w:pPr>`
	}
	return `<w:p>` + ppr + `<w:r><w:t xml:space="preserve">` + text + `</w:t></w:r></w:p>`
}

// buildDOCX writes a small Word document: headings by style id (one of them
// by a localised id resolved through styles.xml), paragraphs with a tab and a
// line break, a numbered list and a table.
func buildDOCX() []byte {
	body := docxPara("Title", "Capsuled Manual") +
		docxPara("Heading1", "Install") +
		`<w:p><w:r><w:t>Download the binary.</w:t></w:r><w:r><w:tab/><w:t>Then run it.</w:t><w:br/><w:t>Second line.</w:t></w:r></w:p>` +
		docxPara("berschrift2", "Linux") +
		`<w:p><w:pPr><w:numPr><w:ilvl w:val="0"/><w:numId w:val="1"/></w:numPr></w:pPr><w:r><w:t>Unpack the archive</w:t></w:r></w:p>` +
		`<w:p><w:pPr><w:numPr><w:ilvl w:val="0"/><w:numId w:val="1"/></w:numPr></w:pPr><w:r><w:t>Run capsuled serve</w:t></w:r></w:p>` +
		`<w:tbl><w:tr><w:tc><w:p><w:r><w:t>Flag</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>Meaning</w:t></w:r></w:p></w:tc></w:tr>` +
		`<w:tr><w:tc><w:p><w:r><w:t>--data</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>data directory</w:t></w:r></w:p></w:tc></w:tr></w:tbl>` +
		docxPara("", "Deleted text is not here.<!-- -->") +
		`<w:p><w:r><w:delText>gone</w:delText></w:r></w:p>`
	doc := `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document ` + docxNS + `><w:body>` + body + `<w:sectPr/></w:body></w:document>`
	styles := `<?xml version="1.0" encoding="UTF-8"?><w:styles ` + docxNS + `><w:style w:type="paragraph" w:styleId="berschrift2"><w:name w:val="heading 2"/></w:style></w:styles>`
	ct := `<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>`
	files := map[string]string{"[Content_Types].xml": ct, "word/document.xml": doc, "word/styles.xml": styles}
	return zipOf(files, []string{"[Content_Types].xml", "word/document.xml", "word/styles.xml"})
}

// zipBombDOCX declares a document.xml larger than the limit.
func zipBombDOCX() []byte {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, _ := zw.Create("word/document.xml")
	w.Write([]byte("<w:document " + docxNS + "><w:body>"))
	chunk := bytes.Repeat([]byte("<w:p/>"), 1<<16)
	for written := 0; written <= maxDOCXXML; written += len(chunk) {
		w.Write(chunk)
	}
	zw.Close()
	return buf.Bytes()
}

func tinyPNG() []byte {
	img := image.NewRGBA(image.Rect(0, 0, 4, 4))
	img.Set(1, 1, color.RGBA{255, 0, 0, 255})
	var buf bytes.Buffer
	png.Encode(&buf, img)
	return buf.Bytes()
}

// generated are the fixtures made by code; TestGeneratedFixtures keeps
// testdata/ in step with it (go test -run TestGeneratedFixtures -update).
func generated() map[string][]byte {
	samplePDF := buildPDF([][]string{
		{"Capsuled Guide", "", "Capsules hold items. Each item is chunked.", "Chunks are embedded (in process)."},
		{"Page two talks about search.", "Hybrid search fuses BM25 and vectors."},
	})
	rng := rand.New(rand.NewPCG(1, 2))
	random := make([]byte, 2048)
	for i := range random {
		random[i] = byte(rng.UintN(256))
	}
	return map[string][]byte{
		"sample.pdf":       samplePDF,
		"truncated.pdf":    samplePDF[:len(samplePDF)/2],
		"encrypted.pdf":    encryptedPDF(),
		"sample.docx":      buildDOCX(),
		"notdocx.zip":      zipOf(map[string]string{"readme.txt": "just a zip"}, []string{"readme.txt"}),
		"image.png":        tinyPNG(),
		"random.bin":       random,
		"invalid-utf8.txt": []byte("caf\xc3\xa9 ok\nbad \xff\xfe byte\x00 and NUL\r\nwindows line\n"),
		"latin1.txt":       []byte("Caf\xe9 cr\xe8me br\xfbl\xe9e\n"),
	}
}

func TestGeneratedFixtures(t *testing.T) {
	for name, want := range generated() {
		p := filepath.Join("testdata", name)
		if *update {
			if err := os.WriteFile(p, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(p)
		if err != nil {
			t.Fatalf("%s: %v (run go test -run TestGeneratedFixtures -update)", name, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale: run go test -run TestGeneratedFixtures -update", name)
		}
	}
}

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
