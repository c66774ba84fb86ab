# Helpers the benchmark scripts share; a script sources it from the
# repository root, after cd-ing there: . scripts/lib.sh

# await waits until a URL answers 200, for up to 20 s, and stops the script
# if it never does.
await() {
  for _ in $(seq 200); do
    curl -fsS "$1" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "$(basename "$0"): $1 did not answer" >&2
  exit 1
}

# ticks prints the CPU ticks (user + system, fields 14 and 15 of
# /proc/PID/stat) the given processes have used, summed; a run's difference
# over its operations is the servers' CPU per operation (divide by
# getconf CLK_TCK).
ticks() { for p in "$@"; do awk '{print $14 + $15}' "/proc/$p/stat"; done | awk '{t += $1} END {print t}'; }

# median prints the median of its arguments (ratios) and how many there were.
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {printf "%.2f× over %d rounds", a[int((NR+1)/2)], NR}'; }
