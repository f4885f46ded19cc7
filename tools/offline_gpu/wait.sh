#!/usr/bin/env bash
# Wait at most SECONDS for a detached job, then copy its log and the given files to $OUT (a file
# whose name another given file shares goes as PARENT-NAME: /tmp/eval/report.json -> eval-report.json).
# Prints FINISHED or RUNNING last. Usage: tools/offline_gpu/wait.sh NAME SECONDS [FILE...]
name=$1; seconds=$2; shift 2
r=${OFFLINE_ROOT:-/tmp}  # as setup.sh
end=$(( $(date +%s) + seconds ))
while kill -0 "$(cat "$r/jobs/$name.pid")" 2>/dev/null && [ "$(date +%s)" -lt $end ]; do sleep 5; done
cp "$r/jobs/$name.log" "${OUT:-/tmp}/" 2>/dev/null
for f in "$@"; do
  b=${f##*/}; n=0
  for g in "$@"; do [ "${g##*/}" = "$b" ] && n=$((n + 1)); done
  if [ "$n" -gt 1 ]; then p=${f%/*}; b="${p##*/}-$b"; fi
  cp "$f" "${OUT:-/tmp}/$b" 2>/dev/null
done
tail -15 "$r/jobs/$name.log"
kill -0 "$(cat "$r/jobs/$name.pid")" 2>/dev/null && echo RUNNING || echo FINISHED
