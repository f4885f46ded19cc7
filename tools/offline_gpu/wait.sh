#!/usr/bin/env bash
# Wait at most SECONDS for a detached job, then copy its log and the given files to $OUT.
# Prints FINISHED or RUNNING last. Usage: tools/offline_gpu/wait.sh NAME SECONDS [FILE...]
name=$1; seconds=$2; shift 2
r=${OFFLINE_ROOT:-/tmp}  # as setup.sh
end=$(( $(date +%s) + seconds ))
while kill -0 "$(cat "$r/jobs/$name.pid")" 2>/dev/null && [ "$(date +%s)" -lt $end ]; do sleep 5; done
cp "$r/jobs/$name.log" "$@" "${OUT:-/tmp}/" 2>/dev/null
tail -15 "$r/jobs/$name.log"
kill -0 "$(cat "$r/jobs/$name.pid")" 2>/dev/null && echo RUNNING || echo FINISHED
