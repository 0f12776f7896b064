#!/usr/bin/env bash
# Installs the official MCP Python SDK (PyPI `mcp`, pinned) into a virtual
# environment at .cache/mcp-venv for the MCP client tests of
# internal/mcpserver, which find it there (or through CAPSULED_MCP_PYTHON).
# Python is used by tests only, never by capsuled itself. Idempotent: with
# the pinned version in place it only prints the interpreter's path.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/.cache/mcp-venv"
version="${MCP_PYTHON_SDK_VERSION:-2.3.0}"
python="${PYTHON:-python3}"

if [[ -x "$venv/bin/python" ]] && "$venv/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('mcp') != '$version')" 2>/dev/null; then
	echo "$venv/bin/python"
	exit 0
fi
echo "mcp-python: installing mcp==$version into $venv (needs Python >= 3.10)" >&2
mkdir -p "$root/.cache"
rm -rf "$venv"
if "$python" -m venv "$venv" >&2; then
	"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "mcp==$version" >&2
else
	# No venv module (Debian without python3-venv): install into a folder
	# and give it an interpreter that finds it.
	echo "mcp-python: no venv; installing with pip --target" >&2
	rm -rf "$venv"
	"$python" -m pip install --quiet --disable-pip-version-check --target "$venv/site" "mcp==$version" >&2
	mkdir -p "$venv/bin"
	interp="$(command -v "$python")"
	printf '#!/bin/sh\nPYTHONPATH="%s${PYTHONPATH:+:$PYTHONPATH}" exec "%s" "$@"\n' "$venv/site" "$interp" >"$venv/bin/python"
	chmod +x "$venv/bin/python"
fi
"$venv/bin/python" -c "import mcp, httpx2" >&2
echo "$venv/bin/python"
