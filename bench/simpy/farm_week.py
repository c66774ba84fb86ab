#!/usr/bin/env python3
"""The 1,000-GPU week of `make bench` as a SimPy model: the CPU anchor for
`vidfarm bench sim` (issue 18: the Go simulator should use at least 10x less
CPU than a SimPy model of the same farm). scripts/bench-simpy.sh runs both.

The farm and workload are read from the same files as vidfarm's week
(bench/testdata/fleet-1000gpu.json, workload-10k.json):

  * 125 nodes x 8 H100 = 1,000 GPUs, 16 CPU slots a node = 2,000 CPU slots;
  * Poisson arrivals at 10,000 videos/h, diurnal: the rate is
    rate * (1 + 0.2 cos(2 pi (h - 15) / 24)), drawn by thinning (Lewis-Shedler)
    from a Poisson process at the peak rate, as bench/sim_source.go does;
  * 60% manual: render (1 GPU, GPU-seconds-per-output-second of the model at
    the resolution times the duration) then finalize (1 CPU slot,
    2 s + 0.2 s per output second);
  * 40% auto: plan (1 CPU slot, 3 s), then tts (1 CPU slot, 1 s + 0.1 s/s)
    and ceil(d/6) scenes (1 GPU each, 6 s of ltx-video-13b 720p = 54 s) in
    parallel, then composite (2 CPU slots, 5 s + 0.5 s/s);
  * accounts: enterprise 50% of the videos at priority 1, pro 35% and
    free 15% at priority 0;
  * deterministic service times (the workload has no exponential_service);
  * 168 simulated hours, seed 1, no warm-up: every video counts.

What it reports, as vidfarm does: videos submitted and completed, the GPU
wait (a GPU task's ready time to its start: submission for a render, the end
of the plan for a scene) as mean and p95 over every GPU task started, the
mean turnaround of completed videos, GPU utilisation (busy GPU-seconds within
the horizon over 1,000 GPUs x 168 h), and the wall and CPU seconds
(time.process_time) of the whole run, reading the files included.

Simplifications, none of which changes what the farm does at this load
(71% GPU utilisation on average, 85% at the diurnal peak; CPU slots 3% busy):

  * GPUs are one pool of 1,000 and CPU slots one pool of 2,000: every model
    in the mix needs one GPU and fits an 80 GB GPU, so any free GPU can take
    any GPU task, as the scheduler's placement finds; the composite's two
    CPU slots are two units of the pool rather than two slots of one node.
  * Queue order is priority, then FIFO (SimPy's PriorityQ). The scheduler
    orders a priority level by per-account fair share (fewest running tasks,
    then round robin) before age. The mean wait of all tasks does not depend
    on the order much (work-conserving, no service-time information used);
    the per-account split and the tail do, and at this load almost nothing
    waits anyway.
  * The random streams differ from the Go simulator's (Python's Mersenne
    Twister, not PCG), so counts agree statistically, not exactly.
  * The catalog's GPU-seconds-per-output-second and GPU counts of the five
    models in the workload are copied below from models/catalog_data.go;
    a workload naming another model is refused.

SimPy version: Debian bookworm's python3-simpy is SimPy 2.3.1 (the classic
process-interaction API: `yield hold/request/release`, module SimPy), and the
project's machines reach Debian's packages but not PyPI, so this is a SimPy 2
model; SimPy 3/4 (`import simpy`) is used instead when it is installed.
Both APIs have the same pure-Python event loop design (a heap of event
notices and generator processes).

Usage: farm_week.py [--fleet F] [--workload W] [--hours 168] [--seed 1]
Prints one JSON object on stdout.
"""

import argparse
import json
import math
import os
import random
import sys
import time

CPU0 = time.process_time()
WALL0 = time.perf_counter()

# models/catalog_data.go: GPUs a render needs and GPU-seconds per output
# second by resolution (on the reference H100).
CATALOG = {
    "seedance-1.0-lite": (1, {"480p": 12, "720p": 28, "1080p": 64}),
    "wan-2.1-14b": (1, {"480p": 36, "720p": 96}),
    "pixverse-v5": (1, {"540p": 22, "720p": 36, "1080p": 84}),
    "kling-2.5-turbo-pro": (1, {"720p": 30, "1080p": 60}),
    "ltx-video-13b": (1, {"480p": 4, "720p": 9}),
}

# bench/sim.go: CPU task service times.
PLAN = 3.0
TTS_BASE, TTS_PER = 1.0, 0.1
FINALIZE_BASE, FINALIZE_PER = 2.0, 0.2
COMPOSITE_BASE, COMPOSITE_PER = 5.0, 0.5


def load(path):
    with open(path) as f:
        return json.load(f)


def parse_args():
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testdata")
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--fleet", default=os.path.join(root, "fleet-1000gpu.json"))
    p.add_argument("--workload", default=os.path.join(root, "workload-10k.json"))
    p.add_argument("--hours", type=float, default=168)
    p.add_argument("--seed", type=int, default=1)
    return p.parse_args()


class Farm:
    """The inputs, turned into what the model draws from."""

    def __init__(self, fleet, wl, hours):
        speeds = dict(fleet.get("gpu_speed", {}))
        speeds.setdefault("H100", 1.0)
        groups = fleet["groups"]
        if len({speeds[g["gpu_model"]] for g in groups}) != 1:
            sys.exit("farm_week.py: one GPU speed only (the GPUs are one pool)")
        self.speed = speeds[groups[0]["gpu_model"]]
        self.gpus = sum(g["count"] * g["gpus_per_node"] for g in groups)
        self.cpu_slots = sum(g["count"] * g["cpu_slots"] for g in groups)
        self.nodes = sum(g["count"] for g in groups)
        a = wl["arrival"]
        self.rate = a["rate_per_hour"] / 3600.0  # per second
        self.amp = a.get("amplitude", 0.0) if a["process"] == "diurnal" else 0.0
        self.peak_hour = a.get("peak_hour", 0.0)
        if a.get("bursts"):
            sys.exit("farm_week.py: bursts are not modelled")
        self.max_rate = self.rate * (1 + self.amp)
        self.horizon = hours * 3600.0
        self.manual_share = wl["manual_share"]
        # Manual mix: (cumulative weight, [(duration, GPU seconds), ...]).
        self.manual = []
        total = 0.0
        for m in wl.get("manual", []):
            gpus, gsps = CATALOG[m["model"]]
            if gpus != 1:
                sys.exit("farm_week.py: one-GPU models only")
            total += m["weight"]
            self.manual.append((total, [(d, gsps[m["resolution"]] * d / self.speed) for d in m["durations"]]))
        self.manual_total = total
        auto = wl.get("auto")
        if auto:
            gpus, gsps = CATALOG[auto["scene_model"]]
            scene_sec = auto.get("scene_seconds") or 6
            self.scene_gpu = gsps[auto["scene_resolution"]] * scene_sec / self.speed
            self.auto = [(d, (d + scene_sec - 1) // scene_sec) for d in auto["durations"]]
        self.classes = []
        total = 0.0
        for c in wl["accounts"]:
            total += c["share"]
            self.classes.append((total, c.get("priority", 0)))
        self.class_total = total
        if wl.get("exponential_service"):
            sys.exit("farm_week.py: exponential service is not modelled")

    def rate_at(self, t):
        if not self.amp:
            return self.rate
        h = (t / 3600.0) % 24
        return self.rate * (1 + self.amp * math.cos(2 * math.pi * (h - self.peak_hour) / 24))


class Stats:
    def __init__(self):
        self.submitted = 0
        self.completed = 0
        self.gpu_tasks = 0
        self.gpu_wait_sum = 0.0
        self.gpu_waits = []  # the non-zero ones; the rest waited 0
        self.turnaround_sum = 0.0
        self.gpu_busy = 0.0

    def gpu_start(self, wait, now, service, horizon):
        self.gpu_tasks += 1
        if wait > 0:
            self.gpu_wait_sum += wait
            self.gpu_waits.append(wait)
        self.gpu_busy += min(now + service, horizon) - now

    def p95(self):
        n = self.gpu_tasks
        if n == 0:
            return 0.0
        k = int(math.ceil(0.95 * n)) - 1  # nearest rank
        zeros = n - len(self.gpu_waits)
        if k < zeros:
            return 0.0
        self.gpu_waits.sort()
        return self.gpu_waits[k - zeros]


def pick(rng, table, total):
    u = rng.random() * total
    for cum, item in table:
        if u < cum:
            return item
    return table[-1][1]


def run_simpy2(farm, seed):
    from SimPy.Simulation import Simulation, Process, Resource, PriorityQ, hold, request, release, passivate

    sim = Simulation()
    gpu = Resource(capacity=farm.gpus, qType=PriorityQ, sim=sim)
    cpu = Resource(capacity=farm.cpu_slots, qType=PriorityQ, sim=sim)
    st = Stats()
    rng = random.Random(seed)
    horizon = farm.horizon

    class Manual(Process):
        def run(self, prio, render, d):
            t0 = sim._t
            yield request, self, gpu, prio
            now = sim._t
            st.gpu_start(now - t0, now, render, horizon)
            yield hold, self, render
            yield release, self, gpu
            yield request, self, cpu, prio
            yield hold, self, FINALIZE_BASE + FINALIZE_PER * d
            yield release, self, cpu
            st.completed += 1
            st.turnaround_sum += sim._t - t0

    class Scene(Process):
        def run(self, video, prio):
            t0 = sim._t
            yield request, self, gpu, prio
            now = sim._t
            st.gpu_start(now - t0, now, farm.scene_gpu, horizon)
            yield hold, self, farm.scene_gpu
            yield release, self, gpu
            video.left -= 1
            if video.left == 0 and video.waiting:
                sim.reactivate(video)

    class Auto(Process):
        def run(self, prio, d, scenes):
            t0 = sim._t
            yield request, self, cpu, prio
            yield hold, self, PLAN
            yield release, self, cpu
            self.left = scenes
            self.waiting = False
            for _ in range(scenes):
                s = Scene(sim=sim)
                sim.activate(s, s.run(self, prio))
            yield request, self, cpu, prio
            yield hold, self, TTS_BASE + TTS_PER * d
            yield release, self, cpu
            if self.left:
                self.waiting = True
                yield passivate, self
            yield request, self, cpu, prio
            yield request, self, cpu, prio
            yield hold, self, COMPOSITE_BASE + COMPOSITE_PER * d
            yield release, self, cpu
            yield release, self, cpu
            st.completed += 1
            st.turnaround_sum += sim._t - t0

    class Source(Process):
        def run(self):
            t = 0.0
            while True:
                t += rng.expovariate(farm.max_rate)
                if t > horizon:
                    return
                if rng.random() * farm.max_rate >= farm.rate_at(t):
                    continue
                yield hold, self, t - sim._t
                prio = pick(rng, farm.classes, farm.class_total)
                st.submitted += 1
                if rng.random() < farm.manual_share:
                    d, render = rng.choice(pick(rng, farm.manual, farm.manual_total))
                    v = Manual(sim=sim)
                    sim.activate(v, v.run(prio, render, d))
                else:
                    d, scenes = rng.choice(farm.auto)
                    v = Auto(sim=sim)
                    sim.activate(v, v.run(prio, d, scenes))

    src = Source(sim=sim)
    sim.activate(src, src.run())
    sim.simulate(until=horizon)
    return st, "SimPy 2.3"


def run_simpy3(simpy, farm, seed):
    env = simpy.Environment()
    gpu = simpy.PriorityResource(env, capacity=farm.gpus)
    cpu = simpy.PriorityResource(env, capacity=farm.cpu_slots)
    st = Stats()
    rng = random.Random(seed)
    horizon = farm.horizon

    def task(res, prio, seconds):
        with res.request(priority=-prio) as req:
            yield req
            yield env.timeout(seconds)

    def manual(prio, render, d):
        t0 = env.now
        with gpu.request(priority=-prio) as req:
            yield req
            st.gpu_start(env.now - t0, env.now, render, horizon)
            yield env.timeout(render)
        yield env.process(task(cpu, prio, FINALIZE_BASE + FINALIZE_PER * d))
        st.completed += 1
        st.turnaround_sum += env.now - t0

    def scene(prio):
        t0 = env.now
        with gpu.request(priority=-prio) as req:
            yield req
            st.gpu_start(env.now - t0, env.now, farm.scene_gpu, horizon)
            yield env.timeout(farm.scene_gpu)

    def auto(prio, d, scenes):
        t0 = env.now
        yield env.process(task(cpu, prio, PLAN))
        parts = [env.process(scene(prio)) for _ in range(scenes)]
        parts.append(env.process(task(cpu, prio, TTS_BASE + TTS_PER * d)))
        yield env.all_of(parts)
        with cpu.request(priority=-prio) as a, cpu.request(priority=-prio) as b:
            yield a & b
            yield env.timeout(COMPOSITE_BASE + COMPOSITE_PER * d)
        st.completed += 1
        st.turnaround_sum += env.now - t0

    def source():
        t = 0.0
        while True:
            t += rng.expovariate(farm.max_rate)
            if t > horizon:
                return
            if rng.random() * farm.max_rate >= farm.rate_at(t):
                continue
            yield env.timeout(t - env.now)
            prio = pick(rng, farm.classes, farm.class_total)
            st.submitted += 1
            if rng.random() < farm.manual_share:
                d, render = rng.choice(pick(rng, farm.manual, farm.manual_total))
                env.process(manual(prio, render, d))
            else:
                d, scenes = rng.choice(farm.auto)
                env.process(auto(prio, d, scenes))

    env.process(source())
    env.run(until=horizon)
    return st, "SimPy " + getattr(simpy, "__version__", "3+")


def main():
    args = parse_args()
    farm = Farm(load(args.fleet), load(args.workload), args.hours)
    try:
        import simpy
    except ImportError:
        simpy = None
    if simpy is not None and not os.environ.get("FARM_WEEK_SIMPY2"):
        st, version = run_simpy3(simpy, farm, args.seed)
    else:
        st, version = run_simpy2(farm, args.seed)
    n = st.gpu_tasks
    out = {
        "model": "bench/simpy/farm_week.py",
        "simpy": version,
        "python": sys.version.split()[0],
        "hours": args.hours,
        "seed": args.seed,
        "gpus": farm.gpus,
        "cpu_slots": farm.cpu_slots,
        "submitted": st.submitted,
        "completed": st.completed,
        "in_flight": st.submitted - st.completed,
        "gpu_tasks": n,
        "gpu_wait_mean": st.gpu_wait_sum / n if n else 0.0,
        "gpu_wait_p95": st.p95(),
        "turnaround_mean": st.turnaround_sum / st.completed if st.completed else 0.0,
        "gpu_utilisation": st.gpu_busy / (farm.gpus * farm.horizon),
    }
    out["wall_seconds"] = time.perf_counter() - WALL0
    out["cpu_seconds"] = time.process_time() - CPU0
    json.dump(out, sys.stdout, indent=2)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
