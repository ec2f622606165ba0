#!/usr/bin/python3
"""Imports one public model with `kiln inspect --json` and checks its signature is static and right.

Usage: /usr/bin/python3 tests/models/check_model.py KILN MODELS_DIR NAME
NAME is a key of MODELS below; MODELS_DIR holds the files scripts/gen_models.sh writes (the
bundled example lives in the repo's models/ and is found there whatever MODELS_DIR says).
Checks the model as given and a copy without its declared output shapes and value_info, so the
shapes must come from kiln's own inference. Prints what it checked; exits 1 with one line per
problem on failure.
"""
import json
import os
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# name: (file, --shape flags, {input: (dtype, shape)}, {output: (dtype, shape)}, ops that must
# appear; only ops the importer never rewrites into others).
MODELS = {
    "resnet50": ("resnet50.onnx", [], {"input": ("f32", [1, 3, 224, 224])},
                 {"logits": ("f32", [1, 1000])}, ["Conv"]),
    "mobilenetv2": ("mobilenetv2.onnx", [], {"input": ("f32", [1, 3, 224, 224])},
                    {"logits": ("f32", [1, 1000])}, ["Conv"]),
    "bert": ("bert.onnx", [], {"hidden_in": ("f32", [1, 128, 768])},
             {"hidden_out": ("f32", [1, 128, 768])}, ["MatMul"]),
    "ppocr_v4_det": ("ppocr_v4_det.onnx", ["--shape", "x=1,3,640,640"],
                     {"x": ("f32", [1, 3, 640, 640])},
                     {"sigmoid_0.tmp_0": ("f32", [1, 1, 640, 640])}, ["Conv"]),
    # PP-OCRv4 recognition (same npm package as det): a 48-pixel text line, 6625 classes.
    "ppocr_v4_rec": ("ppocr_v4_rec.onnx", ["--shape", "x=1,3,48,320"],
                     {"x": ("f32", [1, 3, 48, 320])},
                     {"softmax_11.tmp_0": ("f32", [1, 40, 6625])}, ["Conv"]),
    # Silero VAD v5 (npm @ricky0123/vad-web): an If on the sample rate selects one of two
    # large branches; compiled once per rate with the window that rate uses.
    "silero_vad_v5_16k": ("silero_vad_v5.onnx",
                          ["--shape", "input=1,512", "--shape", "state=2,1,128"],
                          {"input": ("f32", [1, 512]), "state": ("f32", [2, 1, 128]),
                           "sr": ("i64", [])},
                          {"output": ("f32", [1, 1]), "stateN": ("f32", [2, 1, 128])}, ["If"]),
    "silero_vad_v5_8k": ("silero_vad_v5.onnx",
                         ["--shape", "input=1,256", "--shape", "state=2,1,128"],
                         {"input": ("f32", [1, 256]), "state": ("f32", [2, 1, 128]),
                          "sr": ("i64", [])},
                         {"output": ("f32", [1, 1]), "stateN": ("f32", [2, 1, 128])}, ["If"]),
    "shapes_cnn": (os.path.join(REPO, "models", "shapes_cnn.onnx"), [],
                   {"image": ("f32", [1, 1, 28, 28])}, {"logits": ("f32", [1, 5])}, ["Conv"]),
}


def check_signature(side, got, want, problems):
    by_name = {v.get("name"): v for v in got}
    if sorted(by_name) != sorted(want):
        problems.append(f"{side}: names {sorted(by_name)}, expected {sorted(want)}")
        return
    for name, (dtype, shape) in want.items():
        v = by_name[name]
        if v.get("dtype") != dtype or v.get("shape") != shape:
            problems.append(f"{side} '{name}': {v.get('dtype')} {v.get('shape')}, "
                            f"expected {dtype} {shape}")
        elif not all(isinstance(d, int) for d in v["shape"]):
            problems.append(f"{side} '{name}': shape {v['shape']} is not fully static")


def main():
    if len(sys.argv) != 4 or sys.argv[3] not in MODELS:
        sys.exit(__doc__ + f"\nknown models: {', '.join(MODELS)}")
    kiln, models_dir, name = sys.argv[1:]
    file, flags, inputs, outputs, ops = MODELS[name]
    path = os.path.join(models_dir, file)
    if not os.path.isfile(path):
        sys.exit(f"check_model: {path} is missing; run scripts/gen_models.sh")
    problems = []
    info = inspect(kiln, path, flags, "", problems)
    # The exporters declare output shapes; kiln must find them itself, so check again with the
    # declared output shapes and intermediate value_info removed.
    with tempfile.TemporaryDirectory(prefix="kiln-check-model.") as tmp:
        stripped = os.path.join(tmp, os.path.basename(path))
        strip_declared_shapes(path, stripped)
        inspect(kiln, stripped, flags, " (declared shapes removed)", problems)
    if problems:
        for p in problems:
            print(f"check_model {name}: {p}")
        sys.exit(1)
    sig = ", ".join(f"{n} {d}{s}" for n, (d, s) in outputs.items())
    total = sum(info.get("op_histogram", {}).values())
    print(f"check_model {name}: ok: {total} nodes, outputs {sig}, also with declared shapes removed")


def strip_declared_shapes(src, dst):
    import onnx  # imported here: only this step needs python3-onnx
    model = onnx.load(src)
    del model.graph.value_info[:]
    for out in model.graph.output:
        out.type.tensor_type.ClearField("shape")
    onnx.save(model, dst)


def inspect(kiln, path, flags, variant, problems):
    """Runs `kiln inspect --json` and appends what does not match MODELS[name] to problems."""
    name = sys.argv[3]
    _, _, inputs, outputs, ops = MODELS[name]
    cmd = [kiln, "inspect", path, "--json"] + flags
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        sys.exit(f"check_model: {' '.join(cmd)} exited {proc.returncode}: {proc.stderr.strip()}")
    try:
        info = json.loads(proc.stdout)
    except json.JSONDecodeError as e:
        sys.exit(f"check_model: kiln inspect --json printed invalid JSON: {e}")
    found = []
    check_signature("input", info.get("inputs", []), inputs, found)
    check_signature("output", info.get("outputs", []), outputs, found)
    if info.get("unresolved_dims"):
        found.append(f"unresolved dims: {info['unresolved_dims']}")
    histogram = info.get("op_histogram", {})
    for op in ops:
        if not histogram.get(op):
            found.append(f"op_histogram has no {op}: {histogram}")
    problems.extend(p + variant for p in found)
    return info


if __name__ == "__main__":
    main()
