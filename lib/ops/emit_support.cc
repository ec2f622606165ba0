// Helpers for emit facets: C types of dtypes, exact literals, kernel element types and
// compile-time inputs.
#include "emit_support.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace kiln {

std::string_view cTypeOf(DType t) {
  switch (t) {
    case DType::F32:
      return "float";
    case DType::F64:
      return "double";
    case DType::F16:
    case DType::BF16:
      return "uint16_t";
    case DType::I8:
      return "int8_t";
    case DType::I16:
      return "int16_t";
    case DType::I32:
      return "int32_t";
    case DType::I64:
      return "int64_t";
    case DType::U8:
      return "uint8_t";
    case DType::U16:
      return "uint16_t";
    case DType::U32:
      return "uint32_t";
    case DType::U64:
      return "uint64_t";
    case DType::Bool:
      return "bool";
    default:
      return "";
  }
}

std::string intListLiteral(const std::vector<int64_t>& values) {
  std::string s = "{";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i) s += ", ";
    // INT64_MIN cannot be written as a plain literal.
    if (values[i] == INT64_MIN)
      s += "(-9223372036854775807LL - 1)";
    else
      s += std::to_string(values[i]) +
           (values[i] > 2147483647 || values[i] < -2147483647 ? "LL" : "");
  }
  return s + "}";
}

std::string floatLiteral(float v) {
  if (std::isnan(v)) {
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    return fmt::format("kiln_ref::bits_to_float(0x{:08x}u)", bits);
  }
  if (std::isinf(v)) return v > 0 ? "INFINITY" : "(-INFINITY)";
  return fmt::format("{:a}f", v);
}

std::vector<int64_t> staticDims(const Value* v) {
  return v->shape().upperBoundDims();
}

int64_t staticNumel(const Value* v) {
  return *v->shape().upperBoundElements();
}

int64_t dimsProduct(const std::vector<int64_t>& d, size_t b, size_t e) {
  int64_t p = 1;
  for (size_t i = b; i < e && i < d.size(); ++i) p *= d[i];
  return p;
}

std::string_view kernelElemType(DType t) {
  switch (t) {
    case DType::F16:
      return "kiln_ref::f16_tag";
    case DType::BF16:
      return "kiln_ref::bf16_tag";
    default:
      return cTypeOf(t);
  }
}

Expected<std::string> valueKernelType(const Node& n, const Value* v, EmitContext& ctx) {
  std::string_view e = kernelElemType(v->dtype());
  if (e.empty())
    return ctx.unsupported(fmt::format("{} on {} tensors", n.opType(), dtypeName(v->dtype())));
  return std::string(e);
}

Expected<std::string> plainKernelType(const Node& n, const Value* v, EmitContext& ctx) {
  DType t = v->dtype();
  if (t == DType::F16 || t == DType::BF16 || cTypeOf(t).empty())
    return ctx.unsupported(fmt::format("{} on {} tensors", n.opType(), dtypeName(t)));
  return std::string(cTypeOf(t));
}

Expected<int64_t> elementBytes(const Node& n, const Value* v, EmitContext& ctx) {
  int bits = dtypeBits(v->dtype());
  if (bits <= 0 || bits % 8 != 0 || cTypeOf(v->dtype()).empty())
    return ctx.unsupported(fmt::format("{} on {} tensors (sub-byte or non-numeric elements)",
                                       n.opType(), dtypeName(v->dtype())));
  return int64_t(bits / 8);
}

std::optional<std::vector<int64_t>> constInts(EmitContext& ctx, const Node& n, size_t i) {
  if (i >= n.numInputs() || !n.input(i) || !isInteger(n.input(i)->dtype())) return std::nullopt;
  const Tensor* t = ctx.value(i);
  if (!t) return std::nullopt;
  return t->toInts();
}

std::optional<int64_t> axisIn(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) return std::nullopt;
  return axis < 0 ? axis + rank : axis;
}

bool SlidingWindow::valid() const {
  return rank >= 1 && int(kernel.size()) == rank && int(strides.size()) == rank &&
         int(dilations.size()) == rank && int(pads.size()) == 2 * rank;
}

SlidingWindow slidingWindowOf(const Node& n, const std::vector<int64_t>& kernel) {
  return slidingWindowOf(n, staticDims(n.input(0)), staticDims(n.output(0)), kernel);
}

SlidingWindow slidingWindowOf(const Node& n, const std::vector<int64_t>& x,
                              const std::vector<int64_t>& y, const std::vector<int64_t>& kernel) {
  SlidingWindow w;
  w.rank = int(x.size()) - 2;
  if (w.rank < 1 || y.size() != x.size()) return w;
  w.in.assign(x.begin() + 2, x.end());
  w.out.assign(y.begin() + 2, y.end());
  w.kernel = kernel;
  w.strides = n.attrInts("strides", std::vector<int64_t>(size_t(w.rank), 1));
  w.dilations = n.attrInts("dilations", std::vector<int64_t>(size_t(w.rank), 1));
  w.pads = n.attrInts("pads", std::vector<int64_t>(size_t(2 * w.rank), 0));
  std::string autoPad = n.attrString("auto_pad", "NOTSET");
  if (autoPad == "VALID") w.pads.assign(size_t(2 * w.rank), 0);
  if ((autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") && w.valid()) {
    for (int d = 0; d < w.rank; ++d) {
      int64_t total =
          (w.out[d] - 1) * w.strides[d] + (w.kernel[d] - 1) * w.dilations[d] + 1 - w.in[d];
      total = std::max<int64_t>(total, 0);
      int64_t small = total / 2, big = total - small;
      w.pads[d] = autoPad == "SAME_UPPER" ? small : big;
      w.pads[d + w.rank] = autoPad == "SAME_UPPER" ? big : small;
    }
  }
  return w;
}

BatchedMatMul batchedMatMulOf(std::vector<int64_t> a, std::vector<int64_t> b) {
  BatchedMatMul g;
  if (a.size() == 1) a.insert(a.begin(), 1);
  if (b.size() == 1) b.push_back(1);
  g.M = a[a.size() - 2];
  g.K = a.back();
  g.N = b.back();
  size_t batchRank = std::max(a.size(), b.size()) - 2;
  g.batch.assign(batchRank, 1);
  g.aStrides.assign(batchRank, 0);
  g.bStrides.assign(batchRank, 0);
  auto fill = [&](const std::vector<int64_t>& d, int64_t matrix, std::vector<int64_t>& s) {
    size_t r = d.size() - 2, off = batchRank - r;
    int64_t stride = matrix;
    for (size_t i = r; i-- > 0;) {
      g.batch[off + i] = std::max(g.batch[off + i], d[i]);
      s[off + i] = d[i] == 1 ? 0 : stride;
      stride *= d[i];
    }
  };
  fill(a, g.M * g.K, g.aStrides);
  fill(b, g.K * g.N, g.bStrides);
  return g;
}

void callChecked(EmitContext& ctx, const std::string& kernel, const std::string& expr) {
  ctx.call(kernel, fmt::format("if ({} != 0) return KILN_ERR_DATA;", expr));
}


std::string substituteOffsets(std::string args, size_t operands,
                              const std::function<std::string(size_t)>& offset) {
  for (size_t j = operands; j-- > 0;) {
    const std::string key = fmt::format("@{}", j), with = offset(j);
    for (size_t at = args.find(key); at != std::string::npos; at = args.find(key, at + with.size()))
      args.replace(at, key.size(), with);
  }
  return args;
}

std::string broadcastLoopNest(EmitContext& ctx, const BroadcastLoop& loop,
                              const std::string& decls, const std::string& y,
                              const std::string& lambda, const std::string& args) {
  if (loop.dims.size() > 3) return "";
  // Loop dim k goes to nest level pos[k]: the first outermost (threads split it), the last
  // innermost, missing levels of extent 1 between them.
  static const std::vector<size_t> kPos[] = {{}, {2}, {0, 2}, {0, 1, 2}};
  const std::vector<size_t>& pos = kPos[loop.dims.size()];
  std::vector<int64_t> d(3, 1);
  for (size_t k = 0; k < loop.dims.size(); ++k) d[pos[k]] = loop.dims[k];
  const std::string a = substituteOffsets(args, loop.strides.size(), [&](size_t j) {
    std::string off;
    for (size_t k = 0; k < loop.strides[j].size(); ++k)
      if (loop.strides[j][k] != 0)
        off += fmt::format("{}i{} * {}", off.empty() ? "" : " + ", pos[k], loop.strides[j][k]);
    return off.empty() ? std::string("0") : off;
  });
  const int64_t count = d[0] * d[1] * d[2], inner = d[1] * d[2];
  constexpr int64_t kChunk = 16384;  // elements per thread's unit of work
  const std::string rows = fmt::format(
      "auto rows = [&](int64_t r0, int64_t r1) {{ for (int64_t i0 = r0; i0 < r1; ++i0) for "
      "(int64_t i1 = 0; i1 < {1}; ++i1) {{ const int64_t base = (i0 * {1} + i1) * {2}; for "
      "(int64_t i2 = 0; i2 < {2}; ++i2) {{ const int64_t e = base + i2; y[e] = f({0}); }} }} }};",
      a, d[1], d[2]);
  std::string run = fmt::format("rows(0, {});", d[0]);
  if (ctx.target().optimizedKernels() && count >= 2 * kChunk && d[0] > 1) {
    ctx.useHeader("kiln_cpu/parallel.h");
    const int64_t per = std::max<int64_t>(1, kChunk / std::max<int64_t>(1, inner));
    const int64_t units = (d[0] + per - 1) / per;
    run = fmt::format(
        "kiln_cpu::parallel_for({}, {}, [&](int64_t u, int) {{ rows(u * {}, u * {} + {} < {} ? u "
        "* {} + {} : {}); }});",
        ctx.threadPool(), units, per, per, per, d[0], per, per, d[0]);
  }
  return fmt::format("{{ {}float* y = {}; auto f = {}; {} {} }}", decls, y, lambda, rows, run);
}

}  // namespace kiln
