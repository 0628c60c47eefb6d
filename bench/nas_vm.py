#!/usr/bin/env python3
"""The agent's cost on the emulated NAS: a pegged loop on one ARMv7 core, side by side with sadc,
node_exporter and the C floor (scripts/bench --only nas-vm runs this).

    nas_vm.py --bins DIR --out results.json [--phase-seconds 60] [--markdown BENCHMARKS.md]
              [--command "scripts/bench --only nas-vm"]

The guest (scripts/nas-vm start --icount) counts its time in instructions: one instruction is
2 ns of guest time (a 500-MIPS core), so a loop's rate between two marks is exact and does not
depend on the host's load. In the guest, bench/spin (nice 0) runs throughout and about a hundred
processes exist (a NAS's usual count: kernel threads plus sleepers started here). A driver in
the guest (a busybox sh script) runs the phases one after another, each phase of equal guest
time: the tool is started, given time to settle, then spin is marked at the start and the end of
the window. Every tool phase sits between two phases of the loop alone, and its share of the
core is

    share = 1 - (loop rate with the tool) / (mean loop rate of the two alone phases around it)

Per sample: share x window / samples in the window (the agent and sadc sample at 1 Hz of guest
time; node_exporter's scrapes come from this host and are counted between the window's marks).
The collector (`nasprobe record`) records the agent from this host through the forwarded port
while the agent's phases run: what the NAS pays for a collector is part of the agent's figure.

DIR holds: nasprobe-agent (armv7 static), spin and floor (armhf static, from bench/*.c), and the
host's nasprobe. The results JSON keeps every phase's marks; --markdown writes the section
between <!-- bench:nas-vm --> and <!-- /bench:nas-vm --> of BENCHMARKS.md (added at the end
when missing).
"""

import argparse
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import threading
import time
import urllib.request

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAS_VM = os.path.join(REPO, "scripts", "nas-vm")
AGENT = "/opt/nasprobe/nasprobe-agent"
AGENT_BASE = f"{AGENT} --listen 0.0.0.0:7451 --token-file /opt/nasprobe/token --interval 1000"

# name -> (guest command started by the driver, what this host does during it, samples/s)
# "collector": nasprobe record against the agent; "scrape": node_exporter scraped at 1 Hz.
TOOLS = {
    "agent": (AGENT_BASE, "collector"),
    "sadc": ("/usr/lib/sysstat/sadc -S DISK 1 /tmp/bench/sa.data", None),
    "node_exporter": ("/usr/bin/prometheus-node-exporter --web.listen-address=:9100", "scrape"),
    "floor": ("/tmp/bench/floor --interval-ms 1000 --files-only", None),
    "floor of the agent's reads": ("/tmp/bench/floor --interval-ms 1000 --scan every:120", None),
    "agent --scan all": (AGENT_BASE + " --scan all", "collector"),
    "agent --no-connector": (AGENT_BASE + " --no-connector", "collector"),
    "agent --no-open-files": (AGENT_BASE + " --no-open-files", "collector"),
    "agent without a collector": (AGENT_BASE, None),
}
ORDER = ["agent", "sadc", "node_exporter", "floor", "floor of the agent's reads", "agent --scan all",
         "agent --no-connector", "agent --no-open-files", "agent without a collector"]
SLEEPERS = 60  # with the kernel's threads and the guest's daemons: about a hundred processes


def log(*a):
    print("nas_vm:", *a, file=sys.stderr, flush=True)


def vm(*args, check=True, capture=True, env=None, input=None):
    return subprocess.run([NAS_VM, *args], check=check, text=True, input=input,
                          stdout=subprocess.PIPE if capture else None, env=env)


def vm_env(env):
    out = vm("env", env=env).stdout
    return dict(line.split("=", 1) for line in out.strip().splitlines())


def guest(cmd, env, check=True, input=None):
    return vm("ssh", cmd, env=env, check=check, input=input)


def copy_in(local, remote, env):
    with open(local, "rb") as f:
        data = f.read()
    subprocess.run([NAS_VM, "ssh", f"cat > {shlex.quote(remote)} && chmod 755 {shlex.quote(remote)}"],
                   input=data, check=True, env=env)


def driver_script(phases, window, settle):
    """The busybox sh program the guest runs: the phases in order, marks from spin."""
    lines = [
        "#!/bin/sh",
        "cd /tmp/bench",
        f"i=0; while [ $i -lt {SLEEPERS} ]; do sleep 1000000 & i=$((i+1)); done",
        "./spin > marks &",
        "SPIN=$!",
        "sleep 3",
        "con() { echo \"nasbench: $*\" > /dev/console; }",
    ]
    for n, (name, cmd) in enumerate(phases):
        lines.append(f"con start {n}")
        if cmd:
            lines.append(f"{cmd} >/dev/null 2>&1 &")
            lines.append("TOOL=$!")
        lines += [f"sleep {settle}", "kill -USR1 $SPIN", f"sleep {window}", "kill -USR1 $SPIN"]
        if cmd:
            lines += ["kill -TERM $TOOL", "wait $TOOL 2>/dev/null"]
        lines.append(f"con end {n}")
        lines.append("sleep 2")
        # A phase's name, for the marks' pairing.
        lines.append(f"echo {shlex.quote(name)} >> phases")
    lines += ["kill $SPIN", "con done", "echo done > finished"]
    return "\n".join(lines) + "\n"


class Host:
    """What this host does while a phase runs: record the agent, or scrape node_exporter."""

    def __init__(self, bins, env, ports, work):
        self.bins, self.env, self.ports, self.work = bins, env, ports, work
        self.proc = None
        self.thread = None
        self.stop_flag = threading.Event()
        self.scrapes = []  # host monotonic times of each scrape start

    def start(self, what):
        if what == "collector":
            db = os.path.join(self.work, "record.db")
            self.proc = subprocess.Popen(
                [os.path.join(self.bins, "nasprobe"), "--db", db, "--token-file",
                 os.path.join(self.work, "token"), "record", "--duration", "1h",
                 f"nas=127.0.0.1:{self.ports['NAS_VM_AGENT_PORT']}"],
                stdout=open(os.path.join(self.work, "record.log"), "a"), stderr=subprocess.STDOUT)
        elif what == "scrape":
            self.stop_flag.clear()
            self.thread = threading.Thread(target=self.scrape_loop, daemon=True)
            self.thread.start()

    def scrape_loop(self):
        url = f"http://127.0.0.1:{self.ports['NAS_VM_NODE_EXPORTER_PORT']}/metrics"
        nxt = time.monotonic()
        while not self.stop_flag.is_set():
            t = time.monotonic()
            try:
                with urllib.request.urlopen(url, timeout=5) as r:
                    r.read()
                self.scrapes.append(t)
            except OSError:
                pass
            nxt += 1.0
            self.stop_flag.wait(max(0.0, nxt - time.monotonic()))

    def stop(self):
        if self.proc:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
            self.proc = None
        if self.thread:
            self.stop_flag.set()
            self.thread.join()
            self.thread = None


def run(a):
    work = os.path.abspath(a.work)
    os.makedirs(work, exist_ok=True)
    env = dict(os.environ, NAS_VM_RUN=os.path.join(work, "vm"))
    subprocess.run([NAS_VM, "stop"], env=env, check=False)
    log("booting the emulated NAS with -icount shift=1,sleep=off")
    vm("start", "--icount", env=env, capture=False)
    ports = vm_env(env)
    console = ports["NAS_VM_CONSOLE"]
    try:
        guest("mkdir -p /tmp/bench /opt/nasprobe && chmod 700 /opt/nasprobe", env)
        copy_in(os.path.join(a.bins, "nasprobe-agent-armv7"), AGENT, env)
        copy_in(os.path.join(a.bins, "spin-armhf"), "/tmp/bench/spin", env)
        copy_in(os.path.join(a.bins, "floor-armhf"), "/tmp/bench/floor", env)
        # The token: made by the agent itself once, read back here for the collector.
        guest(f"{AGENT} sample >/dev/null 2>&1; ( {AGENT_BASE} & P=$!; sleep 3; kill $P ) >/dev/null 2>&1; "
              "cat /opt/nasprobe/token", env)
        tok = guest("cat /opt/nasprobe/token", env).stdout
        with open(os.path.join(work, "token"), "w") as f:
            f.write(tok)
        os.chmod(os.path.join(work, "token"), 0o600)
        kernel = guest("uname -r; uname -m", env).stdout.split()

        phases = [("alone", None)]
        for t in a.tools:
            phases += [(t, TOOLS[t][0]), ("alone", None)]
        script = driver_script(phases, a.phase_seconds, a.settle)
        guest("cat > /tmp/bench/driver.sh && chmod 755 /tmp/bench/driver.sh", env, input=script)
        # setsid: the driver outlives this ssh session (no nohup on busybox).
        guest("setsid /tmp/bench/driver.sh </dev/null >/tmp/bench/driver.log 2>&1 &", env)
        t_start = time.monotonic()
        log(f"{len(phases)} phases of {a.phase_seconds} s guest time each, started")

        host = Host(a.bins, env, ports, work)
        seen = 0
        host_marks = {}  # phase index -> (host time at start, at end)
        pos = 0
        active = None
        deadline = t_start + len(phases) * (a.phase_seconds + a.settle + 4) * 4 + 120
        done = False
        while not done:
            if time.monotonic() > deadline:
                raise SystemExit("nas_vm: the guest's driver did not finish in time")
            with open(console, "rb") as f:
                f.seek(pos)
                chunk = f.read()
            nl = chunk.rfind(b"\n")
            if nl >= 0:
                pos += nl + 1
                for line in chunk[: nl + 1].decode(errors="replace").splitlines():
                    m = re.search(r"nasbench: (start|end) (\d+)|nasbench: done", line)
                    if not m:
                        continue
                    if m.group(0).endswith("done"):
                        done = True
                        continue
                    kind, n = m.group(1), int(m.group(2))
                    name = phases[n][0]
                    if kind == "start":
                        what = TOOLS.get(name, (None, None))[1]
                        if what:
                            host.start(what)
                            active = what
                        host_marks[n] = [time.monotonic(), None]
                        log(f"phase {n + 1}/{len(phases)}: {name}")
                    else:
                        if active:
                            host.stop()
                            active = None
                        host_marks[n][1] = time.monotonic()
                        seen += 1
            time.sleep(0.2)
        host_seconds = time.monotonic() - t_start
        marks = [tuple(int(x) for x in l.split()[1:3])
                 for l in guest("cat /tmp/bench/marks", env).stdout.splitlines() if l.startswith("mark ")]
        names = guest("cat /tmp/bench/phases", env).stdout.splitlines()
        procs = guest("ls -d /proc/[0-9]* | wc -l", env).stdout.strip()
    finally:
        subprocess.run([NAS_VM, "stop"], env=env, check=False)
    if len(marks) != 2 * len(phases) or len(names) != len(phases):
        raise SystemExit(f"nas_vm: {len(marks)} marks and {len(names)} phase names for {len(phases)} phases")

    rows = []
    for n, (name, _) in enumerate(phases):
        (c0, t0), (c1, t1) = marks[2 * n], marks[2 * n + 1]
        rows.append({"name": name, "count": c1 - c0, "guest_ns": t1 - t0,
                     "rate": (c1 - c0) / ((t1 - t0) / 1e9)})
    # The window's scrapes: those that started between the host times of the phase's start and
    # end lines, less the settle time at the start (scaled by the phase's own guest/host ratio).
    results = {}
    for n, row in enumerate(rows):
        if row["name"] == "alone":
            continue
        before, after = rows[n - 1]["rate"], rows[n + 1]["rate"]
        alone = (before + after) / 2
        share = 1 - row["rate"] / alone
        window_s = row["guest_ns"] / 1e9
        what = TOOLS[row["name"]][1]
        samples = window_s  # 1 Hz of guest time
        if what == "scrape":
            h0, h1 = host_marks[n]
            total_guest = a.settle + window_s
            frac0 = a.settle / total_guest
            w0 = h0 + (h1 - h0) * frac0
            samples = sum(1 for t in host.scrapes if w0 <= t < h1)
        results[row["name"]] = {
            "share": share, "alone_before": before, "alone_after": after, "rate": row["rate"],
            "samples": samples, "us_per_sample": share * window_s * 1e6 / max(samples, 1),
        }
    alone_rates = [r["rate"] for r in rows if r["name"] == "alone"]
    out = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "commit": subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"], text=True,
                                 stdout=subprocess.PIPE).stdout.strip(),
        "command": a.command, "kernel": kernel, "processes": procs,
        "phase_seconds": a.phase_seconds, "settle": a.settle, "host_seconds": host_seconds,
        "alone_rates": alone_rates,
        "alone_spread": (max(alone_rates) - min(alone_rates)) / (sum(alone_rates) / len(alone_rates)),
        "phases": rows, "tools": results,
    }
    with open(a.out, "w") as f:
        json.dump(out, f, indent=1)
    log(f"done in {host_seconds / 60:.1f} min of this host's time")
    print(render(out))
    if a.markdown:
        write_section(a.markdown, render(out))


def render(r):
    t = r["tools"]
    floor = t.get("floor", {}).get("us_per_sample")
    sadc = t.get("sadc", {}).get("us_per_sample")
    out = [
        "<!-- bench:nas-vm -->",
        "## The emulated NAS: one pegged ARMv7 core (issue 25)",
        "",
        f"Debian's armmp kernel {r['kernel'][0]} ({r['kernel'][1]}) on one Cortex-A15 core under "
        "qemu-system-arm with `-icount shift=1,sleep=off` (guest time counted in instructions: a "
        "500-MIPS core; figures do not depend on this host's load), 256 MiB, busybox userland, "
        f"{r['processes']} processes. bench/spin pegs the core at nice 0; each tool runs alone "
        f"with it for {r['phase_seconds']} s of guest time (after {r['settle']} s to settle), between "
        "two phases of the loop alone; share = 1 - loop rate with the tool / mean of the two alone "
        "phases around it; per sample = share x window / samples (1 Hz; node_exporter: the scrapes "
        "from this host in the window). The agent's phases are recorded by `nasprobe record` on "
        "this host through the forwarded port unless the row says otherwise. "
        f"The loop alone varied by {r['alone_spread'] * 100:.4f} % over the run "
        f"({len(r['alone_rates'])} phases, {min(r['alone_rates']):,.0f} to {max(r['alone_rates']):,.0f} iterations/s). "
        f"{r['date']}, commit `{r['commit']}`. Command: `{r['command']}` "
        f"({r['host_seconds'] / 60:.1f} min).",
        "",
        "floor: the physical floor, bench/floor.c --files-only (the 7 system files every sampler "
        "reads, pread once a second on kept descriptors); floor of the agent's reads: bench/floor.c "
        "--scan every:120 (those files, the NICs' sysfs every 10th sample, every /proc/PID/stat every "
        "120th and the busy ones in between, the top 8's schedstat and threads: the agent's reads "
        "without its parsing, encoding or sending).",
        "",
        "| tool (1 Hz) | share of the core | µs of the core per sample | × the floor | sadc / tool |",
        "|---|---:|---:|---:|---:|",
    ]
    for name in ORDER:
        if name not in t:
            continue
        x = t[name]
        us = x["us_per_sample"]
        rf = f"{us / floor:.2f}" if floor else "n/a"
        rs = f"{sadc / us:.2f}" if sadc and us > 0 else "n/a"
        out.append(f"| {name} | {x['share'] * 100:.3f} % | {us:,.0f} | {rf} | {rs} |")
    out += ["", "<!-- /bench:nas-vm -->"]
    return "\n".join(out)


def write_section(path, text):
    with open(path) as f:
        doc = f.read()
    pat = re.compile(r"<!-- bench:nas-vm -->.*?<!-- /bench:nas-vm -->", re.S)
    doc = pat.sub(lambda _: text, doc) if pat.search(doc) else doc.rstrip("\n") + "\n\n" + text + "\n"
    with open(path, "w") as f:
        f.write(doc)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bins", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--work", default="/tmp/nasprobe-nas-vm-bench")
    p.add_argument("--phase-seconds", type=int, default=60)
    p.add_argument("--settle", type=int, default=8)
    p.add_argument("--tools", default=",".join(ORDER))
    p.add_argument("--markdown")
    p.add_argument("--command", default="scripts/bench --only nas-vm")
    a = p.parse_args()
    a.tools = [t.strip() for t in a.tools.split(",") if t.strip()]
    for t in a.tools:
        if t not in TOOLS:
            raise SystemExit(f"nas_vm: no tool {t!r} (one of {', '.join(ORDER)})")
    run(a)


if __name__ == "__main__":
    main()
