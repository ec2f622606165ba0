#!/usr/bin/python3
"""Runs the ONNX backend node tests through `kiln run` (the compiled path) and grades them.

Usage: /usr/bin/python3 tests/conformance/run_node_tests.py --kiln KILN [--node-dir DIR]
           [--work DIR] [--report FILE.json] [--filter REGEX] [--every N] [-j N] [--timeout S]
           [--target host|generic] [-O N] [--verbose]

For every test folder (model.onnx + test_data_set_0/{input,output}_K.pb) it runs
`kiln run model.onnx -i input_0.pb ... -o OUT` and compares OUT/<output>.npy with output_K.pb:
floats within rtol 1e-3 / atol 1e-5 (NaN equals NaN, infinities must match), integers, bools
and strings exactly, shapes and dtypes exactly. Each test ends as one of

  pass         the outputs match
  unsupported  kiln refused the model with its one-line error (exit 1) before running it
  wrong        kiln ran but an output is missing or differs, or the run itself failed
  build_error  the generated C++ did not compile (a kiln bug)
  crash        kiln died from a signal or exited with a code other than 0 or 1
  timeout      kiln took longer than --timeout seconds
  random       exempt: the expected values come from numpy's random generator (RANDOM_TESTS:
               Bernoulli, training-mode Dropout with a nonzero ratio), which no other
               generator reproduces; kiln's outputs are checked for the op's properties
               instead (shape and dtype, 0/1 draws, kept elements scaled by 1/(1-ratio) and
               the mask agreeing) and the test is `wrong` if they fail

A JSON report gets every test's status, op list and message, and a per-op table. The last line
printed is `conformance: P passed, F failed` (F counts wrong + build_error + crash + timeout;
unsupported tests are listed separately). Exit status: 0 when F is 0, 1 otherwise.
"""
import argparse
import concurrent.futures
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np

np.float = float  # onnx 1.12 still uses the aliases numpy 1.24 removed
np.int = int
np.bool = bool
np.object = object
import onnx  # noqa: E402
from onnx import numpy_helper  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RTOL, ATOL = 1e-3, 1e-5
FAILING = ("wrong", "build_error", "crash", "timeout")
STATUSES = ("pass", "unsupported", "random") + FAILING
# Tests whose expected outputs are numpy random draws (the exemption of the conformance goal).
RANDOM_TESTS = re.compile(r"^test_(bernoulli.*|training_dropout(_default)?(_mask)?)$")


def sanitize(name):
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)


def load_pb(path):
    """Reads a TensorProto file; None for sequence/optional/map protos numpy cannot hold."""
    with open(path, "rb") as f:
        data = f.read()
    t = onnx.TensorProto()
    try:
        t.ParseFromString(data)
    except Exception:  # noqa: BLE001 - any decode failure means "not a plain tensor"
        return None
    if not t.dims and not t.raw_data and t.data_type == 0:
        return None
    return numpy_helper.to_array(t)


def compare(name, got, want):
    """Returns None when got matches want, else a one-line reason."""
    if want.dtype == object or want.dtype.kind in "US":
        if got.shape != want.shape or [str(x) for x in got.flat] != [str(x) for x in want.flat]:
            return f"output '{name}': strings differ"
        return None
    if got.shape != want.shape:
        return f"output '{name}': shape {list(got.shape)}, expected {list(want.shape)}"
    if got.dtype != want.dtype:
        return f"output '{name}': dtype {got.dtype}, expected {want.dtype}"
    if want.dtype.kind in "biu":
        bad = np.flatnonzero(got.reshape(-1) != want.reshape(-1))
        if bad.size:
            i = int(bad[0])
            return (f"output '{name}': {bad.size} of {want.size} elements differ, first at "
                    f"flat index {i}: {got.reshape(-1)[i]} vs {want.reshape(-1)[i]}")
        return None
    g = got.astype(np.float64).reshape(-1)
    w = want.astype(np.float64).reshape(-1)
    both_nan = np.isnan(g) & np.isnan(w)
    with np.errstate(invalid="ignore", over="ignore"):
        close = np.isclose(g, w, rtol=RTOL, atol=ATOL, equal_nan=True)
        same_inf = np.isinf(w) & (g == w)
    ok = close | both_nan | same_inf
    if not ok.all():
        bad = np.flatnonzero(~ok)
        i = int(bad[0])
        return (f"output '{name}': {bad.size} of {w.size} elements outside rtol {RTOL} atol "
                f"{ATOL}, first at flat index {i}: {g[i]!r} vs {w[i]!r}")
    return None


def check_random(name, data_dir, got, want):
    """Properties of a random op's outputs (RANDOM_TESTS); None when they hold."""
    y = got[0]
    if y is None or y.shape != want[0].shape or y.dtype != want[0].dtype:
        return "output 0: missing, or its shape or dtype differs from the expected one"
    if name.startswith("test_bernoulli"):
        if not np.isin(y, (0, 1)).all():
            return "Bernoulli output has values other than 0 and 1"
        return None
    x = load_pb(os.path.join(data_dir, "input_0.pb")).astype(np.float64)
    ratio_pb = os.path.join(data_dir, "input_1.pb")
    ratio = float(load_pb(ratio_pb)) if os.path.isfile(ratio_pb) else 0.5
    yd = y.astype(np.float64)
    kept = np.isclose(yd, x / (1 - ratio), rtol=RTOL, atol=ATOL)
    if not (kept | (yd == 0)).all():
        return "Dropout output has elements that are neither 0 nor x / (1 - ratio)"
    dropped = (~kept).mean()
    if abs(dropped - ratio) > 0.35:
        return f"Dropout dropped {dropped:.2f} of the elements for a ratio of {ratio}"
    nonzero = x != 0  # a zero input is 0 whether kept or dropped
    if len(got) > 1 and not np.array_equal(got[1][nonzero], kept[nonzero]):
        return "Dropout mask disagrees with the output"
    return None


def first_line(text):
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:400]
    return ""


def run_test(args, test_dir, work_root):
    name = os.path.basename(test_dir)
    data_dir = os.path.join(test_dir, "test_data_set_0")
    inputs = sorted((f for f in os.listdir(data_dir) if f.startswith("input_")),
                    key=lambda f: int(f[6:-3]))
    expected = sorted((f for f in os.listdir(data_dir) if f.startswith("output_")),
                      key=lambda f: int(f[7:-3]))
    model = onnx.load(os.path.join(test_dir, "model.onnx"), load_external_data=False)
    ops = sorted({n.op_type for n in model.graph.node})
    out_names = [o.name for o in model.graph.output]
    out_dir = os.path.join(work_root, name)
    shutil.rmtree(out_dir, ignore_errors=True)
    cmd = [args.kiln, "run", os.path.join(test_dir, "model.onnx"), "-o", out_dir,
           "--cache", os.path.join(work_root, ".kiln-cache"), "--target", args.target,
           "-O", str(args.opt)]
    for f in inputs:
        cmd += ["-i", os.path.join(data_dir, f)]
    start = time.monotonic()
    result = {"test": name, "ops": ops}
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, errors="replace",
                              timeout=args.timeout, start_new_session=True)
    except subprocess.TimeoutExpired:
        result.update(status="timeout", message=f"no answer within {args.timeout} s")
        return result
    finally:
        result["seconds"] = round(time.monotonic() - start, 3)
    msg = first_line(proc.stderr)
    if proc.returncode < 0:
        sig = signal.Signals(-proc.returncode).name
        result.update(status="crash", message=f"killed by {sig}: {msg}")
    elif proc.returncode not in (0, 1):
        result.update(status="crash", message=f"exit code {proc.returncode}: {msg}")
    elif proc.returncode == 1:
        if "building the generated library failed" in proc.stderr:
            result.update(status="build_error", message=msg)
        elif "run failed" in proc.stderr or "create failed" in proc.stderr:
            result.update(status="wrong", message=msg)
        elif not msg.startswith("kiln: "):
            result.update(status="crash", message=f"exit 1 without kiln's error line: {msg}")
        else:
            result.update(status="unsupported", message=msg[len("kiln: "):])
    else:
        problems = []
        outputs = []
        for k, f in enumerate(expected):
            want = load_pb(os.path.join(data_dir, f))
            oname = out_names[k] if k < len(out_names) else f"output {k}"
            if want is None:
                problems.append(f"output '{oname}': expected value is not a plain tensor")
                continue
            path = os.path.join(out_dir, sanitize(oname) + ".npy")
            if not os.path.isfile(path):
                problems.append(f"output '{oname}': {os.path.basename(path)} was not written")
                continue
            try:
                got = np.load(path, allow_pickle=False)
            except Exception as e:  # noqa: BLE001
                problems.append(f"output '{oname}': unreadable .npy ({e})")
                continue
            outputs.append((got, want))
            why = compare(oname, got, want)
            if why:
                problems.append(why)
        if RANDOM_TESTS.match(name) and len(outputs) == len(expected):
            why = check_random(name, data_dir, [g for g, _ in outputs], [w for _, w in outputs])
            result.update(status="wrong" if why else "random",
                          message=why or "exempt: numpy's random draws; properties hold")
        elif problems:
            result.update(status="wrong", message="; ".join(problems)[:600])
        else:
            result.update(status="pass", message="")
    if result["status"] == "pass" and not args.keep:
        shutil.rmtree(out_dir, ignore_errors=True)
    return result


def per_op_table(results):
    table = {}
    for r in results:
        for op in r["ops"]:
            row = table.setdefault(op, {s: 0 for s in STATUSES})
            row[r["status"]] += 1
    return dict(sorted(table.items()))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kiln", default=os.path.join(REPO, "build", "tools", "kiln", "kiln"))
    ap.add_argument("--node-dir", default=os.path.join(REPO, ".cache", "onnx-node-tests", "node"))
    ap.add_argument("--work", help="scratch folder (default: a temporary folder)")
    ap.add_argument("--report", help="write the JSON report here")
    ap.add_argument("--filter", help="only tests whose name matches this regex (search)")
    ap.add_argument("--every", type=int, default=1, help="only every Nth test (a sample)")
    ap.add_argument("-j", "--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("--target", default="host")
    ap.add_argument("-O", dest="opt", type=int, default=3)
    ap.add_argument("--keep", action="store_true", help="keep outputs of passing tests")
    ap.add_argument("--verbose", action="store_true", help="also print passing tests")
    args = ap.parse_args()

    if not os.access(args.kiln, os.X_OK):
        sys.exit(f"run_node_tests: {args.kiln} is not an executable; build kiln first")
    if not os.path.isdir(args.node_dir):
        sys.exit(f"run_node_tests: {args.node_dir} is missing; run scripts/gen_node_tests.sh")
    tests = sorted(d for d in os.listdir(args.node_dir)
                   if os.path.isfile(os.path.join(args.node_dir, d, "model.onnx")))
    if args.filter:
        tests = [t for t in tests if re.search(args.filter, t)]
    tests = tests[::max(args.every, 1)]
    if not tests:
        sys.exit("run_node_tests: no tests selected")

    work = args.work or tempfile.mkdtemp(prefix="kiln-conformance.")
    os.makedirs(work, exist_ok=True)
    results = []
    start = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(args.jobs, 1)) as pool:
        futures = {pool.submit(run_test, args, os.path.join(args.node_dir, t), work): t
                   for t in tests}
        for fut in concurrent.futures.as_completed(futures):
            r = fut.result()
            results.append(r)
            if r["status"] != "pass" or args.verbose:
                print(f"{r['status']:<12} {r['test']:<55} {r['message']}", flush=True)
    results.sort(key=lambda r: r["test"])
    counts = {s: sum(r["status"] == s for r in results) for s in STATUSES}
    failed = sum(counts[s] for s in FAILING)
    table = per_op_table(results)
    if args.report:
        report = {"kiln": args.kiln, "node_dir": os.path.abspath(args.node_dir),
                  "target": args.target, "opt": args.opt, "rtol": RTOL, "atol": ATOL,
                  "total": len(results), "counts": counts, "passed": counts["pass"],
                  "failed": failed, "seconds": round(time.monotonic() - start, 1),
                  "per_op": table, "tests": results}
        with open(args.report, "w") as f:
            json.dump(report, f, indent=1, sort_keys=True)
            f.write("\n")
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)
    print("counts: " + ", ".join(f"{s} {counts[s]}" for s in STATUSES) +
          f" ({len(results)} tests, {time.monotonic() - start:.0f} s)")
    print(f"conformance: {counts['pass']} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
