#!/usr/bin/env python3
"""ncu_bytes.py — DRAM traffic and time per kernel from an Nsight Compute CSV.

Usage: ncu_bytes.py [--scale S] [--bw BYTES_PER_S] FILE.csv
       ncu_bytes.py --names FILE.csv

FILE.csv is what `ncu --metrics dram__bytes_read.sum,dram__bytes_write.sum,
gpu__time_duration.sum --csv --page raw` prints (other lines, such as the
program's own output, are skipped). Kernels are grouped by name with their
template arguments and without their parameter lists, and listed by time:
launches, bytes read and written, time, and the bandwidth reached. --scale
multiplies bytes and time (a run of one member part stands for S parts of the
same size); --bw gives the total's time at that DRAM bandwidth (default 3.0e12
bytes a second). --names prints each launch's kernel instead, one a line in
launch order (make test-gpu's check of the NVTX ranges).
tools/gpu_roofline.sh runs ncu and this.
"""
import argparse
import csv
import re
import sys

METRICS = ("dram__bytes_read.sum", "dram__bytes_write.sum", "gpu__time_duration.sum")
UNIT = {"byte": 1.0, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "ns": 1e-9, "us": 1e-6, "usecond": 1e-6,
        "nsecond": 1e-9, "ms": 1e-3, "msecond": 1e-3, "s": 1.0, "second": 1.0}


def die(msg):
    print("ncu_bytes.py: error: " + msg, file=sys.stderr)
    sys.exit(2)


def number(text, what):
    try:
        return float(text.replace(",", ""))
    except ValueError:
        die("%s: '%s' is not a number" % (what, text))


def load(path):
    """[(kernel, bytes read, bytes written, seconds)] of every profiled launch."""
    try:
        with open(path, newline="", errors="replace") as f:  # the program's own output may hold any bytes
            lines = [ln for ln in f if ln.startswith('"')]
    except OSError as e:
        die("%s: %s" % (path, e.strerror))
    rows = list(csv.reader(lines))
    if len(rows) < 2 or "Kernel Name" not in rows[0]:
        die("%s: no ncu CSV header (run ncu with --csv --page raw)" % path)
    head, units = rows[0], rows[1]
    missing = [m for m in METRICS if m not in head]
    if missing:
        die("%s: metric(s) %s not in the CSV (ncu --metrics %s)" % (path, ", ".join(missing), ",".join(METRICS)))
    ki = head.index("Kernel Name")
    cols = [head.index(m) for m in METRICS]
    scale = []
    for m, c in zip(METRICS, cols):
        if units[c] not in UNIT:
            die("%s: unit '%s' of %s not known" % (path, units[c], m))
        scale.append(UNIT[units[c]])
    out = []
    for r in rows[2:]:
        name = re.sub(r"\(.*", "", r[ki]).strip()
        rd, wr, t = (number(r[c], m) * s for c, m, s in zip(cols, METRICS, scale))
        out.append((name, rd, wr, t))
    if not out:
        die("%s: no kernel launches in the CSV" % path)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("csv")
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--bw", type=float, default=3.0e12)
    ap.add_argument("--names", action="store_true", help="print each launch's kernel, in launch order")
    a = ap.parse_args()
    if a.scale <= 0 or a.bw <= 0:
        die("--scale and --bw must be positive")
    if a.names:
        for name, _, _, _ in load(a.csv):
            print(name)
        return
    agg = {}
    for name, rd, wr, t in load(a.csv):
        k = agg.setdefault(name, [0, 0.0, 0.0, 0.0])
        k[0] += 1
        k[1] += rd * a.scale
        k[2] += wr * a.scale
        k[3] += t * a.scale
    print("| kernel | launches | read GB | written GB | ms | TB/s |")
    print("|---|---|---|---|---|---|")
    for name, (n, rd, wr, t) in sorted(agg.items(), key=lambda kv: -kv[1][3]):
        print("| `%s` | %d | %.2f | %.2f | %.3f | %.2f |" % (name, n, rd / 1e9, wr / 1e9, t * 1e3, (rd + wr) / t / 1e12 if t > 0 else 0.0))
    rd = sum(v[1] for v in agg.values())
    wr = sum(v[2] for v in agg.values())
    t = sum(v[3] for v in agg.values())
    print("total: %.2f GB read, %.2f GB written, %.3f ms of kernels; the bytes take %.3f ms at %.3g bytes/s"
          % (rd / 1e9, wr / 1e9, t * 1e3, (rd + wr) / a.bw * 1e3, a.bw))


if __name__ == "__main__":
    main()
