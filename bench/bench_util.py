"""Helpers the bench/ scripts share: running kiln or node, finding a model by name, and the
arguments every per-step script takes."""
import argparse
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tests", "models"))
from check_model import MODELS  # noqa: E402


def run(tool, cmd):
    """cmd's stdout; on failure, exits with one line naming the tool, the command and its error."""
    proc = subprocess.run(cmd, capture_output=True, text=True, errors="replace")
    if proc.returncode != 0:
        sys.exit(f"{tool}: {' '.join(cmd[:3])} failed: {proc.stderr.strip()[-300:]}")
    return proc.stdout


def model_of(tool, name, models_dir):
    """(model path, kiln flags) for a name from tests/models/check_model.py or an .onnx path; exits
    with one line when the file is missing."""
    if name in MODELS:
        file, flags, _, _, _ = MODELS[name]
        model = file if os.path.isabs(file) else os.path.join(models_dir, file)
    else:
        model, flags = name, []
    if not os.path.isfile(model):
        sys.exit(f"{tool}: no model file {model} (scripts/gen_models.sh makes the public ones)")
    return model, list(flags)


def model_parser(doc, threads, top_help):
    """An argument parser with what the per-step scripts share: MODEL, --kiln, --models-dir,
    --threads (default `threads`), --iters, --top and --json."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("--kiln", default=os.path.join(REPO, "build", "tools", "kiln", "kiln"))
    ap.add_argument("--models-dir", default=os.path.join(REPO, ".cache", "models"))
    ap.add_argument("--threads", type=int, default=threads)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--top", type=int, default=0, help=top_help)
    ap.add_argument("--json", dest="json_out", help="write the rows here")
    return ap
