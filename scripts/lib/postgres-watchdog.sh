#!/usr/bin/env bash
# Stops a private PostgreSQL cluster (scripts/lib/postgres-cluster.ts) when the program that started it goes away
# without stopping it: Vitest exits on Ctrl-C or SIGTERM without running its global teardown, and a killed test or
# benchmark run runs nothing at all. Started by scripts/lib/postgres-cluster.ts in a session of its own, with its
# standard input a pipe from that program.
#
#   postgres-watchdog.sh <postmaster pid> <cluster folder>
#
# "stopped" on standard input: the run stopped the cluster itself, nothing to do. End of input without it: the run is
# gone. Then the postmaster is stopped (fast shutdown, then immediate, then KILL) if that PID is still this cluster's
# postmaster (its working directory is the cluster's data folder: a PID is never signalled once reused), and the
# folder is removed.
set -u
pid="$1"
dir="$2"
trap '' INT HUP
IFS= read -r line || true
[ "${line:-}" = stopped ] && exit 0
ours() { [ "$(readlink "/proc/$pid/cwd" 2>/dev/null)" = "$dir/data" ]; }
for signal in INT QUIT KILL; do
  ours || break
  kill "-$signal" "$pid" 2>/dev/null
  for _ in $(seq 100); do
    ours || break
    sleep 0.1
  done
done
rm -rf -- "$dir"
