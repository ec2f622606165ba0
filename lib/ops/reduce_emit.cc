// Emit facets for the reductions (ReduceSum/Mean/Max/Min/Prod/L1/L2/SumSquare/LogSum/
// LogSumExp) and ArgMax/ArgMin: calls of kernels/ref/reduce.h.
#include <algorithm>

#include "cpu_emit_support.h"
#include "emit_support.h"

namespace kiln {
namespace {

/// reduce()'s `reduced` argument for a Reduce* node.
struct Mask {
  bool noop = false;    ///< empty axes with noop_with_empty_axes: a copy
  std::string array;    ///< the mask expression
  std::string prelude;  ///< statements computing it at run time (axes known only then)
};

Expected<Mask> reducedMask(const Node& n, EmitContext& ctx) {
  auto x = staticDims(n.input(0)), y = staticDims(n.output(0));
  const int64_t rank = int64_t(x.size());
  const bool keepdims = n.attrInt("keepdims", 1) != 0;
  const bool hasInput = n.numInputs() > 1 && n.input(1);
  std::optional<std::vector<int64_t>> axes;
  if (hasInput) {
    axes = constInts(ctx, n, 1);
    if (!axes && staticNumel(n.input(1)) == 0) axes = std::vector<int64_t>{};
  } else {
    axes = n.attrInts("axes", {});
  }
  if (axes && axes->empty()) {
    if (n.attrInt("noop_with_empty_axes", 0) != 0) return Mask{true, "", ""};
    return Mask{false, ctx.constArray(std::vector<int64_t>(size_t(rank), 1)), ""};
  }
  if (axes) {
    std::vector<int64_t> mask(size_t(rank), 0);
    for (int64_t a : *axes) {
      auto na = axisIn(a, rank);
      if (!na) return ctx.unsupported("reduction axis out of range");
      mask[size_t(*na)] = 1;
    }
    return Mask{false, ctx.constArray(mask), ""};
  }
  DType t = n.input(1)->dtype();
  if (t != DType::I64 && t != DType::I32)
    return ctx.unsupported(fmt::format("{} with {} axes", n.opType(), dtypeName(t)));
  // Axes known only at run time: resolved there, checked against the output shape.
  return Mask{false, "reduced",
              fmt::format("int64_t reduced[kiln_ref::kMaxRank]; if (kiln_ref::reduce_axes({}, {}, "
                          "{}, {}, {}, {}, {}, reduced) != 0) return KILN_ERR_DATA; ",
                          rank, ctx.constArray(x), staticNumel(n.input(1)), ctx.input(1),
                          keepdims ? 1 : 0, y.size(), ctx.constArray(y))};
}

struct ReducerRow {
  const char* op;
  const char* reducer;  ///< kiln_ref reducer functor; null for LogSumExp (own kernel)
};
constexpr ReducerRow kReducers[] = {
    {"ReduceSum", "ReduceSum"},       {"ReduceMean", "ReduceMean"},
    {"ReduceMax", "ReduceMax"},       {"ReduceMin", "ReduceMin"},
    {"ReduceProd", "ReduceProd"},     {"ReduceL1", "ReduceL1"},
    {"ReduceL2", "ReduceL2"},         {"ReduceSumSquare", "ReduceSumSquare"},
    {"ReduceLogSum", "ReduceLogSum"}, {"ReduceLogSumExp", nullptr},
};

Status emitReduce(const Node& n, EmitContext& ctx) {
  KILN_RETURN_IF_ERROR(plainKernelType(n, n.input(0), ctx).status());
  const ReducerRow* row = nullptr;
  for (const auto& r : kReducers)
    if (n.opType() == r.op) row = &r;
  if (!row) return ctx.unsupported("this reduction");
  auto x = staticDims(n.input(0));
  ctx.useHeader("kiln_ref/reduce.h");
  if (n.opType() == "ReduceMean" && n.input(0)->dtype() == DType::F32 &&
      ctx.target().optimizedKernels()) {
    // (Before reducedMask: it would declare a mask array this path does not read.)
    // One run of reduced axes with more than one element after it (e.g. a channels-last
    // GlobalAveragePool): kiln_cpu::mean_middle_f32, vectorized over the trailing axes.
    std::vector<int64_t> reduced(x.size(), 0);
    // Axes known at compile time only (run-time axes take the reference kernel).
    for (int64_t a : n.numInputs() > 1 && n.input(1) ? constInts(ctx, n, 1).value_or(std::vector<int64_t>{})
                                                     : n.attrInts("axes", {}))
      if (auto na = axisIn(a, int64_t(x.size()))) reduced[size_t(*na)] = 1;
    size_t b = 0, e = x.size();
    while (b < x.size() && !reduced[b]) ++b;
    e = b;
    while (e < x.size() && reduced[e]) ++e;
    const bool oneRun = b < e && std::all_of(reduced.begin() + long(e), reduced.end(),
                                             [](int64_t r) { return r == 0; });
    const int64_t inner = dimsProduct(x, e, x.size()), mid = dimsProduct(x, b, e);
    if (oneRun && inner > 1 && mid > 0) {
      ctx.useHeader("kiln_cpu/eltwise.h");
      ctx.call(cpu_detail::cpuKernel(cpu_kernels::Kernel::mean_middle_f32, ctx.target()),
               fmt::format("kiln_cpu::mean_middle_f32({}, {}, {}, {}, {}, {});",
                           dimsProduct(x, 0, b), mid, inner, ctx.input(0), ctx.output(0),
                           ctx.threadPool()));
      return Status();
    }
  }
  KILN_ASSIGN_OR_RETURN(Mask mask, reducedMask(n, ctx));
  if (mask.noop) {
    int64_t bytes = *dtypeStorageBytes(n.input(0)->dtype(), staticNumel(n.input(0)));
    ctx.call("memcpy", fmt::format("std::memcpy({}, {}, {});", ctx.output(0), ctx.input(0), bytes));
    return Status();
  }
  std::string dims = ctx.constArray(x);
  std::string call;
  if (row->reducer) {
    call = fmt::format("kiln_ref::reduce({}, {}, {}, {}, {}, kiln_ref::{}{{}});", x.size(), dims,
                       mask.array, ctx.input(0), ctx.output(0), row->reducer);
  } else {
    // One accumulator per output element: T for float types, double for integers.
    const DType dt = n.input(0)->dtype();
    const int64_t accBytes = isFloat(dt) ? dtypeBits(dt) / 8 : 8;
    call = fmt::format("kiln_ref::reduce_log_sum_exp({}, {}, {}, {}, {}, {});", x.size(), dims,
                       mask.array, ctx.input(0), ctx.output(0),
                       ctx.scratch(staticNumel(n.output(0)) * accBytes));
  }
  std::string kernel = row->reducer
                           ? std::string("kiln_ref::reduce<kiln_ref::") + row->reducer + ">"
                           : std::string("kiln_ref::reduce_log_sum_exp");
  ctx.call(kernel, mask.prelude.empty() ? call : "{ " + mask.prelude + call + " }");
  return Status();
}

template <bool kMax>
Status emitArgReduce(const Node& n, EmitContext& ctx) {
  KILN_RETURN_IF_ERROR(plainKernelType(n, n.input(0), ctx).status());
  auto x = staticDims(n.input(0));
  auto axis = axisIn(n.attrInt("axis", 0), int64_t(x.size()));
  if (!axis) return ctx.unsupported("arg-reduction axis out of range");
  size_t a = size_t(*axis);
  if (x[a] == 0) return ctx.unsupported("arg-reduction over an empty axis");
  const std::string fn = kMax ? "argmax" : "argmin";
  ctx.useHeader("kiln_ref/reduce.h");
  ctx.call("kiln_ref::" + fn,
           fmt::format("kiln_ref::{}({}, {}, {}, {}, {}, {});", fn, dimsProduct(x, 0, a), x[a],
                       dimsProduct(x, a + 1, x.size()), ctx.input(0), ctx.output(0),
                       n.attrInt("select_last_index", 0) != 0 ? "true" : "false"));
  return Status();
}

}  // namespace

void attachReduceEmitters(OpRegistry& r) {
  for (const auto& row : kReducers) r.setEmit("", row.op, emitReduce);
  r.setEmit("", "ArgMax", emitArgReduce<true>);
  r.setEmit("", "ArgMin", emitArgReduce<false>);
}

}  // namespace kiln
