// Package wordpiece is a pure-Go BERT uncased WordPiece tokenizer that
// reproduces, id for id, what the Hugging Face tokenizer.json of
// all-MiniLM-L6-v2 (BertNormalizer + BertPreTokenizer + WordPiece +
// [CLS]/[SEP] template) produces.
//
// The pipeline, in the order the reference applies it:
//
//   - added tokens: the literal strings "[CLS]", "[SEP]", "[PAD]", "[UNK]"
//     and "[MASK]" in the raw text become those special tokens;
//   - clean text: NUL, U+FFFD and control characters (Unicode Cc, Cf, Co,
//     unassigned; but not tab, newline, carriage return) are dropped and
//     every other white space becomes a space;
//   - CJK ideographs are split into words of their own;
//   - accents are stripped (NFD, then non-spacing marks removed, using
//     golang.org/x/text/unicode/norm) and the text is lower-cased;
//   - words are split on white space and on punctuation (Unicode P* and all
//     ASCII punctuation, each punctuation character its own word);
//   - each word becomes word pieces by greedy longest match against the
//     vocabulary, continuation pieces prefixed with "##"; a word of more than
//     100 characters, or one that cannot be covered, becomes [UNK].
//
// Encode returns ids with [CLS] and [SEP], an attention mask and, for every
// word piece, the byte offsets of the original text it came from (0,0 for
// the specials). CountTokens counts word pieces without specials and without
// allocating on the hot path; chunkers and usage counters call it often.
//
// A Tokenizer is immutable after Load and safe for concurrent use.
//
// It is hand-written rather than a binding of the Hugging Face tokenizers
// library on purpose: it matches the reference exactly (TestGolden compares
// its ids and offsets with the reference's on testdata/golden.jsonl, made by
// testdata/gen_golden.py), and it needs no cgo, so the no-cgo build (the
// pure-Go embedder internal/embed/gobert, and token counting everywhere)
// tokenizes as the ONNX Runtime build does. It is the model's tokenizer
// only; the words keyword search looks for are split by internal/terms.
package wordpiece
