#!/usr/bin/python3
"""A/B of two versions of kiln's CPU GEMM and depthwise kernels on model shapes, in one process.

Usage: /usr/bin/python3 bench/kernel_ab.py [--base REV] [--b-rev REV] [--rounds R] [--threads T]
           [--shapes PRESET|M,N,K,act,r|p|dw:C,H,W,S ...] [--cold-mb MB] [--cxx CXX] [--opt 1|2|3]
           [--keep DIR]

A is kernels/cpu and kernels/ref at git revision --base (default HEAD), B the working tree's
(or those at --b-rev).
Both are compiled into one binary (their namespaces renamed kiln_cpu_A / kiln_cpu_B, kiln_ref_A /
kiln_ref_B), with the flags of generated code for x86-64-v4 (-O3, or --opt's level; -march=x86-64-v4
-ffp-contract=off). Each round times A and B on every shape, A first in even rounds and B first in
odd ones. Printed per shape: both medians (us and GFLOP/s), the median of the rounds' ratios B/A,
and whether the outputs are bit-identical. A shape is M,N,K,act,driver: act 0 (none) or 1
(Clip(0, 6)), both with a column bias; driver r (A read in place: gemm_f32_rowa_packed_b) or p (A
packed: gemm_f32_packed_b).
A shape dw:C,H,W,S is depthwise_conv2d_nhwc_f32 on [1, H, W, C]: 3x3, pad 1, stride S (1 or 2),
with bias and Clip(0, 6) (--cold-mb does not apply; preset mobilenetv2_dw has MobileNetV2's).

--cold-mb MB: the weights come from memory, as in a model bigger than the L3: each version
rotates over its own copies of its packed weights, MB in all. (With one rotation for both, the
second version would always read the copy the first had just brought into the cache: session 36
measured a change as 0.79-0.87x faster that way, and 0.87-1.11x with a rotation each.)

An in-model check of a kernel change is `kiln bench A --versus B --profile` (docs/artifact.md):
a kernel can win alone and lose in the model, where the ops before and after it share the caches.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HERE = os.path.join(REPO, "bench", "kernel_ab")

PRESETS = {
    # MobileNetV2's channels-last 1x1 convs (pixels x out x in; expansions with Clip).
    "mobilenetv2": [
        "12544,16,32,0,r", "12544,96,16,1,r", "3136,24,96,0,r", "3136,144,24,1,r",
        "3136,24,144,0,r", "784,32,144,0,r", "784,192,32,1,r", "784,32,192,0,r",
        "196,64,192,0,r", "196,384,64,1,r", "196,64,384,0,r", "196,96,384,0,r",
        "196,576,96,1,r", "196,96,576,0,r", "49,160,576,0,r", "49,960,160,1,r",
        "49,160,960,0,r", "49,320,960,0,r", "49,1280,320,1,r",
    ],
    # MobileNetV2's depthwise 3x3 convs (channels, height, width, stride; bias and Clip).
    "mobilenetv2_dw": [
        "dw:32,112,112,1", "dw:96,112,112,2", "dw:144,56,56,1", "dw:144,56,56,2",
        "dw:192,28,28,1", "dw:192,28,28,2", "dw:384,14,14,1", "dw:576,14,14,1",
        "dw:576,14,14,2", "dw:960,7,7,1",
    ],
    # The BERT-like encoder's products with constant weights (seq 128).
    "bert": ["128,768,768,0,p", "128,3072,768,0,p", "128,768,3072,0,p"],
    # One small shape of each driver (the test's).
    "smoke": ["49,96,300,1,r", "37,40,20,0,p"],
}

FLAGS = ["-std=c++17", "-march=x86-64-v4", "-ffp-contract=off", "-fno-exceptions"]


def fail(msg):
    print(f"kernel_ab: {msg}", file=sys.stderr)
    sys.exit(1)


def export_base(rev, dst):
    """kernels/cpu and kernels/ref at rev, as dst/kiln_cpu and dst/kiln_ref."""
    os.makedirs(dst)
    for sub, name in (("kernels/cpu", "kiln_cpu"), ("kernels/ref", "kiln_ref")):
        archive = subprocess.run(["git", "-C", REPO, "archive", rev, sub], capture_output=True)
        if archive.returncode != 0:
            fail(f"cannot read {sub} at '{rev}': {archive.stderr.decode(errors='replace').strip()}")
        subprocess.run(["tar", "-x", "-C", dst], input=archive.stdout, check=True)
        os.rename(os.path.join(dst, sub), os.path.join(dst, name))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--base", default="HEAD", help="git revision of version A (default HEAD)")
    ap.add_argument("--b-rev", help="git revision of version B (default: the working tree)")
    ap.add_argument("--shapes", nargs="+", default=["mobilenetv2"],
                    help="presets (" + ", ".join(PRESETS) + ") or M,N,K,act,r|p shapes")
    ap.add_argument("--rounds", type=int, default=11)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--cold-mb", type=int, default=0,
                    help="rotate each version over MB of weight copies (0: hot weights)")
    ap.add_argument("--cxx", default=os.environ.get("CXX", "g++"))
    ap.add_argument("--opt", default="3", choices=["1", "2", "3"],
                    help="-O level of both builds (default 3, as generated code; the test: 1)")
    ap.add_argument("--keep", help="build here and keep it (default: a temporary folder)")
    args = ap.parse_args()
    shapes = []
    for s in args.shapes:
        shapes += PRESETS.get(s, [s])
    for s in shapes:
        m = re.fullmatch(r"(\d+),(\d+),(\d+),([01]),([rp])", s)
        dw = re.fullmatch(r"dw:(\d+),(\d+),(\d+),([12])", s)
        if not (m or dw) or min(int((m or dw).group(i)) for i in (1, 2, 3)) < 1:
            fail(f"bad shape '{s}': want M,N,K,act,driver (act 0 or 1, driver r or p), "
                 "dw:C,H,W,S (S 1 or 2) or one of " + ", ".join(PRESETS))
    if args.rounds < 1 or args.threads < 1 or args.cold_mb < 0:
        fail("--rounds and --threads must be at least 1, --cold-mb at least 0")

    work = args.keep or tempfile.mkdtemp(prefix="kiln-kernel-ab-")
    try:
        base, tree = os.path.join(work, "A"), os.path.join(work, "B")
        for d in (base, tree):
            shutil.rmtree(d, ignore_errors=True)
        export_base(args.base, base)
        if args.b_rev:
            export_base(args.b_rev, tree)
        else:
            os.makedirs(tree)
            for name, sub in (("kiln_cpu", "kernels/cpu"), ("kiln_ref", "kernels/ref")):
                os.symlink(os.path.join(REPO, sub), os.path.join(tree, name))
        objs = []
        procs = []
        for tag, inc in (("A", base), ("B", tree)):
            obj = os.path.join(work, f"variant_{tag}.o")
            cmd = [args.cxx, f"-O{args.opt}", *FLAGS, f"-I{inc}", f"-DKAB_NS=kab_{tag}",
                   f"-Dkiln_cpu=kiln_cpu_{tag}", f"-Dkiln_ref=kiln_ref_{tag}", "-c",
                   os.path.join(HERE, "variant.cc"), "-o", obj]
            procs.append((tag, subprocess.Popen(cmd, stderr=subprocess.PIPE)))
            objs.append(obj)
        for tag, p in procs:
            _, err = p.communicate()
            if p.returncode != 0:
                fail(f"version {tag} does not compile:\n{err.decode(errors='replace')}")
        exe = os.path.join(work, "kernel_ab")
        subprocess.run([args.cxx, f"-O{args.opt}", *FLAGS, os.path.join(HERE, "main.cc"), *objs,
                        "-pthread", "-o", exe], check=True)
        b_name = f"kernels at {args.b_rev}" if args.b_rev else "the working tree"
        print(f"A: kernels at {args.base}; B: {b_name}; {args.rounds} rounds, "
              f"{args.threads} thread(s), weights " +
              (f"from memory ({args.cold_mb} MB of copies each)" if args.cold_mb else "hot"),
              flush=True)
        run = subprocess.run([exe, str(args.rounds), str(args.threads), str(args.cold_mb),
                              *shapes])
        return run.returncode
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
