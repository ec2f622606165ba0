#!/usr/bin/python3
"""Runs one public model through `kiln run` and ONNX Runtime on the same seeded inputs.

Usage: /usr/bin/python3 tests/models/compare_ort.py KILN MODELS_DIR NAME [--seed S] [--work DIR]
NAME is a key of check_model.MODELS. Every output must reach cosine similarity >= 0.99999 with
ONNX Runtime's and a max abs error <= 1e-4 x max |ONNX Runtime output| (or the model's
ABS_ERR_FLOOR, where set). Prints one line per
output with the figures; exits 1 when any output misses either bound or either side fails.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_model import MODELS, REPO  # noqa: E402

COSINE_MIN = 0.99999
REL_ERR_MAX = 1e-4
NP_DTYPES = {"f32": np.float32, "f64": np.float64, "i64": np.int64, "i32": np.int32}


def document_image(rng, shape):
    """A synthetic page: dark glyph-like strokes in lines on a light background, normalized as
    PP-OCR expects. Random noise gives the text detector an all-but-zero probability map whose
    saturated sigmoid tails say nothing; a page gives it text to find."""
    n, c, h, w = shape
    page = np.full((n, h, w), 235.0) + rng.normal(0, 6, (n, h, w))
    for b in range(n):
        y = int(rng.integers(10, 30))
        while y < h - 30:
            line_h = int(rng.integers(12, 28))
            x = int(rng.integers(10, 60))
            while x < w - 40:
                word = int(rng.integers(20, 120))
                for gx in range(x, min(x + word, w - 10), int(rng.integers(6, 11))):
                    gw, gh = int(rng.integers(2, 6)), int(rng.integers(line_h // 2, line_h))
                    page[b, y + line_h - gh:y + line_h, gx:gx + gw] = rng.uniform(10, 60)
                x += word + int(rng.integers(10, 30))
            y += line_h + int(rng.integers(12, 40))
    mean, std = np.array([0.485, 0.456, 0.406]), np.array([0.229, 0.224, 0.225])
    img = np.repeat(page[:, None] / 255.0, c, axis=1)
    return (img - mean[None, :c, None, None]) / std[None, :c, None, None]


GENERATORS = {"ppocr_v4_det": document_image}
# An absolute error every output may have whatever its scale: the VAD's speech probability on
# noise is ~4e-4, where 1e-4 relative is 4e-8, below the float noise of its LSTM (measured
# 4.5e-8 at cosine 1.0); 1e-6 of a probability decides nothing.
ABS_ERR_FLOOR = {"silero_vad_v5_16k": 1e-6, "silero_vad_v5_8k": 1e-6}
# Inputs that select behaviour rather than carry data: a fixed value, not a random one.
FIXED = {("silero_vad_v5_16k", "sr"): 16000, ("silero_vad_v5_8k", "sr"): 8000}


def make_inputs(model, inputs, seed, folder):
    rng = np.random.default_rng(seed)
    files = {}
    for name, (dtype, shape) in inputs.items():
        if (model, name) in FIXED:
            files[name] = os.path.join(folder, f"input_{len(files)}.npy")
            np.save(files[name], np.full(shape, FIXED[(model, name)], NP_DTYPES[dtype]))
            continue
        if dtype not in ("f32", "f64"):
            sys.exit(f"compare_ort: no generator for {dtype} input '{name}'")
        gen = GENERATORS.get(model, lambda r, s: r.standard_normal(s))
        data = gen(rng, shape).astype(NP_DTYPES[dtype])
        files[name] = os.path.join(folder, f"input_{len(files)}.npy")
        np.save(files[name], data)
    return files


def run(cmd, what):
    start = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, errors="replace")
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        sys.exit(f"compare_ort: {what} failed (exit {proc.returncode}): {' | '.join(tail)}")
    return time.monotonic() - start


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("kiln")
    ap.add_argument("models_dir")
    ap.add_argument("name", choices=sorted(MODELS))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--work", help="keep inputs and outputs here (default: a temporary folder)")
    ap.add_argument("--opt", default="3", help="kiln's -O level")
    ap.add_argument("--kiln-flags", default="",
                    help="more kiln run flags, one string (e.g. '--amx exact')")
    args = ap.parse_args()

    file, flags, inputs, outputs, _ = MODELS[args.name]
    model = os.path.join(args.models_dir, file)
    if not os.path.isfile(model):
        sys.exit(f"compare_ort: {model} is missing; run scripts/gen_models.sh")
    work = args.work or tempfile.mkdtemp(prefix=f"kiln-ort-{args.name}.")
    os.makedirs(work, exist_ok=True)
    try:
        files = make_inputs(args.name, inputs, args.seed, work)
        kiln_out, ort_out = os.path.join(work, "kiln"), os.path.join(work, "ort")
        cmd = [args.kiln, "run", model, "-o", kiln_out, "--cache", os.path.join(work, "cache"),
               "-O", args.opt] + flags + args.kiln_flags.split()
        for name, path in files.items():
            cmd += ["-i", f"{name}={path}"]
        t_kiln = run(cmd, "kiln run")
        t_ort = run(["node", os.path.join(REPO, "tests", "models", "ort_run.js"), model, ort_out] +
                    [f"{n}={p}" for n, p in files.items()], "ONNX Runtime")
        problems = []
        for name in outputs:
            fname = "".join(c if c.isalnum() or c in "._-" else "_" for c in name) + ".npy"
            got = np.load(os.path.join(kiln_out, fname)).astype(np.float64).reshape(-1)
            ref = np.load(os.path.join(ort_out, fname)).astype(np.float64).reshape(-1)
            if got.shape != ref.shape:
                problems.append(f"'{name}': {got.size} elements vs ONNX Runtime's {ref.size}")
                continue
            denom = np.linalg.norm(got) * np.linalg.norm(ref)
            cosine = float(got @ ref / denom) if denom > 0 else float(np.array_equal(got, ref))
            max_err = float(np.max(np.abs(got - ref))) if got.size else 0.0
            scale = float(np.max(np.abs(ref))) if ref.size else 0.0
            bound = max(REL_ERR_MAX * scale, ABS_ERR_FLOOR.get(args.name, 0.0))
            ok = cosine >= COSINE_MIN and max_err <= bound
            print(f"compare_ort {args.name} '{name}': cosine {cosine:.8f}, max abs err "
                  f"{max_err:.3g} (bound {bound:.3g}) {'ok' if ok else 'FAIL'}")
            if not ok:
                problems.append(f"'{name}' misses the bounds")
        print(f"compare_ort {args.name}: kiln run {t_kiln:.1f} s (compile included), "
              f"ONNX Runtime {t_ort:.1f} s (process)")
        if problems:
            sys.exit(f"compare_ort {args.name}: FAIL: {'; '.join(problems)}")
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
