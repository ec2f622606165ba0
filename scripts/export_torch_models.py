#!/usr/bin/python3
"""Exports kiln's public test models from torch/torchvision (random, seeded weights) to ONNX.

Usage: /usr/bin/python3 scripts/export_torch_models.py OUT_DIR [NAME]...
NAME: resnet50, mobilenetv2, bert (the CI set, the default), googlenet, densenet121, squeezenet.
Writes OUT_DIR/<name>.onnx for each requested model, skipping files that
already exist. Each file is written to a temporary name and renamed when complete.
"""
import os
import sys

import torch
import torchvision


def build_resnet50():
    model = torchvision.models.resnet50(weights=None)
    return model, torch.randn(1, 3, 224, 224), 13


def build_mobilenetv2():
    model = torchvision.models.mobilenet_v2(weights=None)
    return model, torch.randn(1, 3, 224, 224), 13


def build_googlenet():
    model = torchvision.models.googlenet(weights=None, aux_logits=False, init_weights=True)
    return model, torch.randn(1, 3, 224, 224), 13


def build_densenet121():
    return torchvision.models.densenet121(weights=None), torch.randn(1, 3, 224, 224), 13


def build_squeezenet():
    return torchvision.models.squeezenet1_1(weights=None), torch.randn(1, 3, 224, 224), 13


class BertLikeEncoder(torch.nn.Module):
    """Six separate post-norm TransformerEncoderLayers (distinct weights), batch first."""

    def __init__(self, layers=6, d_model=768, heads=12, ff=3072):
        super().__init__()
        self.layers = torch.nn.ModuleList([
            torch.nn.TransformerEncoderLayer(d_model, heads, dim_feedforward=ff, batch_first=True)
            for _ in range(layers)
        ])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def build_bert():
    return BertLikeEncoder(), torch.randn(1, 128, 768), 17


BUILDERS = {
    # name: (builder, input name, output name)
    "resnet50": (build_resnet50, "input", "logits"),
    "mobilenetv2": (build_mobilenetv2, "input", "logits"),
    "bert": (build_bert, "hidden_in", "hidden_out"),
    # Branchy CNNs for the memory-planning figures (bench/memory_figures.py), not in CI.
    "googlenet": (build_googlenet, "input", "logits"),
    "densenet121": (build_densenet121, "input", "logits"),
    "squeezenet": (build_squeezenet, "input", "logits"),
}


def export(name, out_dir):
    path = os.path.join(out_dir, name + ".onnx")
    if os.path.exists(path):
        print(f"export_torch_models: {path} exists, skipping")
        return
    builder, in_name, out_name = BUILDERS[name]
    torch.manual_seed(0)
    model, example, opset = builder()
    model.eval()
    tmp = path + ".tmp"
    # Gradients stay enabled: under no_grad, TransformerEncoderLayer takes a fused fast path
    # that has no ONNX export.
    torch.onnx.export(model, (example,), tmp, input_names=[in_name], output_names=[out_name],
                      opset_version=opset, do_constant_folding=True)
    os.replace(tmp, path)
    print(f"export_torch_models: wrote {path} ({os.path.getsize(path) >> 20} MiB, opset {opset})")


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    out_dir = sys.argv[1]
    names = sys.argv[2:] or ["resnet50", "mobilenetv2", "bert"]
    for n in names:
        if n not in BUILDERS:
            sys.exit(f"export_torch_models: unknown model '{n}' (known: {', '.join(BUILDERS)})")
    os.makedirs(out_dir, exist_ok=True)
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    for n in names:
        export(n, out_dir)


if __name__ == "__main__":
    main()
