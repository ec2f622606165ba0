// Helpers shared by the emit facets: static dims, kernel element types, compile-time inputs.
#pragma once

#include "shape_math.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "kiln/ops/registry.h"

namespace kiln {

/// A value's dims (static when emit runs, or data-dependent ones at their bound).
std::vector<int64_t> staticDims(const Value* v);
/// A value's element count (data-dependent dims at their bound).
int64_t staticNumel(const Value* v);
/// Product of d[b..e).
int64_t dimsProduct(const std::vector<int64_t>& d, size_t b, size_t e);

/// The kernels' element type E for a dtype (cast.h: "float", "kiln_ref::f16_tag", ...);
/// empty for dtypes the value kernels do not handle (4-bit, string).
std::string_view kernelElemType(DType t);
/// The element type of v for a kernel that computes on values, or an 'unsupported' error.
Expected<std::string> valueKernelType(const Node& n, const Value* v, EmitContext& ctx);
/// The plain C++ type of v for kernels without f16/bf16 support (float, int64_t, bool, ...),
/// or an 'unsupported' error naming the op and dtype.
Expected<std::string> plainKernelType(const Node& n, const Value* v, EmitContext& ctx);
/// Bytes per element of v for the byte-moving kernels, or an 'unsupported' error for
/// sub-byte types.
Expected<int64_t> elementBytes(const Node& n, const Value* v, EmitContext& ctx);

/// Input i's elements as integers when they are known at compile time.
std::optional<std::vector<int64_t>> constInts(EmitContext& ctx, const Node& n, size_t i);
/// Normalizes an axis against rank; nullopt when out of [-rank, rank).
std::optional<int64_t> axisIn(int64_t axis, int64_t rank);

/// Sliding-window geometry of a conv or pooling node (x [N, C, in...], y [N, M, out...]) with
/// auto_pad resolved into explicit pads from the inferred output dims.
struct SlidingWindow {
  int rank = 0;
  std::vector<int64_t> in, out, kernel, strides, dilations, pads;
  /// True when every per-axis attribute has `rank` entries (pads 2 * rank).
  bool valid() const;
};
/// Transpose (transpose_emit.cc).
Status emitTranspose(const Node& n, EmitContext& ctx);

SlidingWindow slidingWindowOf(const Node& n, const std::vector<int64_t>& kernel);
/// The same for input dims `x` and output dims `y` given in channels-first order (for a node
/// whose tensors are in another layout, e.g. kiln.NhwcConv).
SlidingWindow slidingWindowOf(const Node& n, const std::vector<int64_t>& x,
                              const std::vector<int64_t>& y, const std::vector<int64_t>& kernel);

/// Batched matmul geometry for the kiln_ref::matmul family: 1-D operands promoted, numpy
/// broadcasting of the batch dims expressed as per-operand element strides (0 on broadcast).
struct BatchedMatMul {
  int64_t M = 0, N = 0, K = 0;
  std::vector<int64_t> batch, aStrides, bStrides;
};
BatchedMatMul batchedMatMulOf(std::vector<int64_t> a, std::vector<int64_t> b);

/// Emits a call of a kernel returning nonzero on bad run-time data: the generated run
/// function returns KILN_ERR_DATA then. `expr` is the call expression without a semicolon.
void callChecked(EmitContext& ctx, const std::string& kernel, const std::string& expr);

/// An f32 element-wise loop over a broadcast collapsed to at most 3 dims, as a statement:
/// `{ <decls> float* y = <y>; auto f = <lambda>; ... y[e] = f(<args>); }` with e the flat
/// output index and, in `args`, `@j` standing for strided operand j's offset (loop.strides[j],
/// written as literals, so the compiler vectorizes the innermost loop: an operand broadcast
/// along it is one value). Large outputs are split over the context's threads by outer rows;
/// every element is computed alone, so results do not depend on the split. Returns "" when the
/// loop has more than 3 dims.
/// `args` with every `@j` (j < operands) replaced by offset(j); @10 is replaced before @1.
std::string substituteOffsets(std::string args, size_t operands,
                              const std::function<std::string(size_t)>& offset);

std::string broadcastLoopNest(EmitContext& ctx, const BroadcastLoop& loop, const std::string& decls,
                              const std::string& y, const std::string& lambda,
                              const std::string& args);

/// A fused body (kiln.Elementwise) as a C++ lambda over values of `type`, one parameter per body
/// input, each node's result a local computed by call(node, argument names); empty where call
/// returns empty or a node reads a value from outside the body.
std::string bodyLambda(
    const Graph& body, const std::string& type,
    const std::function<std::string(const Node&, const std::vector<std::string>&)>& call);

/// Attach the emitters of each family (data_emit.cc, index_emit.cc, generate_emit.cc,
/// reduce_emit.cc, resize_emit.cc, norm_emit.cc, quant_emit.cc).
/// The kiln_ref activation functor for activation op `op` (e.g. "LeakyRelu"), reading its
/// attributes from `n` with `prefix` ("" for the activation node itself, "activation_" for a
/// fused node); "" gives kiln_ref::NoActivation.
std::string activationFunctorFor(const std::string& op, const Node& n, const std::string& prefix);

void attachDataEmitters(OpRegistry& r);
/// kiln.Elementwise (fused_emit.cc).
void attachFusedEmitters(OpRegistry& r);
void attachIndexEmitters(OpRegistry& r);
/// NonZero, Unique, Compress, NonMaxSuppression (dynamic_emit.cc).
void attachDynamicEmitters(OpRegistry& r);
void attachGenerateEmitters(OpRegistry& r);
void attachReduceEmitters(OpRegistry& r);
void attachResizeEmitters(OpRegistry& r);
void attachNormEmitters(OpRegistry& r);
void attachQuantEmitters(OpRegistry& r);
/// NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss (loss_emit.cc).
void attachLossEmitters(OpRegistry& r);
/// ConvInteger, MatMulInteger, QLinearMatMul, QLinearConv (quant_nn_emit.cc).
void attachQuantNnEmitters(OpRegistry& r);
/// RNN, GRU, LSTM (recurrent_emit.cc).
void attachRecurrentEmitters(OpRegistry& r);
/// Einsum (einsum_emit.cc).
void attachEinsumEmitters(OpRegistry& r);
/// GridSample, RoiAlign, MaxUnpool, MaxRoiPool (image_emit.cc).
void attachImageEmitters(OpRegistry& r);

/// One row of a file's table of emitters: an ai.onnx op and its emit function.
struct EmitterRow {
  const char* op;
  EmitFn emit;
};

/// Attaches each row's emit function to its ai.onnx op.
template <size_t N>
void setEmitters(OpRegistry& r, const EmitterRow (&rows)[N]) {
  for (const auto& row : rows) r.setEmit("", row.op, row.emit);
}

}  // namespace kiln
