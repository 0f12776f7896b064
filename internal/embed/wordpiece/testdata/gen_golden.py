#!/usr/bin/env python3
"""Generate golden.jsonl for the wordpiece tests (test tooling only).

Uses the Hugging Face `tokenizers` package and the model's own tokenizer.json
(all-MiniLM-L6-v2, BERT uncased WordPiece) as the reference implementation.

    pip install tokenizers
    python3 gen_golden.py /path/to/model/dir > golden.jsonl

Each line: {"text", "max_len", "ids", "offsets", "count"} where ids/offsets are
the encoding with [CLS]/[SEP], truncated to max_len word pieces (no padding);
offsets are converted from character to UTF-8 byte offsets; count is the
number of word pieces without specials and without truncation.
"""
import json
import os
import sys

from tokenizers import Tokenizer

TEXTS = [
    "",
    " ",
    "Hello, world!",
    "The quick brown fox jumps over the lazy dog.",
    "Café crème brûlée à la mode, naïve façade, Ångström, São Paulo, Zürich.",
    "ÉCOLE NORMALE SUPÉRIEURE",
    "Dvořák, Łódź, Kraków, İstanbul, straße, ΑΘΗΝΑ, Ελληνικά, Москва",
    "我爱自然语言处理。東京は日本の首都です。",
    "한국어 텍스트도 있습니다",
    "Mixed 中文 and English, 日本語 text",
    "Emojis 😀🎉👍🏽 are fun 🥰 and ❤️ too",
    "supercalifragilisticexpialidocious antidisestablishmentarianism",
    "a" * 101,
    "b" * 100,
    "x" * 99 + " short",
    "Numbers: 3.14159, 1,000,000, 42nd, 2024-01-15, 10:30pm, $19.99, 50%, 1e-9",
    "Visit https://example.com/path?query=1&b=two#frag or mail me@example.org",
    "func main() { fmt.Println(\"hi\") } // comment\n\tif x != nil && y <= 3 {}",
    "def f(x): return x**2 + [i for i in range(10)] # python",
    "SELECT * FROM users WHERE id = 42;",
    "Tabs\tand\nnewlines\r\nand   multiple   spaces",
    "Control\x00chars\x07here\u200band\ufeffzero\u00adwidth",
    "Replacement \ufffd char",
    "Quotes “smart” ‘single’ «guillemets» — dashes – and… ellipsis",
    "Hyphen-ated words and under_scores and CamelCaseWords",
    "COVID-19 mRNA vaccines (BNT162b2) induce IgG antibodies in 95% of subjects.",
    "The p53 protein regulates apoptosis; TP53 mutations occur in >50% of tumours.",
    "ﬁnance ﬂow (ligatures) and ＦＵＬＬＷＩＤＴＨ ｌｅｔｔｅｒｓ",
    "Math: ∑ x² ≤ ∞, α+β=γ, √2 ≈ 1.414",
    "unaffable unbelievably preprocessing tokenization",
    "Ünïcödé àççéñts èvérywhérè",
    "Hindi: नमस्ते दुनिया; Arabic: مرحبا بالعالم; Hebrew: שלום",
    "Thai: สวัสดีครับ",
    "   leading and trailing spaces   ",
    "!!!???...,,,;;;",
    "e\u0301 combining acute, a\u0308 combining diaeresis",
    "Ohm Ω sign and Kelvin K sign and Å angstrom sign",
    "[CLS] [SEP] [MASK] [PAD] [UNK] literal special tokens",
    "word " * 300,
    "Scientific claim: 0-dimensional biomaterials show inductive properties.",
    "𠀀𠀁 rare CJK extension B and 〇 ideographic zero",
]


def main() -> None:
    model_dir = sys.argv[1] if len(sys.argv) > 1 else os.environ["CAPSULED_MODEL_DIR"]
    tok = Tokenizer.from_file(os.path.join(model_dir, "tokenizer.json"))
    tok.no_padding()
    for max_len in (256, 16):
        texts = TEXTS if max_len == 256 else TEXTS[2:12]
        for text in texts:
            tok.enable_truncation(max_length=max_len)
            enc = tok.encode(text)
            tok.no_truncation()
            full = tok.encode(text, add_special_tokens=False)
            # character offsets -> UTF-8 byte offsets
            starts = [0]
            for ch in text:
                starts.append(starts[-1] + len(ch.encode("utf-8")))
            offsets = [[starts[a], starts[b]] for a, b in enc.offsets]
            print(json.dumps({
                "text": text,
                "max_len": max_len,
                "ids": enc.ids,
                "offsets": offsets,
                "count": len(full.ids),
            }, ensure_ascii=False))


if __name__ == "__main__":
    main()
