#!/usr/bin/env bash
# What vidfarm sees of a real NVIDIA GPU, for a machine lent for a few
# minutes: nvidia-smi beside `vidfarm agent --print-capacity`, the NVML tests
# against the real library, then a one-node control plane and an agent on
# loopback (registration, heartbeat telemetry in `admin node list` and both
# /metrics) and, where ffmpeg and ffprobe are installed, one manual video.
# Build on any x86-64 Linux with cgo and carry the two files over:
#   go build -ldflags '-s -w' -o .gpu/vidfarm ./cmd/vidfarm
#   go test -ldflags '-s -w' -c -o .gpu/agent.test ./agent
#   BIN=.gpu/vidfarm AGENT_TEST=.gpu/agent.test OUT=/tmp/gpu scripts/gpu-check.sh
# Everything printed is also kept in $OUT.
cd "$(dirname "$0")/.."
. scripts/lib.sh
OUT=${OUT:-/tmp/vidfarm-gpu-check}; mkdir -p "$OUT"
B=${BIN:-bin/vidfarm}
AGENT_TEST=${AGENT_TEST:-.gpu/agent.test}
exec > >(tee "$OUT/log.txt") 2>&1
echo "== host"; uname -a; nproc; head -3 /proc/meminfo
echo "== nvidia-smi"; nvidia-smi || true
nvidia-smi --query-gpu=name,uuid,pci.bus_id,memory.total,memory.used,memory.free,driver_version,mig.mode.current,temperature.gpu,power.draw,utilization.gpu,compute_cap --format=csv || true
echo "== libnvidia-ml"; ldconfig -p | grep -i nvidia-ml; echo "== tools"; for t in ffmpeg ffprobe espeak-ng; do command -v $t || echo "$t: missing"; done
echo "== vidfarm agent --print-capacity"; $B agent --print-capacity | tee "$OUT/capacity.txt"; echo "rc=$?"
$B agent --print-capacity --json > "$OUT/capacity.json"; echo "json rc=$?"
echo "== NVML tests"; "$AGENT_TEST" -test.run 'TestDiscoverSystem|TestGPUTelemetrySystem' -test.v -test.count=1 2>&1 | tee "$OUT/tests.txt"
echo "== server + agent"
D=$(mktemp -d); adm=http://127.0.0.1:18681; pub=http://127.0.0.1:18680
start_node "$B" "--agent-listen 127.0.0.1:18682 --agent-token agenttok" "$D/cp" admtok # sets $pid
$B agent --server http://127.0.0.1:18682 --token agenttok --work-dir $D/work --metrics-listen 127.0.0.1:9102 --log-level info 2>$D/agent.log &
apid=$!
api() { curl -fsS -H "Authorization: Bearer admtok" -H 'Content-Type: application/json' "$@"; }
# A heartbeat with NVML's readings (every 5 s) stamps telemetry_at; a node of
# virtual GPUs sends none, so the wait gives up after 15 s.
for _ in $(seq 150); do $B admin --server $adm --admin-token admtok node list --json 2>/dev/null | grep -q telemetry_at && break; sleep 0.1; done
read -r acct key < <(api -X POST "$adm/admin/v1/accounts" -d '{"name":"gpu","plan":"max","credits":100000}' |
  python3 -c 'import json,sys; a=json.load(sys.stdin); print(a["account_id"], a["api_key"])')
if command -v ffmpeg >/dev/null && command -v ffprobe >/dev/null; then
  curl -sS -H "Authorization: Bearer $key" -H 'Content-Type: application/json' -X POST $pub/v1/videos \
    -d '{"mode":"manual","prompt":"a lighthouse at dusk"}' > $D/create.json; cat $D/create.json; echo
  vid=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["id"])' $D/create.json)
  echo "video $vid"
  for _ in $(seq 240); do
    st=$(curl -fsS -H "Authorization: Bearer $key" $pub/v1/videos/$vid | python3 -c 'import json,sys; v=json.load(sys.stdin); print(v["status"], v.get("progress",{}).get("percent"))')
    case "$st" in completed*|failed*|cancelled*) break;; esac; sleep 0.5
  done
  echo "final: $st"
  curl -fsS -H "Authorization: Bearer $key" $pub/v1/videos/$vid > "$OUT/video.json"
  $B admin --server $adm --admin-token admtok video inspect $vid | tee "$OUT/inspect.txt"
else echo "no ffmpeg/ffprobe on this machine: no render"; fi
$B admin --server $adm --admin-token admtok node list | tee "$OUT/nodes.txt"
$B admin --server $adm --admin-token admtok node list --json > "$OUT/nodes.json"
curl -fsS 127.0.0.1:9102/metrics | grep -i 'gpu' | tee "$OUT/agent-metrics.txt"
api $adm/metrics | grep -i 'gpu' | head -40 > "$OUT/cp-gpu-metrics.txt"
tail -30 $D/agent.log; tail -10 $D/cp.log
kill "$pid" "$apid" 2>/dev/null; wait "$pid" "$apid" 2>/dev/null
exit 0
