// Emit facets for the NN op families (activations, conv, pooling, gemm/matmul, norms,
// softmax) and the pure data-movement ops, attached to the registered definitions. Each
// emitter turns a node with static shapes into one call of a kernels/ref kernel.
#include <numeric>

#include "cpu_emit.h"
#include "dtype_dispatch.h"
#include "emit_support.h"
#include "kiln/ops/fused.h"
#include "kiln/ops/registry.h"
#include "shape_math.h"

namespace kiln {
namespace {

std::vector<int64_t> dimsOf(const Value* v) {
  return v->shape().staticDims();
}
int64_t numel(const Value* v) {
  return *v->shape().numElements();
}
std::string cType(const Value* v) {
  return std::string(cTypeOf(v->dtype()));
}
int64_t product(const std::vector<int64_t>& d, size_t b, size_t e) {
  int64_t p = 1;
  for (size_t i = b; i < e && i < d.size(); ++i) p *= d[i];
  return p;
}

/// A typed null `const T*` for a missing optional input of v's element type: a bare nullptr
/// would not deduce a kernel's template parameter.
std::string nullInput(const Value* v) {
  return "static_cast<const " + cType(v) + "*>(nullptr)";
}

Status requireFloat(const Node& n, EmitContext& ctx) {
  DType t = n.input(0)->dtype();
  if (t != DType::F32 && t != DType::F64)
    return ctx.unsupported(fmt::format("{} on {} tensors", n.opType(), dtypeName(t)));
  return Status();
}

// ---- activations: one functor applied by kiln_ref::unary ----

std::string activationFunctor(const Node& n) {
  return activationFunctorFor(n.opType(), n, "");
}

Status emitActivation(const Node& n, EmitContext& ctx) {
  if (n.opType() != "Relu") KILN_RETURN_IF_ERROR(requireFloat(n, ctx));
  KILN_ASSIGN_OR_RETURN(bool done, emitCpuVectorUnary(n, ctx));
  if (done) return Status();
  ctx.useHeader("kiln_ref/activation.h");
  ctx.useHeader("kiln_ref/elementwise.h");
  std::string out = ctx.outputInPlace(0, {0});
  ctx.call("kiln_ref::unary<kiln_ref::" + n.opType() + ">",
           fmt::format("kiln_ref::unary({}, {}, {}, {});", numel(n.output(0)), ctx.input(0), out,
                       activationFunctor(n)));
  return Status();
}

Status emitClip(const Node& n, EmitContext& ctx) {
  ctx.useHeader("kiln_ref/activation.h");
  ctx.useHeader("kiln_ref/elementwise.h");
  std::string t = cType(n.input(0));
  std::string lo = n.input(1) ? "*" + ctx.input(1) : "kiln_ref::ClipBounds<" + t + ">::lowest()";
  std::string hi = n.input(2) ? "*" + ctx.input(2) : "kiln_ref::ClipBounds<" + t + ">::highest()";
  std::string out = ctx.outputInPlace(0, {0});
  ctx.call("kiln_ref::unary<kiln_ref::Clip>",
           fmt::format("kiln_ref::unary({}, {}, {}, kiln_ref::Clip<{}>{{{}, {}}});",
                       numel(n.output(0)), ctx.input(0), out, t, lo, hi));
  return Status();
}

Status emitPRelu(const Node& n, EmitContext& ctx) {
  ctx.useHeader("kiln_ref/activation.h");
  ctx.useHeader("kiln_ref/elementwise.h");
  auto loop = collapseBroadcast(dimsOf(n.output(0)), {dimsOf(n.input(0)), dimsOf(n.input(1))});
  ctx.call("kiln_ref::binary<kiln_ref::PRelu>",
           fmt::format("kiln_ref::binary({}, {}, {}, {}, {}, {}, {}, kiln_ref::PRelu{{}});",
                       loop.dims.size(), ctx.constArray(loop.dims), ctx.constArray(loop.strides[0]),
                       ctx.constArray(loop.strides[1]), ctx.input(0), ctx.input(1), ctx.output(0)));
  return Status();
}

// ---- softmax family ----

Status emitSoftmax(const Node& n, EmitContext& ctx) {
  KILN_RETURN_IF_ERROR(requireFloat(n, ctx));
  auto dims = dimsOf(n.input(0));
  int64_t rank = int64_t(dims.size());
  int64_t axis = n.attrInt("axis", -1);
  if (axis < 0) axis += rank;
  if (rank == 0 || axis < 0 || axis >= rank) return ctx.unsupported("softmax axis out of range");
  std::string fn = n.opType() == "Softmax"      ? "softmax"
                   : n.opType() == "LogSoftmax" ? "log_softmax"
                                                : "hardmax";
  KILN_ASSIGN_OR_RETURN(bool done,
                        emitCpuSoftmax(n, ctx, product(dims, 0, size_t(axis)), dims[size_t(axis)],
                                       product(dims, size_t(axis) + 1, dims.size())));
  if (done) return Status();
  ctx.useHeader("kiln_ref/softmax.h");
  ctx.call("kiln_ref::" + fn,
           fmt::format("kiln_ref::{}({}, {}, {}, {}, {});", fn, product(dims, 0, size_t(axis)),
                       dims[size_t(axis)], product(dims, size_t(axis) + 1, dims.size()),
                       ctx.input(0), ctx.output(0)));
  return Status();
}

// ---- sliding windows: conv and pooling ----

/// Conv and FusedConv: `epilogue` is empty (plain conv) or the fused epilogue expression.
Status emitConvWith(const Node& n, EmitContext& ctx, const std::string& epilogue) {
  KILN_RETURN_IF_ERROR(requireFloat(n, ctx));
  auto wd = dimsOf(n.input(1));
  SlidingWindow w = slidingWindowOf(n, std::vector<int64_t>(wd.begin() + 2, wd.end()));
  if (!w.valid()) return ctx.unsupported("inconsistent Conv attributes");
  auto x = dimsOf(n.input(0));
  ctx.useHeader("kiln_ref/conv.h");
  std::string kernel = epilogue.empty() ? "conv" : "conv_fused";
  ctx.call(
      "kiln_ref::" + kernel,
      fmt::format("kiln_ref::{}({}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}{});",
                  kernel, w.rank, x[0], x[1], ctx.constArray(w.in), wd[0], ctx.constArray(w.kernel),
                  ctx.constArray(w.out), ctx.constArray(w.strides), ctx.constArray(w.dilations),
                  ctx.constArray(w.pads), n.attrInt("group", 1), ctx.input(0), ctx.input(1),
                  n.input(2) ? ctx.input(2) : nullInput(n.input(0)), ctx.output(0),
                  epilogue.empty() ? "" : ", " + epilogue));
  return Status();
}

Status emitConv(const Node& n, EmitContext& ctx) {
  KILN_ASSIGN_OR_RETURN(bool done, emitCpuConv(n, ctx, false));
  return done ? Status() : emitConvWith(n, ctx, "");
}

/// The epilogue argument of a fused node: its activation, the bias input (FusedMatMul's; -1
/// for none) and the residual input.
std::string epilogueOf(const Node& n, EmitContext& ctx, int biasInput, size_t residualInput) {
  ctx.useHeader("kiln_ref/epilogue.h");
  ctx.useHeader("kiln_ref/activation.h");
  std::string act = activationFunctorFor(n.attrString(kActivationAttr, ""), n, "activation_");
  const Value* y = n.output(0);
  std::string bias =
      biasInput >= 0 && n.input(size_t(biasInput)) ? ctx.input(size_t(biasInput)) : nullInput(y);
  std::string res = n.input(residualInput) ? ctx.input(residualInput) : nullInput(y);
  return fmt::format("kiln_ref::make_epilogue<{}>({}, {}, {})", cType(y), act, bias, res);
}

Status emitFusedConv(const Node& n, EmitContext& ctx) {
  KILN_RETURN_IF_ERROR(requireFloat(n, ctx));
  KILN_ASSIGN_OR_RETURN(bool done, emitCpuConv(n, ctx, true));
  if (done) return Status();
  return emitConvWith(n, ctx, epilogueOf(n, ctx, -1, 3));
}

Status emitNhwcConv(const Node& n, EmitContext& ctx) {
  KILN_ASSIGN_OR_RETURN(bool done, emitCpuNhwcConv(n, ctx));
  if (done) return Status();
  return ctx.unsupported(
      "kiln.NhwcConv takes f32 depthwise or 1x1 stride-1 unpadded convs with constant weights "
      "(the layout pass makes no others); use Conv for the rest");
}

Status emitNhwcExpandDw(const Node& n, EmitContext& ctx) {
  KILN_ASSIGN_OR_RETURN(bool done, emitCpuNhwcExpandDw(n, ctx));
  if (done) return Status();
  return ctx.unsupported(
      "kiln.NhwcExpandDw takes f32 tensors with constant weights on a target with optimized "
      "kernels (the fuse-nhwc-expand pass makes no others); compile without that pass");
}

Status emitNhwcDwProject(const Node& n, EmitContext& ctx) {
  KILN_ASSIGN_OR_RETURN(bool done, emitCpuNhwcDwProject(n, ctx));
  if (done) return Status();
  return ctx.unsupported(
      "kiln.NhwcDwProject takes f32 tensors with constant weights on a target with optimized "
      "kernels (the fuse-nhwc-project pass makes no others); compile without that pass");
}

/// ConvTranspose: explicit pads, or (output_shape / SAME_*) begin pads from the total padding
/// the inferred output dims imply, split as ONNX prescribes (the extra one at the end for
/// SAME_UPPER, at the start otherwise).
Status emitConvTranspose(const Node& n, EmitContext& ctx) {
  KILN_RETURN_IF_ERROR(requireFloat(n, ctx));
  auto x = dimsOf(n.input(0)), wd = dimsOf(n.input(1)), y = dimsOf(n.output(0));
  const size_t rank = x.size() - 2;
  if (x.size() < 3 || wd.size() != x.size() || y.size() != x.size())
    return ctx.unsupported("ConvTranspose with inconsistent ranks");
  std::vector<int64_t> in(x.begin() + 2, x.end()), out(y.begin() + 2, y.end()),
      kernel(wd.begin() + 2, wd.end());
  auto strides = n.attrInts("strides", std::vector<int64_t>(rank, 1));
  auto dilations = n.attrInts("dilations", std::vector<int64_t>(rank, 1));
  auto outPad = n.attrInts("output_padding", std::vector<int64_t>(rank, 0));
  auto pads = n.attrInts("pads", std::vector<int64_t>(2 * rank, 0));
  if (strides.size() != rank || dilations.size() != rank || outPad.size() != rank ||
      pads.size() != 2 * rank)
    return ctx.unsupported("inconsistent ConvTranspose attributes");
  std::string autoPad = n.attrString("auto_pad", "NOTSET");
  if (autoPad == "VALID") pads.assign(2 * rank, 0);
  if (n.hasAttr("output_shape") || autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    for (size_t d = 0; d < rank; ++d) {
      int64_t total =
          strides[d] * (in[d] - 1) + outPad[d] + (kernel[d] - 1) * dilations[d] + 1 - out[d];
      total = std::max<int64_t>(total, 0);
      pads[d] = autoPad == "SAME_UPPER" ? total / 2 : total - total / 2;
      pads[d + rank] = total - pads[d];
    }
  }
  const bool fused = n.domain() == kKilnDomain;  // kiln.FusedConvTranspose: act, residual
  KILN_ASSIGN_OR_RETURN(bool done, emitCpuConvTranspose(n, ctx, strides, dilations, pads, fused));
  if (done) return Status();
  ctx.useHeader("kiln_ref/conv.h");
  // The fused form: the reference epilogue over the whole output, after the kernel.
  std::string epilogue = fused ? fmt::format(" {}({}, 0, {});", epilogueOf(n, ctx, -1, 3),
                                             ctx.output(0), numel(n.output(0)))
                               : "";
  ctx.call("kiln_ref::conv_transpose",
           fmt::format("kiln_ref::conv_transpose({}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, "
                       "{}, {}, {});{}",
                       rank, x[0], x[1], ctx.constArray(in), y[1], ctx.constArray(kernel),
                       ctx.constArray(out), ctx.constArray(strides), ctx.constArray(dilations),
                       ctx.constArray(pads), n.attrInt("group", 1), ctx.input(0), ctx.input(1),
                       n.input(2) ? ctx.input(2) : nullInput(n.input(0)), ctx.output(0), epilogue));
  return Status();
}

Status emitPool(const Node& n, EmitContext& ctx) {
  // kiln_ref::max_pool also takes int8 and uint8 (comparisons only).
  const DType t = n.input(0)->dtype();
  if (n.opType() != "MaxPool" || (t != DType::I8 && t != DType::U8))
    KILN_RETURN_IF_ERROR(requireFloat(n, ctx));
  if (n.opType() == "MaxPool") {
    KILN_ASSIGN_OR_RETURN(bool done, emitCpuMaxPool(n, ctx));
    if (done) return Status();
  }
  SlidingWindow w = slidingWindowOf(n, n.attrInts("kernel_shape"));
  if (!w.valid()) return ctx.unsupported("inconsistent pooling attributes");
  auto x = dimsOf(n.input(0));
  int64_t planes = x[0] * x[1];
  ctx.useHeader("kiln_ref/pool.h");
  std::string common =
      fmt::format("{}, {}, {}, {}, {}, {}, {}, {}", w.rank, planes, ctx.constArray(w.in),
                  ctx.constArray(w.kernel), ctx.constArray(w.out), ctx.constArray(w.strides),
                  ctx.constArray(w.dilations), ctx.constArray(w.pads));
  if (n.opType() == "MaxPool") {
    bool indices = n.numOutputs() > 1 && n.output(1);
    ctx.call(
        "kiln_ref::max_pool",
        fmt::format("kiln_ref::max_pool({}, {}, {}, {}, {});", common, ctx.input(0), ctx.output(0),
                    indices ? ctx.output(1) : "nullptr", n.attrInt("storage_order", 0)));
  } else if (n.opType() == "AveragePool") {
    ctx.call("kiln_ref::average_pool",
             fmt::format("kiln_ref::average_pool({}, {}, {}, {});", common,
                         n.attrInt("count_include_pad", 0) != 0 ? "true" : "false", ctx.input(0),
                         ctx.output(0)));
  } else {
    ctx.call("kiln_ref::lp_pool", fmt::format("kiln_ref::lp_pool({}, {}, {}, {});", common,
                                              n.attrInt("p", 2), ctx.input(0), ctx.output(0)));
  }
  return Status();
}

Status emitGlobalPool(const Node& n, EmitContext& ctx) {
  KILN_RETURN_IF_ERROR(requireFloat(n, ctx));
  auto x = dimsOf(n.input(0));
  int64_t planes = x[0] * x[1], spatial = product(x, 2, x.size());
  ctx.useHeader("kiln_ref/pool.h");
  if (n.opType() == "GlobalLpPool") {
    ctx.call("kiln_ref::global_lp_pool",
             fmt::format("kiln_ref::global_lp_pool({}, {}, {}, {}, {});", planes, spatial,
                         n.attrInt("p", 2), ctx.input(0), ctx.output(0)));
    return Status();
  }
  KILN_ASSIGN_OR_RETURN(bool done, emitCpuEltwise(n, ctx));
  if (done) return Status();
  std::string fn = n.opType() == "GlobalAveragePool" ? "global_average_pool" : "global_max_pool";
  ctx.call("kiln_ref::" + fn, fmt::format("kiln_ref::{}({}, {}, {}, {});", fn, planes, spatial,
                                          ctx.input(0), ctx.output(0)));
  return Status();
}

// ---- gemm and matmul ----

/// Gemm and FusedGemm: `epilogue` is empty (plain gemm) or the fused epilogue expression.
Status emitGemmWith(const Node& n, EmitContext& ctx, const std::string& epilogue) {
  KILN_RETURN_IF_ERROR(requireFloat(n, ctx));
  auto y = dimsOf(n.output(0));
  auto a = dimsOf(n.input(0));
  bool transA = n.attrInt("transA", 0) != 0, transB = n.attrInt("transB", 0) != 0;
  int64_t M = y[0], N = y[1], K = transA ? a[0] : a[1];
  int64_t sm = 0, sn = 0;
  if (n.input(2)) {
    auto c = dimsOf(n.input(2));
    std::vector<int64_t> c2(2, 1);
    for (size_t i = 0; i < c.size() && i < 2; ++i) c2[2 - c.size() + i] = c[i];
    sm = c2[0] == 1 ? 0 : c2[1];
    sn = c2[1] == 1 ? 0 : 1;
  }
  ctx.useHeader("kiln_ref/gemm.h");
  ctx.call("kiln_ref::gemm",
           fmt::format("kiln_ref::gemm({}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}{});", M,
                       N, K, transA, transB, floatLiteral(n.attrFloat("alpha", 1.0f)), ctx.input(0),
                       ctx.input(1), floatLiteral(n.attrFloat("beta", 1.0f)),
                       n.input(2) ? ctx.input(2) : nullInput(n.input(0)), sm, sn, ctx.output(0),
                       epilogue.empty() ? "" : ", " + epilogue));
  return Status();
}

Status emitGemm(const Node& n, EmitContext& ctx) {
  KILN_ASSIGN_OR_RETURN(bool done, emitCpuGemm(n, ctx, false));
  return done ? Status() : emitGemmWith(n, ctx, "");
}

Status emitFusedGemm(const Node& n, EmitContext& ctx) {
  KILN_RETURN_IF_ERROR(requireFloat(n, ctx));
  KILN_ASSIGN_OR_RETURN(bool done, emitCpuGemm(n, ctx, true));
  if (done) return Status();
  return emitGemmWith(n, ctx, epilogueOf(n, ctx, -1, 3));
}

Status emitMatMul(const Node& n, EmitContext& ctx) {
  DType t = n.input(0)->dtype();
  if (cTypeOf(t).empty() || t == DType::F16 || t == DType::BF16 || t == DType::Bool)
    return ctx.unsupported(fmt::format("MatMul on {}", dtypeName(t)));
  KILN_ASSIGN_OR_RETURN(bool done, emitCpuMatMul(n, ctx, false));
  if (done) return Status();
  BatchedMatMul g = batchedMatMulOf(dimsOf(n.input(0)), dimsOf(n.input(1)));
  ctx.useHeader("kiln_ref/gemm.h");
  ctx.call(
      "kiln_ref::matmul",
      fmt::format("kiln_ref::matmul({}, {}, {}, {}, {}, {}, {}, {}, {}, {});", g.batch.size(),
                  ctx.constArray(g.batch), ctx.constArray(g.aStrides), ctx.constArray(g.bStrides),
                  g.M, g.N, g.K, ctx.input(0), ctx.input(1), ctx.output(0)));
  return Status();
}

Status emitFusedMatMul(const Node& n, EmitContext& ctx) {
  KILN_RETURN_IF_ERROR(requireFloat(n, ctx));
  KILN_ASSIGN_OR_RETURN(bool done, emitCpuMatMul(n, ctx, true));
  if (done) return Status();
  BatchedMatMul g = batchedMatMulOf(dimsOf(n.input(0)), dimsOf(n.input(1)));
  ctx.useHeader("kiln_ref/gemm.h");
  ctx.call("kiln_ref::matmul_fused",
           fmt::format("kiln_ref::matmul_fused({}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {});",
                       g.batch.size(), ctx.constArray(g.batch), ctx.constArray(g.aStrides),
                       ctx.constArray(g.bStrides), g.M, g.N, g.K, ctx.input(0), ctx.input(1),
                       ctx.output(0), epilogueOf(n, ctx, 2, 3)));
  return Status();
}

// ---- normalization ----

Status emitBatchNorm(const Node& n, EmitContext& ctx) {
  KILN_RETURN_IF_ERROR(requireFloat(n, ctx));
  auto x = dimsOf(n.input(0));
  int64_t C = x.size() > 1 ? x[1] : 1;
  ctx.useHeader("kiln_ref/norm.h");
  if (n.attrInt("training_mode", 0) != 0) {
    const DType t = n.input(0)->dtype();
    for (size_t i = 1; i < 5; ++i)
      if (n.input(i)->dtype() != t)
        return ctx.unsupported("training-mode BatchNormalization with mixed float types");
    const int64_t inner = product(x, 2, x.size());
    if (x[0] * inner == 0) return ctx.unsupported("training-mode BatchNormalization of no values");
    auto stat = [&](size_t i) {
      return n.numOutputs() > i && n.output(i)
                 ? ctx.output(i)
                 : fmt::format("static_cast<{}*>(nullptr)", cTypeOf(t));
    };
    ctx.call(
        "kiln_ref::batch_norm_training",
        fmt::format("kiln_ref::batch_norm_training({}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, "
                    "{}, {});",
                    x[0], C, inner, ctx.input(0), ctx.input(1), ctx.input(2), ctx.input(3),
                    ctx.input(4), floatLiteral(n.attrFloat("epsilon", 1e-5f)),
                    floatLiteral(n.attrFloat("momentum", 0.9f)), ctx.output(0), stat(1), stat(2)));
    return Status();
  }
  ctx.call(
      "kiln_ref::batch_norm",
      fmt::format("kiln_ref::batch_norm({}, {}, {}, {}, {}, {}, {}, {}, {}, {});", x[0], C,
                  product(x, 2, x.size()), ctx.input(0), ctx.input(1), ctx.input(2), ctx.input(3),
                  ctx.input(4), floatLiteral(n.attrFloat("epsilon", 1e-5f)), ctx.output(0)));
  return Status();
}

Status emitInstanceNorm(const Node& n, EmitContext& ctx) {
  KILN_RETURN_IF_ERROR(requireFloat(n, ctx));
  auto x = dimsOf(n.input(0));
  ctx.useHeader("kiln_ref/norm.h");
  ctx.call("kiln_ref::instance_norm",
           fmt::format("kiln_ref::instance_norm({}, {}, {}, {}, {}, {}, {}, {});", x[0], x[1],
                       product(x, 2, x.size()), ctx.input(0), ctx.input(1), ctx.input(2),
                       floatLiteral(n.attrFloat("epsilon", 1e-5f)), ctx.output(0)));
  return Status();
}

Status emitLayerNorm(const Node& n, EmitContext& ctx) {
  KILN_RETURN_IF_ERROR(requireFloat(n, ctx));
  auto x = dimsOf(n.input(0));
  int64_t rank = int64_t(x.size()), axis = n.attrInt("axis", -1);
  if (axis < 0) axis += rank;
  int64_t cols = product(x, size_t(axis), x.size());
  if (numel(n.input(1)) != cols || (n.input(2) && numel(n.input(2)) != cols))
    return ctx.unsupported("LayerNormalization with broadcast scale/bias");
  // Mean and InvStdDev share one type U; a missing one is a null of the other's type.
  auto has = [&](size_t i) { return n.numOutputs() > i && n.output(i) != nullptr; };
  std::string statType = has(1) ? cType(n.output(1)) : has(2) ? cType(n.output(2)) : "float";
  auto opt = [&](size_t i) {
    return has(i) ? ctx.output(i) : "static_cast<" + statType + "*>(nullptr)";
  };
  KILN_ASSIGN_OR_RETURN(bool done, emitCpuLayerNorm(n, ctx, product(x, 0, size_t(axis)), cols));
  if (done) return Status();
  ctx.useHeader("kiln_ref/norm.h");
  ctx.call("kiln_ref::layer_norm",
           fmt::format("kiln_ref::layer_norm({}, {}, {}, {}, {}, {}, {}, {}, {});",
                       product(x, 0, size_t(axis)), cols, ctx.input(0), ctx.input(1),
                       n.input(2) ? ctx.input(2) : nullInput(n.input(0)),
                       floatLiteral(n.attrFloat("epsilon", 1e-5f)), ctx.output(0), opt(1), opt(2)));
  return Status();
}

// ---- data movement ----

/// Reshape-like ops whose output bytes equal the input bytes: a view of the input, or a copy
/// where the output needs its own buffer (a graph output).
Status emitCopy(const Node& n, EmitContext& ctx) {
  int64_t bytes = *dtypeStorageBytes(n.output(0)->dtype(), numel(n.output(0)));
  if (!ctx.aliasOutput(0, 0, 0))
    ctx.call("memcpy", fmt::format("std::memcpy({}, {}, {});", ctx.output(0), ctx.input(0), bytes));
  if (n.opType() == "Dropout" && n.numOutputs() > 1 && n.output(1))
    ctx.call("memset", fmt::format("std::memset({}, 1, {});", ctx.output(1), numel(n.output(1))));
  return Status();
}

// Dropout: a copy when training_mode is absent or a false constant; otherwise the seeded
// kernel (kernels/ref/random.h), with the mode and ratio read at run time.
Status emitDropout(const Node& n, EmitContext& ctx) {
  const bool hasMode = n.numInputs() > 2 && n.input(2);
  if (!hasMode) return emitCopy(n, ctx);
  if (auto mode = constInts(ctx, n, 2); mode && mode->size() == 1 && (*mode)[0] == 0)
    return emitCopy(n, ctx);
  const DType t = n.input(0)->dtype();
  if (t != DType::F32 && t != DType::F64)
    return ctx.unsupported(fmt::format("training-mode Dropout on {} tensors", dtypeName(t)));
  const bool hasRatio = n.numInputs() > 1 && n.input(1);
  if (hasRatio && n.input(1)->dtype() != DType::F32 && n.input(1)->dtype() != DType::F64)
    return ctx.unsupported("a Dropout ratio that is not f32 or f64");
  const bool hasMask = n.numOutputs() > 1 && n.output(1);
  uint64_t seed = uint64_t(n.attrInt("seed", 0));
  if (!n.attr("seed"))  // no seed: a hash of the output's name, the same on every compile
    for (unsigned char c : n.output(0)->name()) seed = (seed ^ c) * 0x100000001b3ull;
  ctx.useHeader("kiln_ref/random.h");
  ctx.call("kiln_ref::dropout",
           fmt::format("if (!kiln_ref::dropout<{}>({}, {}, {}, {}[0] != 0, {}ull, {}, {})) return "
                       "KILN_ERR_DATA;",
                       cTypeOf(t), numel(n.output(0)), ctx.input(0),
                       hasRatio ? fmt::format("double({}[0])", ctx.input(1)) : "0.5", ctx.input(2),
                       seed, ctx.output(0),
                       hasMask ? fmt::format("reinterpret_cast<bool*>({})", ctx.output(1))
                               : "static_cast<bool*>(nullptr)"));
  return Status();
}

Status emitConcat(const Node& n, EmitContext& ctx) {
  auto y = dimsOf(n.output(0));
  int64_t rank = int64_t(y.size()), axis = n.attrInt("axis", 0);
  if (axis < 0) axis += rank;
  int bits = dtypeBits(n.output(0)->dtype());
  if (bits < 8) return ctx.unsupported("Concat of sub-byte types");
  std::vector<int64_t> axisDims;
  std::string ptrs;
  for (size_t i = 0; i < n.numInputs(); ++i) {
    axisDims.push_back(dimsOf(n.input(i))[size_t(axis)]);
    ptrs += (i ? ", " : "") + std::string("static_cast<const void*>(") + ctx.input(i) + ")";
  }
  ctx.useHeader("kiln_ref/copy.h");
  ctx.call("kiln_ref::concat",
           fmt::format("{{ const void* const ins[] = {{{}}}; kiln_ref::concat({}, ins, {}, {}, {}, "
                       "{}, {}); }}",
                       ptrs, n.numInputs(), ctx.constArray(axisDims), product(y, 0, size_t(axis)),
                       product(y, size_t(axis) + 1, y.size()), bits / 8, ctx.output(0)));
  return Status();
}

constexpr EmitterRow kNnEmitters[] = {
    {"Relu", emitActivation},
    {"LeakyRelu", emitActivation},
    {"Elu", emitActivation},
    {"Selu", emitActivation},
    {"Celu", emitActivation},
    {"Sigmoid", emitActivation},
    {"HardSigmoid", emitActivation},
    {"HardSwish", emitActivation},
    {"Tanh", emitActivation},
    {"Softplus", emitActivation},
    {"Softsign", emitActivation},
    {"ThresholdedRelu", emitActivation},
    {"Gelu", emitActivation},
    {"Mish", emitActivation},
    {"Shrink", emitActivation},
    {"Clip", emitClip},
    {"PRelu", emitPRelu},
    {"Softmax", emitSoftmax},
    {"LogSoftmax", emitSoftmax},
    {"Hardmax", emitSoftmax},
    {"Conv", emitConv},
    {"ConvTranspose", emitConvTranspose},
    {"MaxPool", emitPool},
    {"AveragePool", emitPool},
    {"LpPool", emitPool},
    {"GlobalAveragePool", emitGlobalPool},
    {"GlobalMaxPool", emitGlobalPool},
    {"GlobalLpPool", emitGlobalPool},
    {"Gemm", emitGemm},
    {"MatMul", emitMatMul},
    {"BatchNormalization", emitBatchNorm},
    {"InstanceNormalization", emitInstanceNorm},
    {"LayerNormalization", emitLayerNorm},
    {"Reshape", emitCopy},
    {"Flatten", emitCopy},
    {"Squeeze", emitCopy},
    {"Unsqueeze", emitCopy},
    {"Identity", emitCopy},
    {"Dropout", emitDropout},
    {"Transpose", emitTranspose},
    {"Concat", emitConcat},
};

}  // namespace

std::string activationFunctorFor(const std::string& op, const Node& n, const std::string& prefix) {
  auto f = [&](const char* name, float dflt) {
    return floatLiteral(n.attrFloat(prefix + name, dflt));
  };
  if (op == "LeakyRelu") return "kiln_ref::LeakyRelu{" + f("alpha", 0.01f) + "}";
  if (op == "Elu") return "kiln_ref::Elu{" + f("alpha", 1.0f) + "}";
  if (op == "Celu") return "kiln_ref::Celu{" + f("alpha", 1.0f) + "}";
  if (op == "Selu")
    return "kiln_ref::Selu{" + f("alpha", 1.67326319217681884765625f) + ", " +
           f("gamma", 1.05070102214813232421875f) + "}";
  if (op == "Swish") return "kiln_ref::Swish{" + f("alpha", 1.0f) + "}";
  if (op == "HardSigmoid")
    return "kiln_ref::HardSigmoid{" + f("alpha", 0.2f) + ", " + f("beta", 0.5f) + "}";
  if (op == "ThresholdedRelu") return "kiln_ref::ThresholdedRelu{" + f("alpha", 1.0f) + "}";
  if (op == "Gelu")
    return std::string("kiln_ref::Gelu{") +
           (n.attrString(prefix + "approximate", "none") == "tanh" ? "true" : "false") + "}";
  if (op == "Shrink") return "kiln_ref::Shrink{" + f("bias", 0.0f) + ", " + f("lambd", 0.5f) + "}";
  if (op == "Clip")  // only with constant bounds, recorded as prefix + min/max
    return "kiln_ref::Clip<float>{" +
           (n.hasAttr(prefix + "min") ? f("min", 0) : "kiln_ref::ClipBounds<float>::lowest()") +
           ", " +
           (n.hasAttr(prefix + "max") ? f("max", 0) : "kiln_ref::ClipBounds<float>::highest()") +
           "}";
  if (op.empty()) return "kiln_ref::NoActivation{}";
  return "kiln_ref::" + op + "{}";  // Relu, Sigmoid, HardSwish, Tanh, Softplus, Softsign, Mish
}

void attachNnEmitters(OpRegistry& r) {
  setEmitters(r, kNnEmitters);
  r.setEmit(kKilnDomain, "FusedConv", emitFusedConv);
  r.setEmit(kKilnDomain, "NhwcConv", emitNhwcConv);
  r.setEmit(kKilnDomain, "NhwcExpandDw", emitNhwcExpandDw);
  r.setEmit(kKilnDomain, "NhwcDwProject", emitNhwcDwProject);
  r.setEmit(kKilnDomain, "FusedConvTranspose", emitConvTranspose);
  r.setEmit(kKilnDomain, "FusedGemm", emitFusedGemm);
  r.setEmit(kKilnDomain, "FusedMatMul", emitFusedMatMul);
}

}  // namespace kiln
