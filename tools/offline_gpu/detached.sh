#!/usr/bin/env bash
# Start a long job in a process session of its own, so that it outlives the command that
# started it (a GPU machine lent for commands of a few minutes each); wait.sh waits for it.
# Usage: tools/offline_gpu/detached.sh NAME COMMAND...   (log: $OFFLINE_ROOT/jobs/NAME.log)
set -euo pipefail
name=$1; shift
r=${OFFLINE_ROOT:-/tmp}  # as setup.sh
mkdir -p "$r/jobs"
setsid nohup "$@" > "$r/jobs/$name.log" 2>&1 < /dev/null &
echo $! > "$r/jobs/$name.pid"
echo "started $name (pid $!): $*"
