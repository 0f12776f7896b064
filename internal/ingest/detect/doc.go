// Package detect decides the MIME type of an uploaded file.
//
// ResolveType normalises a type given by the client (parameters stripped,
// lower-cased, aliases such as text/x-markdown or application/x-pdf mapped
// to one canonical name) and keeps it; when the client gave none, or
// application/octet-stream, it sniffs; and text/plain is refined by the file
// name's extension when that names a more specific text format (browsers
// send text/plain for .md, .csv and source files).
//
// Sniff looks at the file name and the first bytes: magic numbers, as
// github.com/gabriel-vasile/mimetype knows them, win over the name for
// binary formats (PDF, zip holding word/document.xml, images, archives,
// executables, …); for text the name decides when it names a text format, and
// content rules decide when it does not (JSON, JSON lines, HTML, Markdown,
// CSV, else text/plain). Binary content of no known type is
// application/octet-stream.
package detect
