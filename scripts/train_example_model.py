#!/usr/bin/python3
"""Trains kiln's bundled example model: a small CNN that names the shape in a 28x28 image.

Usage: /usr/bin/python3 scripts/train_example_model.py [OUT_DIR]   (default: <repo>/models)
Writes shapes_cnn.onnx (opset 13, input "image" f32[1,1,28,28], output "logits" f32[1,K]),
shapes_labels.txt (one label per line, in logit order), example_triangle.npy and
example_triangle.pb (the same f32[1,1,28,28] image as an onnx.TensorProto named "image").

The task is synthetic and seeded: filled circle, hollow ring, filled square, filled triangle
and a plus-shaped cross, drawn at random position, size, rotation, contrast and noise.
Only ops every compiler supports: Conv, Relu, MaxPool, Flatten, Gemm. CPU, about a minute.
"""
import math
import os
import sys
import time

import numpy as np
import torch

LABELS = ["circle", "ring", "square", "triangle", "cross"]
SIZE = 28
TRAIN_N, TEST_N, EPOCHS, BATCH = 20000, 4000, 10, 64


def draw(kind, rng, r=None, cx=None, cy=None, theta=None):
    """One SIZE x SIZE float32 image of shape `kind` in [0, 1]; unset geometry is random."""
    yy, xx = np.mgrid[0:SIZE, 0:SIZE].astype(np.float32) + 0.5
    r = rng.uniform(6.0, 11.5) if r is None else r
    cx = rng.uniform(r + 1.0, SIZE - r - 1.0) if cx is None else cx
    cy = rng.uniform(r + 1.0, SIZE - r - 1.0) if cy is None else cy
    theta = rng.uniform(0.0, 2.0 * math.pi) if theta is None else theta
    dx, dy = xx - cx, yy - cy
    # Coordinates in the shape's rotated frame.
    u = dx * math.cos(theta) + dy * math.sin(theta)
    v = -dx * math.sin(theta) + dy * math.cos(theta)
    dist = np.sqrt(dx * dx + dy * dy)
    if kind == "circle":
        mask = dist <= r
    elif kind == "ring":
        t = rng.uniform(1.5, 2.5)
        mask = (dist <= r) & (dist >= r - t)
    elif kind == "square":
        h = r / math.sqrt(2.0) * rng.uniform(1.0, 1.3)
        mask = (np.abs(u) <= h) & (np.abs(v) <= h)
    elif kind == "triangle":
        # Equilateral triangle inscribed in radius r: inside all three edge half-planes.
        mask = np.ones_like(u, dtype=bool)
        for k in range(3):
            a = 2.0 * math.pi * k / 3.0
            mask &= (u * math.cos(a) + v * math.sin(a)) <= r / 2.0
    elif kind == "cross":
        t = r * rng.uniform(0.18, 0.3)
        mask = ((np.abs(u) <= t) & (np.abs(v) <= r)) | ((np.abs(v) <= t) & (np.abs(u) <= r))
    else:
        raise ValueError(kind)
    background = rng.uniform(0.0, 0.25)
    foreground = rng.uniform(0.6, 1.0)
    img = np.where(mask, foreground, background).astype(np.float32)
    img += rng.normal(0.0, rng.uniform(0.02, 0.12), img.shape).astype(np.float32)
    return np.clip(img, 0.0, 1.0)


def make_dataset(n, rng):
    labels = rng.integers(0, len(LABELS), size=n)
    images = np.stack([draw(LABELS[k], rng) for k in labels])[:, None, :, :]
    return torch.from_numpy(images), torch.from_numpy(labels.astype(np.int64))


class ShapesCNN(torch.nn.Module):
    def __init__(self, classes):
        super().__init__()
        self.features = torch.nn.Sequential(
            torch.nn.Conv2d(1, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
            torch.nn.Conv2d(8, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2))
        self.classifier = torch.nn.Sequential(
            torch.nn.Flatten(), torch.nn.Linear(16 * 7 * 7, 32), torch.nn.ReLU(),
            torch.nn.Linear(32, classes))

    def forward(self, x):
        return self.classifier(self.features(x))


def accuracy(model, images, labels):
    with torch.no_grad():
        return (model(images).argmax(1) == labels).float().mean().item()


def main():
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(repo, "models")
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    torch.set_num_threads(1)  # single-threaded reductions keep training reproducible
    torch.use_deterministic_algorithms(True)
    start = time.time()
    train_x, train_y = make_dataset(TRAIN_N, np.random.default_rng(1))
    test_x, test_y = make_dataset(TEST_N, np.random.default_rng(2))  # held out, never trained on

    model = ShapesCNN(len(LABELS))
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    steps = EPOCHS * ((TRAIN_N + BATCH - 1) // BATCH)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=3e-3, total_steps=steps)
    loss_fn = torch.nn.CrossEntropyLoss()
    gen = torch.Generator().manual_seed(3)
    for epoch in range(EPOCHS):
        model.train()
        perm = torch.randperm(TRAIN_N, generator=gen)
        for i in range(0, TRAIN_N, BATCH):
            idx = perm[i:i + BATCH]
            opt.zero_grad()
            loss = loss_fn(model(train_x[idx]), train_y[idx])
            loss.backward()
            opt.step()
            sched.step()
        model.eval()
        print(f"epoch {epoch + 1}: loss {loss.item():.4f}, "
              f"held-out accuracy {accuracy(model, test_x, test_y):.4f}")
    model.eval()
    test_acc = accuracy(model, test_x, test_y)
    with torch.no_grad():
        pred = model(test_x).argmax(1)
    for k, name in enumerate(LABELS):
        sel = test_y == k
        print(f"  {name}: {(pred[sel] == k).float().mean().item():.4f} of {int(sel.sum())}")

    # The bundled example: a centred, upright triangle (random contrast and noise from its own
    # seed), which must be classified confidently.
    example = draw("triangle", np.random.default_rng(20241129), r=10.0, cx=14.0, cy=16.5,
                   theta=math.pi / 2)[None, None, :, :]
    with torch.no_grad():
        probs = torch.softmax(model(torch.from_numpy(example)), 1)[0]
    tri = LABELS.index("triangle")
    if probs.argmax().item() != tri or probs[tri].item() < 0.95:
        sys.exit(f"train_example_model: example triangle misclassified: {probs.tolist()}")

    onnx_path = os.path.join(out, "shapes_cnn.onnx")
    torch.onnx.export(model, (torch.from_numpy(example),), onnx_path + ".tmp",
                      input_names=["image"], output_names=["logits"], opset_version=13)
    os.replace(onnx_path + ".tmp", onnx_path)
    with open(os.path.join(out, "shapes_labels.txt"), "w") as f:
        f.write("\n".join(LABELS) + "\n")
    np.save(os.path.join(out, "example_triangle.npy"), example)
    import onnx.numpy_helper  # imported late: only needed for the TensorProto copy
    proto = onnx.numpy_helper.from_array(example, name="image")
    with open(os.path.join(out, "example_triangle.pb"), "wb") as f:
        f.write(proto.SerializeToString())

    with torch.no_grad():
        logits = model(torch.from_numpy(example))[0]
    print(f"held-out accuracy: {test_acc:.4f} on {TEST_N} images")
    print(f"example_triangle: P(triangle) = {probs[tri].item():.4f}; logits = "
          + ", ".join(f"{LABELS[i]} {logits[i].item():.4f}" for i in range(len(LABELS))))
    print(f"wrote {onnx_path} ({os.path.getsize(onnx_path)} bytes) in {time.time() - start:.0f} s")


if __name__ == "__main__":
    main()
