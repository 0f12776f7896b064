#!/usr/bin/env python3
"""Generate reference.jsonl: all-MiniLM-L6-v2's own sentence vectors (test tooling only).

The vectors are computed by a minimal BERT forward pass written in numpy
(float64) straight from the checkpoint's model.safetensors and config.json,
with the Hugging Face `tokenizers` package on the model's tokenizer.json
(truncation to 256 word pieces), followed by mean pooling over the attention
mask and L2 normalisation: what sentence-transformers computes for this
model. No ONNX and no Go code is involved, so the Go runtimes are checked
against an independent implementation.

Optionally (--onnx DIR) the script cross-checks an exported model.onnx with
the `onnxruntime` Python package and prints the lowest cosine between the
two.

    pip install numpy safetensors tokenizers [onnxruntime]
    python3 gen_reference.py MODEL_DIR > reference.jsonl
"""
import argparse
import json
import math
import os
import sys

import numpy as np
from safetensors.numpy import load_file
from tokenizers import Tokenizer

TEXTS = [
    "A man is eating food.",
    "A man is eating a piece of bread.",
    "The girl is carrying a baby.",
    "A man is riding a horse.",
    "A woman is playing violin.",
    "Two men pushed carts through the woods.",
    "A man is riding a white horse on an enclosed ground.",
    "A monkey is playing drums.",
    "Someone in a gorilla costume is playing a set of drums.",
    "The new movie is awesome",
    "The cat sits outside",
    "The new movie is so great",
    "A cheetah is running behind its prey.",
    "",
    "Café crème brûlée, naïve façade — Ångström in Zürich.",
    "我爱自然语言处理。東京は日本の首都です。",
    "Emojis 😀🎉 are fun ❤️",
    "func main() { fmt.Println(\"hello\") }",
    "COVID-19 mRNA vaccines (BNT162b2) induce IgG antibodies in 95% of subjects.",
    "The p53 protein regulates apoptosis; TP53 mutations occur in most tumours.",
    " ".join(["Long input that exceeds the model's window of 256 word pieces."] * 40),
]


def gelu(x):
    from math import sqrt
    erf = np.vectorize(math.erf)
    return 0.5 * x * (1.0 + erf(x / sqrt(2.0)))


def layer_norm(x, g, b, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * g + b


def forward(w, cfg, ids):
    """One sequence (no padding): returns the last hidden state [S, H]."""
    p = "bert." if "bert.embeddings.word_embeddings.weight" in w else ""
    W = lambda n: w[p + n].astype(np.float64)
    S = len(ids)
    x = W("embeddings.word_embeddings.weight")[ids] + W("embeddings.position_embeddings.weight")[:S] \
        + W("embeddings.token_type_embeddings.weight")[np.zeros(S, dtype=np.int64)]
    eps = cfg["layer_norm_eps"]
    x = layer_norm(x, W("embeddings.LayerNorm.weight"), W("embeddings.LayerNorm.bias"), eps)
    nh = cfg["num_attention_heads"]
    hd = cfg["hidden_size"] // nh
    for i in range(cfg["num_hidden_layers"]):
        L = lambda n: W(f"encoder.layer.{i}.{n}")
        lin = lambda t, n: t @ L(n + ".weight").T + L(n + ".bias")
        q = lin(x, "attention.self.query").reshape(S, nh, hd).transpose(1, 0, 2)
        k = lin(x, "attention.self.key").reshape(S, nh, hd).transpose(1, 0, 2)
        v = lin(x, "attention.self.value").reshape(S, nh, hd).transpose(1, 0, 2)
        s = q @ k.transpose(0, 2, 1) / math.sqrt(hd)
        s = np.exp(s - s.max(-1, keepdims=True))
        s = s / s.sum(-1, keepdims=True)
        c = (s @ v).transpose(1, 0, 2).reshape(S, nh * hd)
        x = layer_norm(lin(c, "attention.output.dense") + x,
                       L("attention.output.LayerNorm.weight"), L("attention.output.LayerNorm.bias"), eps)
        h = gelu(lin(x, "intermediate.dense"))
        x = layer_norm(lin(h, "output.dense") + x, L("output.LayerNorm.weight"), L("output.LayerNorm.bias"), eps)
    return x


def embed(w, cfg, tok, text):
    ids = np.array(tok.encode(text).ids, dtype=np.int64)
    h = forward(w, cfg, ids)
    v = h.mean(0)  # every position is attended: mean pooling over the mask
    return v / max(np.linalg.norm(v), 1e-12), len(ids)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model_dir", nargs="?", default=os.environ.get("CAPSULED_MODEL_DIR"))
    ap.add_argument("--onnx", help="directory with an exported model.onnx to cross-check")
    args = ap.parse_args()
    cfg = json.load(open(os.path.join(args.model_dir, "config.json")))
    w = load_file(os.path.join(args.model_dir, "model.safetensors"))
    tok = Tokenizer.from_file(os.path.join(args.model_dir, "tokenizer.json"))
    tok.no_padding()
    tok.enable_truncation(max_length=256)
    vecs = []
    for text in TEXTS:
        v, n = embed(w, cfg, tok, text)
        vecs.append(v)
        print(json.dumps({"text": text, "tokens": n, "vector": [round(float(x), 7) for x in v]}, ensure_ascii=False))
    if args.onnx:
        import onnxruntime as ort
        sess = ort.InferenceSession(os.path.join(args.onnx, "model.onnx"))
        worst = 1.0
        for text, ref in zip(TEXTS, vecs):
            e = tok.encode(text)
            ids = np.array([e.ids], dtype=np.int64)
            out = sess.run(["sentence_embedding"], {"input_ids": ids, "attention_mask": np.ones_like(ids),
                                                     "token_type_ids": np.zeros_like(ids)})[0][0]
            worst = min(worst, float(np.dot(out, ref) / np.linalg.norm(out)))
        print(f"onnx cross-check: lowest cosine {worst:.7f}", file=sys.stderr)


if __name__ == "__main__":
    main()
