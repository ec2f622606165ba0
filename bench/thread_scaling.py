#!/usr/bin/python3
"""kiln from 1 to T threads, step by step: which steps scale and which lose time.

Usage: /usr/bin/python3 bench/thread_scaling.py MODEL [--kiln KILN] [--models-dir DIR]
           [--threads T] [--rounds R] [--iters N] [--top K] [--json FILE]
MODEL is a name from tests/models/check_model.py (resnet50, mobilenetv2, ...) or an .onnx path.
kiln compiles it once with --profile --threads T; then R rounds each run `kiln bench --profile`
at 1 thread and at T (--run-threads: the same artifact, the same kernels and splits), in turn,
so that both see the same load on a shared machine. Per step: the median over the rounds of its
mean time at 1 and at T threads, its speedup, its idle share at T (the pool's threads waiting in
the step, from the trace) and the time it loses against perfect scaling (t_T - t_1 / T). The
steps' totals, and the same figures summed by kernel, close the table. The figures are profiled
runs' (the hooks cost a little); bench/compare_ort.py has the plain medians.
"""
import json
import os
import statistics
import sys
import tempfile

import bench_util


def run(cmd):
    return bench_util.run("thread_scaling", cmd)


def steps_of(trace_file):
    """[(kernel, first ONNX node, mean us, idle us)] in run order, from a kiln bench trace."""
    with open(trace_file) as f:
        trace = json.load(f)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    out = []
    for e in events:
        if e.get("ph") != "X":
            continue
        a = e.get("args", {})
        kernel = a.get("kernel", "").split("::")[-1].split("__")[0] or e.get("name", "")
        node = a.get("nodes", "").split(",")[0]
        out.append((kernel, node, float(a.get("mean_us", e.get("dur", 0.0))),
                    float(a.get("idle_us", 0.0))))
    return out


def main():
    ap = bench_util.model_parser(__doc__, 2, "print only the K steps that lose most")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    if args.threads < 2 or args.rounds < 1 or args.iters < 1:
        sys.exit("thread_scaling: --threads must be at least 2, --rounds and --iters at least 1")

    model, flags = bench_util.model_of("thread_scaling", args.model, args.models_dir)

    T = args.threads
    runs = {1: [], T: []}
    with tempfile.TemporaryDirectory(prefix="kiln-thread-scaling.") as tmp:
        out = os.path.join(tmp, "artifact")
        run([args.kiln, "compile", model, "-o", out, "--profile", "--threads", str(T)] + flags)
        for r in range(args.rounds):
            # Alternate which thread count goes first.
            for t in ((1, T) if r % 2 == 0 else (T, 1)):
                trace = os.path.join(tmp, f"trace-{t}-{r}.json")
                run([args.kiln, "bench", out, "--iters", str(args.iters), "--run-threads", str(t),
                     "--profile", trace])
                runs[t].append(steps_of(trace))
    n = len(runs[1][0])
    if n == 0 or any(len(s) != n for t in runs for s in runs[t]):
        sys.exit("thread_scaling: the profiled runs do not have the same steps")

    def med(t, i, k):
        return statistics.median(s[i][k] for s in runs[t])

    rows = []
    for i in range(n):
        kernel, node = runs[1][0][i][0], runs[1][0][i][1]
        t1, tT, idle = med(1, i, 2), med(T, i, 2), med(T, i, 3)
        rows.append({"step": i, "kernel": kernel, "node": node, "us_1": t1, f"us_{T}": tT,
                     "speedup": t1 / tT if tT > 0 else 0.0,
                     "idle_pct": 100.0 * idle / (T * tT) if tT > 0 else 0.0,
                     "lost_us": tT - t1 / T})
    total1 = sum(r["us_1"] for r in rows)
    totalT = sum(r[f"us_{T}"] for r in rows)
    by_kernel = {}
    for r in rows:
        k = by_kernel.setdefault(r["kernel"], {"steps": 0, "us_1": 0.0, f"us_{T}": 0.0,
                                               "lost_us": 0.0})
        k["steps"] += 1
        k["us_1"] += r["us_1"]
        k[f"us_{T}"] += r[f"us_{T}"]
        k["lost_us"] += r["lost_us"]

    shown = sorted(rows, key=lambda r: -r["lost_us"])[: args.top] if args.top else rows
    print(f"{'step':>4} {'1 thr us':>9} {f'{T} thr us':>9} {'speedup':>7} {'idle %':>6} "
          f"{'lost us':>8}  {'kernel':<28} first node")
    for r in shown:
        print(f"{r['step']:>4} {r['us_1']:>9.1f} {r[f'us_{T}']:>9.1f} {r['speedup']:>7.2f} "
              f"{r['idle_pct']:>6.1f} {r['lost_us']:>8.1f}  {r['kernel'][:28]:<28} "
              f"{r['node'][:60]}")
    print(f"\nby kernel: {'steps':>5} {'1 thr ms':>9} {f'{T} thr ms':>9} {'speedup':>7} "
          f"{'lost ms':>8}")
    for name, k in sorted(by_kernel.items(), key=lambda kv: -kv[1]["lost_us"]):
        sp = k["us_1"] / k[f"us_{T}"] if k[f"us_{T}"] > 0 else 0.0
        print(f"  {name[:30]:<30} {k['steps']:>5} {k['us_1'] / 1000:>9.3f} "
              f"{k[f'us_{T}'] / 1000:>9.3f} {sp:>7.2f} {k['lost_us'] / 1000:>8.3f}")
    print(f"total: {total1 / 1000:.3f} ms at 1 thread, {totalT / 1000:.3f} ms at {T} "
          f"({total1 / totalT:.2f}x; perfect scaling {total1 / T / 1000:.3f} ms, "
          f"{(totalT - total1 / T) / 1000:.3f} ms lost)")
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump({"model": model, "threads": T, "rounds": args.rounds, "iters": args.iters,
                       "total_us_1": total1, f"total_us_{T}": totalT, "steps": rows,
                       "by_kernel": by_kernel}, f, indent=1)


if __name__ == "__main__":
    main()
