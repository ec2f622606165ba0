#!/usr/bin/python3
"""Memory figures per model: arena vs lower bound vs no sharing, and peak RSS of kiln vs ORT.

Usage: /usr/bin/python3 bench/memory_figures.py [--kiln KILN] [--models-dir DIR]
           [--models a,b,...] [--json FILE] [--no-rss]
For each model: `kiln compile` at -O3 and -O0 (no views, in-place writes or reordering), then
from manifest.json the arena bytes, the lower bound (the largest sum of simultaneously live
buffers), the sum of all buffers without sharing, and the op-order peak before/after
reordering. Peak resident memory (/usr/bin/time's maximum RSS) of a small C program that links
the artifact and runs it once, vs `node bench/ort_bench.js` running ONNX Runtime once.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHAPES = {"ppocr_v4_det": ["--shape", "x=1,3,640,640"]}
RUNNER = r"""
#include <stdio.h>
#include <stdlib.h>
#include "model.h"
int main(void) {
  P_context* ctx = NULL;
  int rc = P_create(&ctx, NULL, 0);
  for (int i = 0; rc == KILN_OK && i < P_num_inputs(); ++i) {
    void* zeros = calloc(1, P_input_bytes(i));
    rc = P_set_input(ctx, i, zeros, P_input_bytes(i));
    free(zeros);
  }
  if (rc == KILN_OK) rc = P_run(ctx);
  P_destroy(ctx);
  if (rc != KILN_OK) return fprintf(stderr, "run failed: %d\n", rc), 1;
  return 0;
}
"""


def max_rss_kb(cmd, cwd=None):
    proc = subprocess.run(["/usr/bin/time", "-v"] + cmd, capture_output=True, text=True, cwd=cwd)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr.strip()[-400:])
    return int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr).group(1))


def compile_model(kiln, model, out, opt, extra):
    proc = subprocess.run([kiln, "compile", model, "-o", out, "-O", str(opt), "--name", "m"] +
                          extra, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr.strip())
    return json.load(open(os.path.join(out, "manifest.json")))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kiln", default=os.path.join(REPO, "build", "tools", "kiln", "kiln"))
    ap.add_argument("--models-dir", default=os.path.join(REPO, ".cache", "models"))
    ap.add_argument("--models",
                    default="resnet50,mobilenetv2,ppocr_v4_det,bert,googlenet,densenet121,squeezenet")
    ap.add_argument("--json", dest="json_out")
    ap.add_argument("--no-rss", action="store_true")
    args = ap.parse_args()
    rows = []
    print(f"{'model':<14} {'arena':>12} {'lower bound':>12} {'ratio':>6} {'no sharing':>12} "
          f"{'-O0 arena':>12} {'order peak':>23} {'kiln RSS':>9} {'ORT RSS':>9} {'ratio':>6}")
    with tempfile.TemporaryDirectory(prefix="kiln-memory-figures.") as tmp:
        for name in args.models.split(","):
            model = os.path.join(args.models_dir, name + ".onnx")
            if not os.path.isfile(model):
                print(f"{name:<14} missing ({model}); scripts/export_torch_models.py makes it")
                continue
            extra = SHAPES.get(name, [])
            try:
                out = os.path.join(tmp, name)
                m3 = compile_model(args.kiln, model, out, 3, extra)
                m0 = compile_model(args.kiln, model, out + "-O0", 0, extra + ["--no-build"])
            except RuntimeError as e:
                print(f"{name:<14} kiln compile failed: {e}")
                rows.append({"model": name, "error": str(e)})
                continue
            mem = m3["memory"]
            row = {"model": name, "arena_bytes": m3["arena_bytes"],
                   "lower_bound_bytes": m3["arena_lower_bound_bytes"],
                   "planner": m3["arena_planner"], "unshared_bytes": mem["unshared_bytes"],
                   "arena_bytes_O0": m0["arena_bytes"],
                   "order_peak_before": mem["schedule_peak_before_bytes"],
                   "order_peak_after": mem["schedule_peak_after_bytes"],
                   "views": mem["views"], "in_place": mem["in_place"],
                   "concat_inputs_in_place": mem["concat_inputs_in_place"],
                   "weights_bytes": m3["weights_bytes"]}
            row["arena_over_bound"] = row["arena_bytes"] / max(row["lower_bound_bytes"], 1)
            if not args.no_rss:
                src = os.path.join(tmp, name + "_runner.c")
                with open(src, "w") as f:
                    f.write(RUNNER.replace("P_", "m_"))
                exe = os.path.join(tmp, name + "_runner")
                subprocess.run(["cc", "-O2", "-I", out, src, os.path.join(out, "libm.a"),
                                "-lstdc++", "-lm", "-o", exe], check=True)
                row["kiln_max_rss_kb"] = max_rss_kb([exe])
                ort = ["node", os.path.join(REPO, "bench", "ort_bench.js"), model, "--iters", "1",
                       "--warmup", "0"] + [a for a in extra]
                row["ort_max_rss_kb"] = max_rss_kb(ort)
                row["rss_ratio_kiln_over_ort"] = row["kiln_max_rss_kb"] / row["ort_max_rss_kb"]
            rows.append(row)
            rss = (f"{row['kiln_max_rss_kb'] / 1024:8.1f}M {row['ort_max_rss_kb'] / 1024:8.1f}M "
                   f"{row['rss_ratio_kiln_over_ort']:6.3f}") if "kiln_max_rss_kb" in row else ""
            print(f"{name:<14} {row['arena_bytes']:>12} {row['lower_bound_bytes']:>12} "
                  f"{row['arena_over_bound']:6.3f} {row['unshared_bytes']:>12} "
                  f"{row['arena_bytes_O0']:>12} {row['order_peak_before']:>11}->"
                  f"{row['order_peak_after']:<11} {rss}", flush=True)
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(rows, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    sys.exit(main())
