// Times ONNX Runtime (onnxruntime-node) on one model with seeded inputs; prints one JSON line:
// {"latency_ms":{"min":..,"median":..,"p90":..},"first_run_ms":..,"threads":..,"iters":..}
// Usage: node bench/ort_bench.js MODEL [--threads N] [--iters N] [--warmup N] [--shape NAME=d0,d1,...]
//            [--profile-prefix PREFIX]
// --profile-prefix: ONNX Runtime's own profiler on (per-node kernel times, written to
// PREFIX_<date>.json; bench/compare_layers.py reads it). Profiling adds overhead to the figures.
// Dynamic dims need --shape; inputs are float32 (or int64) filled from a fixed-seed generator.
'use strict';
const path = require('path');
const ort = require(path.join(__dirname, '..', 'node_modules', 'onnxruntime-node'));

function parseArgs(argv) {
  const a = { threads: 1, iters: 20, warmup: 3, shapes: {}, model: null, profilePrefix: null };
  for (let i = 0; i < argv.length; ++i) {
    const v = argv[i];
    if (v === '--threads') a.threads = Number(argv[++i]);
    else if (v === '--iters') a.iters = Number(argv[++i]);
    else if (v === '--warmup') a.warmup = Number(argv[++i]);
    else if (v === '--profile-prefix') a.profilePrefix = argv[++i];
    else if (v === '--shape') {
      const [name, dims] = argv[++i].split('=');
      a.shapes[name] = dims === '' ? [] : dims.split(',').map(Number);
    } else a.model = v;
  }
  if (!a.model) throw new Error('usage: ort_bench.js MODEL [--threads N] [--iters N] [--warmup N] [--shape NAME=dims]');
  return a;
}

// xorshift32: the same inputs on every run.
function filler(seed) {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0;
    return s / 4294967296 - 0.5;
  };
}

function quantile(sorted, q) {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * (sorted.length - 1) + 0.5))];
}

async function main() {
  const a = parseArgs(process.argv.slice(2));
  const options = { intraOpNumThreads: a.threads, interOpNumThreads: 1, graphOptimizationLevel: 'all' };
  if (a.profilePrefix) Object.assign(options, { enableProfiling: true, profileFilePrefix: a.profilePrefix });
  const session = await ort.InferenceSession.create(a.model, options);
  const next = filler(1234);
  const feeds = {};
  for (const name of session.inputNames) {
    const meta = session.inputMetadata ? session.inputMetadata.find((m) => m.name === name) : null;
    let dims = a.shapes[name];
    if (!dims && meta && meta.shape) dims = meta.shape.map((d) => (typeof d === 'number' ? d : NaN));
    if (!dims || dims.some((d) => !Number.isInteger(d) || d < 0))
      throw new Error(`input '${name}' has dynamic dims; pass --shape ${name}=d0,d1,...`);
    const count = dims.reduce((x, y) => x * y, 1);
    const type = meta && meta.type ? meta.type : 'float32';
    if (type === 'int64') feeds[name] = new ort.Tensor('int64', BigInt64Array.from({ length: count }, () => 1n), dims);
    else feeds[name] = new ort.Tensor('float32', Float32Array.from({ length: count }, next), dims);
  }
  let t = process.hrtime.bigint();
  await session.run(feeds);
  const firstRun = Number(process.hrtime.bigint() - t) / 1e6;
  for (let i = 0; i < a.warmup; ++i) await session.run(feeds);
  const times = [];
  for (let i = 0; i < a.iters; ++i) {
    t = process.hrtime.bigint();
    await session.run(feeds);
    times.push(Number(process.hrtime.bigint() - t) / 1e6);
  }
  if (a.profilePrefix) session.endProfiling();
  times.sort((x, y) => x - y);
  console.log(JSON.stringify({
    latency_ms: { min: times[0], median: quantile(times, 0.5), p90: quantile(times, 0.9) },
    first_run_ms: firstRun, threads: a.threads, iters: a.iters,
  }));
}

main().catch((e) => {
  console.error(`ort_bench: ${String(e.message || e).split('\n')[0]}`);
  process.exit(1);
});
