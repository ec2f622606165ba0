#!/usr/bin/python3
"""kiln vs ONNX Runtime, side by side: alternating rounds, medians, ratio.

Usage: /usr/bin/python3 bench/compare_ort.py [--kiln KILN] [--models-dir DIR] [--models a,b]
           [--threads 1,2] [--rounds R] [--iters N] [--json FILE] [--tune CACHE]
For each model and thread count it compiles with kiln --threads T (not timed), then runs R rounds; each round runs
`kiln bench --json` and `node bench/ort_bench.js` (graphOptimizationLevel all, same thread count)
one after the other, alternating which goes first. The figure per side is the median of the
per-round medians; ratio = ORT / kiln (above 1: kiln is faster). First-run latency is the median
of each side's first run; each round's own ratio is kept too (printed as their range): the two
runs of a round see the same load on a shared machine. Prints a table and writes JSON. With
--tune CACHE kiln compiles with --tune (docs/tuning.md); the tuning time is not part of the
figures.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tests", "models"))
from check_model import MODELS  # noqa: E402


def run_json(cmd):
    proc = subprocess.run(cmd, capture_output=True, text=True, errors="replace")
    if proc.returncode != 0:
        sys.exit(f"compare_ort: {' '.join(cmd[:3])} failed: {proc.stderr.strip()[-300:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kiln", default=os.path.join(REPO, "build", "tools", "kiln", "kiln"))
    ap.add_argument("--models-dir", default=os.path.join(REPO, ".cache", "models"))
    ap.add_argument("--models", default="resnet50,mobilenetv2,ppocr_v4_det,bert")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--json", dest="json_out", help="write the results here")
    ap.add_argument("--tune", metavar="CACHE",
                    help="compile with kiln --tune --tuning-cache CACHE (measures what the "
                         "cache lacks; docs/tuning.md)")
    ap.add_argument("--kiln-flags", default="",
                    help="more kiln compile flags, one string (e.g. '--amx fast')")
    args = ap.parse_args()

    rows = []
    host = None
    with tempfile.TemporaryDirectory(prefix="kiln-compare-ort.") as tmp:
        for name in args.models.split(","):
            file, flags, _, _, _ = MODELS[name]
            model = file if os.path.isabs(file) else os.path.join(args.models_dir, file)
            shape_flags = [f for f in flags]
            for threads in [int(t) for t in args.threads.split(",")]:
                # The thread count is compiled in (the context's pool); one artifact each.
                out = os.path.join(tmp, f"{name}-t{threads}")
                proc = subprocess.run([args.kiln, "compile", model, "-o", out,
                                       "--threads", str(threads)] + flags +
                                      args.kiln_flags.split() +
                                      (["--tune", "--tuning-cache", args.tune] if args.tune else []),
                                      capture_output=True, text=True)
                if proc.returncode != 0:
                    print(f"{name}: kiln compile failed: {proc.stderr.strip()}")
                    rows.append({"model": name, "error": proc.stderr.strip()})
                    continue
                kiln_cmd = [args.kiln, "bench", out, "--json", "--iters", str(args.iters)]
                ort_cmd = ["node", os.path.join(REPO, "bench", "ort_bench.js"), model,
                           "--iters", str(args.iters), "--threads", str(threads)] + shape_flags
                k_med, o_med, k_first, o_first = [], [], [], []
                for r in range(args.rounds):
                    order = [(kiln_cmd, k_med, k_first), (ort_cmd, o_med, o_first)]
                    for cmd, med, first in (order if r % 2 == 0 else order[::-1]):
                        res = run_json(cmd)
                        med.append(res["latency_ms"]["median"])
                        first.append(res["first_run_ms"])
                        if "host" in res and res["host"] != host:
                            # The machine kind moves the figures (a Zen 4 core has half a Zen
                            # 5's FMA peak): say which one they are from.
                            host = res["host"]
                            print(f"host: {host}", flush=True)
                row = {"model": name, "threads": threads, "rounds": args.rounds, "host": host,
                       "tuned": bool(args.tune),
                       "iters": args.iters,
                       "kiln_median_ms": statistics.median(k_med),
                       "ort_median_ms": statistics.median(o_med),
                       "kiln_first_run_ms": statistics.median(k_first),
                       "ort_first_run_ms": statistics.median(o_first)}
                row["ratio_ort_over_kiln"] = row["ort_median_ms"] / row["kiln_median_ms"]
                # Each round's own ratio (its two runs back to back see the same host load): the
                # spread says how far the shared machine moved the figures during the runs.
                row["round_ratios"] = [o / k for k, o in zip(k_med, o_med)]
                rows.append(row)
                print(f"{name:<14} threads {threads}: kiln {row['kiln_median_ms']:9.2f} ms  "
                      f"ORT {row['ort_median_ms']:9.2f} ms  ratio ORT/kiln "
                      f"{row['ratio_ort_over_kiln']:6.3f} (rounds {min(row['round_ratios']):.2f}-"
                      f"{max(row['round_ratios']):.2f})  first run kiln "
                      f"{row['kiln_first_run_ms']:.1f} ms, ORT {row['ort_first_run_ms']:.1f} ms",
                      flush=True)
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(rows, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
