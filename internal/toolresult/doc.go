// Package toolresult reads the results of search tools, whatever reasonable
// shape a client's backend gives them, into a list of hits.
//
// A tool message may hold a JSON array of hit objects, a JSON object with such
// an array under a key like "results", "hits" or "documents", a single hit
// object, or plain text that names ids ("[doc-1] …", "id: doc-1 …"). A hit's
// id is read from the first present field of "doc_id", "document_id",
// "item_id", "_id", "id", "docid", "corpus_id", "pid", "uuid" or "key"
// (strings or numbers); its text from "content", "text", "snippet", "chunk",
// "body", "passage", "page_content", "document", "excerpt", "summary" or
// "highlight"; its title from "title", "name", "file_name" or "heading"; and
// its score from "score", "_score", "relevance", "similarity" or "rank_score".
//
// Parse never fails: an empty or malformed result is no hits.
package toolresult
