#!/usr/bin/env bash
# The simulator's CPU anchor (issue 18): vidfarm's 1,000-GPU week against a
# SimPy model of the same farm (bench/simpy/farm_week.py), run alternately
# (vidfarm, SimPy, vidfarm, SimPy, ...; ROUNDS rounds, 2 by default) so both
# see the same machine load. Prints each run's wall and CPU (user + sys of the
# process, from /usr/bin/time), the CPU ratio SimPy/vidfarm per round and its
# median with the load average, and both models' figures side by side; fails
# when their completed-video counts differ by more than 5% (they would not be
# modelling the same farm). Installs Debian's python3-simpy (and time) when
# missing. Called by scripts/bench.sh (make bench); runs on its own too.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${ROUNDS:-2}
hours=${SIM_HOURS:-168}
fleet=bench/testdata/fleet-1000gpu.json
workload=bench/testdata/workload-10k.json

# A Python that has SimPy: SimPy 3/4 (import simpy) where installed, else
# Debian's python3-simpy, which is SimPy 2 (import SimPy) for /usr/bin/python3.
find_py() {
  for py in python3 /usr/bin/python3; do
    command -v "$py" >/dev/null 2>&1 || continue
    if "$py" -c 'import simpy' 2>/dev/null || "$py" -c 'import SimPy.Simulation' 2>/dev/null; then
      echo "$py"
      return
    fi
  done
}
need=()
py=$(find_py)
[ -n "$py" ] || need+=(python3-simpy)
[ -x /usr/bin/time ] || need+=(time)
if [ ${#need[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "bench-simpy: installing ${need[*]} with apt-get"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  py=$(find_py)
  [ -n "$py" ] || { echo "bench-simpy: no Python with SimPy after installing python3-simpy" >&2; exit 1; }
fi

go build -o bin/vidfarm ./cmd/vidfarm
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# field FILE EXPR: a figure of a JSON file (d is the parsed object).
field() { "$py" -c 'import json, sys; d = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"; }

ratios=()
echo "round  vidfarm wall/CPU s   SimPy wall/CPU s   CPU ratio SimPy/vidfarm"
for r in $(seq "$rounds"); do
  /usr/bin/time -f '%e %U %S' -o "$dir/go.time" ./bin/vidfarm bench sim --fleet "$fleet" --workload "$workload" \
    --hours "$hours" --replications 1 --format json >"$dir/go.json" 2>"$dir/go.err" ||
    { cat "$dir/go.err" >&2; exit 1; }
  /usr/bin/time -f '%e %U %S' -o "$dir/py.time" "$py" bench/simpy/farm_week.py --fleet "$fleet" \
    --workload "$workload" --hours "$hours" >"$dir/py.json"
  read -r gw gu gs <"$dir/go.time"
  read -r pw pu ps <"$dir/py.time"
  line=$(awk -v r="$r" -v gw="$gw" -v gu="$gu" -v gs="$gs" -v pw="$pw" -v pu="$pu" -v ps="$ps" 'BEGIN {
    gc = gu + gs; pc = pu + ps
    printf "%5d  %8.2f / %-8.2f  %8.1f / %-8.1f  %.1fx\n", r, gw, gc, pw, pc, (gc > 0 ? pc / gc : 0) }')
  echo "$line"
  ratios+=("${line##* }")
done
median=$(printf '%s\n' "${ratios[@]%x}" | sort -g | awk '{a[NR] = $1} END {print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2)}')
echo "median CPU ratio SimPy/vidfarm: ${median}x over $rounds rounds ($(field "$dir/py.json" 'd["simpy"]'), Python $(field "$dir/py.json" 'd["python"]')); load average $(cut -d' ' -f1-3 /proc/loadavg)"

echo
echo "the same farm, last round (${hours} h, seed 1; the random streams differ, so the counts agree statistically):"
printf '%-28s %14s %14s\n' "" vidfarm SimPy
row() { printf '%-28s %14s %14s\n' "$1" "$(field "$dir/go.json" "$2")" "$(field "$dir/py.json" "$3")"; }
row "videos submitted" 'd["submitted"]' 'd["submitted"]'
row "videos completed" 'd["completed"]' 'd["completed"]'
row "GPU tasks started" 'd["overall"]["gpu_wait"]["count"]' 'd["gpu_tasks"]'
row "mean GPU wait (s)" '"%.4f" % d["overall"]["gpu_wait"]["mean"]' '"%.4f" % d["gpu_wait_mean"]'
row "p95 GPU wait (s)" '"%.2f" % d["overall"]["gpu_wait"]["p95"]' '"%.2f" % d["gpu_wait_p95"]'
row "mean turnaround (s)" '"%.1f" % d["overall"]["turnaround"]["mean"]' '"%.1f" % d["turnaround_mean"]'
row "GPU utilisation" '"%.3f" % d["gpu_utilisation"]' '"%.3f" % d["gpu_utilisation"]'

gc=$(field "$dir/go.json" 'd["completed"]')
pc=$(field "$dir/py.json" 'd["completed"]')
if ! awk -v a="$gc" -v b="$pc" 'BEGIN {d = a - b; if (d < 0) d = -d; exit !(a > 0 && d / a <= 0.05)}'; then
  echo "bench-simpy: FAIL: vidfarm completed $gc videos and the SimPy model $pc: more than 5% apart, so they do not model the same farm" >&2
  exit 1
fi
