#!/usr/bin/python3
"""kiln vs ONNX Runtime layer by layer: where each is faster, on one model.

Usage: /usr/bin/python3 bench/compare_layers.py MODEL [--kiln KILN] [--models-dir DIR]
           [--threads 1] [--iters N] [--top K] [--json FILE]
MODEL is a name from tests/models/check_model.py (resnet50, mobilenetv2, ...) or an .onnx path.
kiln compiles it with --profile and `kiln bench --profile` writes its per-step trace; ONNX Runtime
(node bench/ort_bench.js --profile-prefix, graphOptimizationLevel all) writes its profiler's
per-node kernel times. Both sides name the ONNX nodes they ran: kiln each step's source nodes,
ONNX Runtime its (possibly fused or renamed) node, whose output tensor names the ONNX node that
produced it. Each ORT node is charged to the kiln step holding that ONNX node, so the table has
one row per kiln step: kiln's time, ORT's time for the same nodes, and the ratio ORT / kiln.
ORT nodes with no kiln step (layout reorders, ops kiln folded away) are summed on their own row.

The figures are each side's mean per run with its profiler on, which costs both a little; the
totals are printed next to the plain medians of the same runs. ONNX Runtime's profiler is far
off its plain figures at more than one thread (MobileNetV2 at 2 threads: 6.7 ms summed per run
against 4.0 ms run to run), so use 1 thread for the per-layer split and bench/compare_ort.py for
the thread-count figures.
"""
import collections
import glob
import json
import os
import sys
import tempfile

import onnx

import bench_util
from bench_util import REPO


def run(cmd):
    return bench_util.run("compare_layers", cmd)


def kiln_steps(trace_file):
    """[(op, kernel, [onnx nodes], mean ms)] in run order, from kiln bench --profile's trace (its
    events are the last run's steps; args.mean_us is each step's mean over the timed runs)."""
    with open(trace_file) as f:
        trace = json.load(f)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    steps = []
    for e in events:
        if e.get("ph") != "X":
            continue
        a = e.get("args", {})
        nodes = [x for x in a.get("nodes", "").split(",") if x]
        steps.append((e["name"], a.get("kernel", ""), nodes, a.get("mean_us", e["dur"]) / 1000.0))
    return steps


def ort_nodes(profile_file):
    """{ORT node name: (op, mean ms per run)} from ONNX Runtime's profiler output."""
    with open(profile_file) as f:
        events = json.load(f)
    total, count, ops = collections.Counter(), collections.Counter(), {}
    for e in events:
        if e.get("cat") != "Node" or not e.get("name", "").endswith("_kernel_time"):
            continue
        name = e["name"][: -len("_kernel_time")]
        total[name] += e["dur"]
        count[name] += 1
        ops[name] = e.get("args", {}).get("op_name", "")
    runs = max(count.values()) if count else 1
    return {n: (ops[n], total[n] / runs / 1000.0) for n in total}


def onnx_producers(model_path):
    """{tensor name: producing node name} and the set of node names of the ONNX graph."""
    m = onnx.load(model_path, load_external_data=False)
    producers, names = {}, set()
    for node in m.graph.node:
        names.add(node.name)
        for o in node.output:
            producers[o] = node.name
    return producers, names


def ort_to_onnx_node(name, producers, names):
    """The ONNX node an ORT profiler node stands for: itself (less a "fused " prefix), or the
    producer of the tensor its name carries (ORT's layout transformer names a node after its
    output plus "_nchwc")."""
    if name.startswith("fused "):  # ORT's FusedGemm / FusedConv keep the first node's name
        name = name[len("fused "):]
    if name in names:
        return name
    for suffix in ("_nchwc", ""):
        if suffix and not name.endswith(suffix):
            continue
        tensor = name[: -len(suffix)] if suffix else name
        if tensor in producers:
            return producers[tensor]
    return None


def main():
    ap = bench_util.model_parser(__doc__, 1, "print only the K rows where kiln loses most")
    args = ap.parse_args()

    model, flags = bench_util.model_of("compare_layers", args.model, args.models_dir)
    if args.threads != 1:
        print("compare_layers: ONNX Runtime's profiler is far off its plain figures at more than "
              "one thread; read the ORT column with care", file=sys.stderr)

    with tempfile.TemporaryDirectory(prefix="kiln-compare-layers.") as tmp:
        out = os.path.join(tmp, "artifact")
        run([args.kiln, "compile", model, "-o", out, "--profile", "--threads", str(args.threads)]
            + flags)
        trace = os.path.join(tmp, "kiln_trace.json")
        kiln_plain = json.loads(run([args.kiln, "bench", out, "--json", "--iters", str(args.iters)])
                                .strip().splitlines()[-1])
        run([args.kiln, "bench", out, "--iters", str(args.iters), "--profile", trace])
        steps = kiln_steps(trace)
        prefix = os.path.join(tmp, "ort_profile")
        ort_plain = json.loads(run(["node", os.path.join(REPO, "bench", "ort_bench.js"), model,
                                    "--iters", str(args.iters), "--threads", str(args.threads)]
                                   + flags).strip().splitlines()[-1])
        run(["node", os.path.join(REPO, "bench", "ort_bench.js"), model, "--iters",
             str(args.iters), "--threads", str(args.threads), "--profile-prefix", prefix] + flags)
        files = sorted(glob.glob(prefix + "*.json"))
        if not files:
            sys.exit("compare_layers: ONNX Runtime wrote no profile")
        ort = ort_nodes(files[-1])

    producers, names = onnx_producers(model)
    step_of = {}
    for i, (_, _, nodes, _) in enumerate(steps):
        for n in nodes:
            step_of.setdefault(n, i)
    ort_ms = [0.0] * len(steps)
    ort_names = [[] for _ in steps]
    unmatched = []
    for name, (op, ms) in ort.items():
        onnx_node = ort_to_onnx_node(name, producers, names)
        if onnx_node in step_of:
            ort_ms[step_of[onnx_node]] += ms
            ort_names[step_of[onnx_node]].append(name)
        else:
            unmatched.append((name, op, ms))

    rows = []
    for i, (op, kernel, nodes, ms) in enumerate(steps):
        rows.append({"step": i, "op": op, "kernel": kernel, "nodes": nodes, "kiln_ms": ms,
                     "ort_ms": ort_ms[i], "ort_nodes": ort_names[i],
                     "ratio_ort_over_kiln": ort_ms[i] / ms if ms > 0 else None})
    other = sum(ms for _, _, ms in unmatched)
    k_total, o_total = sum(r["kiln_ms"] for r in rows), sum(ort_ms) + other

    shown = rows
    if args.top:
        shown = sorted(rows, key=lambda r: r["ort_ms"] - r["kiln_ms"])[: args.top]
    print(f"{'step':>4} {'kiln ms':>8} {'ORT ms':>8} {'ORT/kiln':>8}  {'kernel':<38} first node")
    for r in shown:
        ratio = f"{r['ratio_ort_over_kiln']:8.2f}" if r["ratio_ort_over_kiln"] else f"{'-':>8}"
        kern = r["kernel"].replace("kiln_cpu::", "")[:38]
        print(f"{r['step']:>4} {r['kiln_ms']:8.3f} {r['ort_ms']:8.3f} {ratio}  {kern:<38} "
              f"{r['nodes'][0] if r['nodes'] else r['op']}")
    if unmatched:
        print(f"   - {0.0:8.3f} {other:8.3f} {'':>8}  ORT nodes with no kiln step: "
              + ", ".join(f"{n} ({op})" for n, op, _ in sorted(unmatched)[:6])
              + (" ..." if len(unmatched) > 6 else ""))
    print(f"total {k_total:7.3f} {o_total:8.3f} {o_total / k_total:8.2f}  (profiled sums; plain "
          f"medians kiln {kiln_plain['latency_ms']['median']:.3f} ms, ORT "
          f"{ort_plain['latency_ms']['median']:.3f} ms, ratio "
          f"{ort_plain['latency_ms']['median'] / kiln_plain['latency_ms']['median']:.2f})")
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump({"model": args.model, "threads": args.threads, "iters": args.iters,
                       "kiln_median_ms": kiln_plain["latency_ms"]["median"],
                       "ort_median_ms": ort_plain["latency_ms"]["median"],
                       "steps": rows,
                       "ort_unmatched": [{"name": n, "op": op, "ms": ms}
                                         for n, op, ms in unmatched]}, f, indent=1)


if __name__ == "__main__":
    main()
