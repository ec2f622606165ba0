// Runs a model with ONNX Runtime (onnxruntime-node) on .npy inputs and writes its outputs as .npy.
// Usage: node tests/models/ort_run.js MODEL OUT_DIR [--threads N] NAME=INPUT.npy ...
// Output files are OUT_DIR/<output name>.npy with every character outside [A-Za-z0-9._-]
// replaced by '_', the same naming `kiln run` uses. Exits 1 with one line on any error.
'use strict';
const fs = require('fs');
const path = require('path');

const repo = path.resolve(__dirname, '..', '..');
let ort;
try {
  ort = require(path.join(repo, 'node_modules', 'onnxruntime-node'));
} catch (e) {
  console.error(`ort_run: cannot load onnxruntime-node (${e.message}); run scripts/setup.sh`);
  process.exit(1);
}

// .npy descr <-> ORT tensor type and typed array.
const TYPES = {
  '<f4': ['float32', Float32Array], '<f8': ['float64', Float64Array],
  '<i8': ['int64', BigInt64Array], '<i4': ['int32', Int32Array], '<i2': ['int16', Int16Array],
  '|i1': ['int8', Int8Array], '|u1': ['uint8', Uint8Array], '<u2': ['uint16', Uint16Array],
  '<u4': ['uint32', Uint32Array], '<u8': ['uint64', BigUint64Array], '|b1': ['bool', Uint8Array],
};

function readNpy(file) {
  const buf = fs.readFileSync(file);
  if (buf.length < 10 || buf.toString('latin1', 0, 6) !== '\x93NUMPY') throw new Error(`${file}: not a .npy file`);
  const major = buf[6];
  const hlen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const start = major === 1 ? 10 : 12;
  const header = buf.toString('latin1', start, start + hlen);
  const descr = /'descr':\s*'([^']+)'/.exec(header);
  const order = /'fortran_order':\s*(True|False)/.exec(header);
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header);
  if (!descr || !order || !shape) throw new Error(`${file}: unreadable .npy header`);
  if (order[1] === 'True') throw new Error(`${file}: Fortran-ordered arrays are not supported`);
  const t = TYPES[descr[1]];
  if (!t) throw new Error(`${file}: element type ${descr[1]} is not supported`);
  const dims = shape[1].split(',').map((s) => s.trim()).filter((s) => s).map(Number);
  const count = dims.reduce((a, b) => a * b, 1);
  const offset = start + hlen;
  const bytes = buf.subarray(offset, offset + count * t[1].BYTES_PER_ELEMENT);
  if (bytes.length !== count * t[1].BYTES_PER_ELEMENT) throw new Error(`${file}: truncated data`);
  const data = new t[1](count);
  new Uint8Array(data.buffer).set(bytes);
  return new ort.Tensor(t[0], t[0] === 'bool' ? Uint8Array.from(data) : data, dims);
}

function writeNpy(file, tensor) {
  const entry = Object.entries(TYPES).find(([, t]) => t[0] === tensor.type);
  if (!entry) throw new Error(`output type ${tensor.type} cannot be written as .npy`);
  const dims = tensor.dims.map(Number);
  const shape = dims.length === 1 ? `(${dims[0]},)` : `(${dims.join(', ')})`;
  let header = `{'descr': '${entry[0]}', 'fortran_order': False, 'shape': ${shape}, }`;
  const total = 10 + header.length + 1;
  header += ' '.repeat((64 - (total % 64)) % 64) + '\n';
  const head = Buffer.alloc(10);
  head.write('\x93NUMPY', 0, 'latin1');
  head[6] = 1;
  head[7] = 0;
  head.writeUInt16LE(header.length, 8);
  const data = tensor.data;
  const body = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  fs.writeFileSync(file, Buffer.concat([head, Buffer.from(header, 'latin1'), body]));
}

async function main() {
  const args = process.argv.slice(2);
  let threads = 1;
  const positional = [];
  const feeds = {};
  for (let i = 0; i < args.length; ++i) {
    if (args[i] === '--threads') threads = Number(args[++i]);
    else if (args[i].includes('=')) {
      const at = args[i].indexOf('=');
      feeds[args[i].slice(0, at)] = readNpy(args[i].slice(at + 1));
    } else positional.push(args[i]);
  }
  if (positional.length !== 2) throw new Error('usage: ort_run.js MODEL OUT_DIR [--threads N] NAME=FILE.npy ...');
  const [model, outDir] = positional;
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: threads, interOpNumThreads: 1, graphOptimizationLevel: 'all',
  });
  const results = await session.run(feeds);
  fs.mkdirSync(outDir, { recursive: true });
  for (const name of session.outputNames)
    writeNpy(path.join(outDir, name.replace(/[^A-Za-z0-9._-]/g, '_') + '.npy'), results[name]);
}

main().catch((e) => {
  console.error(`ort_run: ${String(e.message || e).split('\n')[0]}`);
  process.exit(1);
});
