// Reductions: Reduce* with axes as optional input 1 (keepdims, noop_with_empty_axes), and
// ArgMax/ArgMin. Evaluation runs the kernels of kernels/ref/reduce.h that the generated code
// calls (accumulating in the element type), on every type but f16/bf16.
#include "ref/reduce.h"

#include <type_traits>

#include "dtype_dispatch.h"
#include "kiln/ops/registry.h"
#include "shape_math.h"
#include "tensor_copy.h"

namespace kiln {
namespace {

constexpr std::initializer_list<DType> kReduceTypes = {DType::F32, DType::F16, DType::BF16,
                                                       DType::F64, DType::I32, DType::I64,
                                                       DType::U32, DType::U64};
constexpr std::initializer_list<DType> kMinMaxTypes = {
    DType::F32, DType::F16, DType::BF16, DType::F64, DType::I32, DType::I64,
    DType::U32, DType::U64, DType::I8,   DType::U8,  DType::Bool};
constexpr std::initializer_list<DType> kNumeric = {DType::F32, DType::F16, DType::BF16, DType::F64,
                                                   DType::I8,  DType::U8,  DType::I16,  DType::U16,
                                                   DType::I32, DType::U32, DType::I64,  DType::U64};

std::vector<AttrSpec> reduceAttrs() {
  return {{"keepdims", AttrKind::Int}, {"noop_with_empty_axes", AttrKind::Int}};
}

Status checkFlag(const InferContext& ctx, const char* name, int64_t dflt) {
  int64_t v = ctx.node().attrInt(name, dflt);
  if (v != 0 && v != 1) return ctx.error("attribute '{}' is {}; use 0 or 1", name, v);
  return Status();
}

// Output shape when the reduced axes are known: reduced dims become 1 or disappear.
Shape reducedShape(const Shape& x, const std::vector<int64_t>& axes, bool keepdims) {
  std::vector<bool> reduced(x.dims().size(), axes.empty());
  for (int64_t a : axes) reduced[size_t(a)] = true;
  std::vector<Dim> out;
  for (size_t i = 0; i < reduced.size(); ++i) {
    if (!reduced[i])
      out.push_back(x[i]);
    else if (keepdims)
      out.push_back(Dim::known(1));
  }
  return Shape(std::move(out));
}

template <const std::initializer_list<DType>* kAllowed>
Expected<std::vector<TensorType>> inferReduce(const InferContext& ctx) {
  KILN_RETURN_IF_ERROR(requireDType(ctx, 0, "data", *kAllowed));
  KILN_RETURN_IF_ERROR(checkFlag(ctx, "keepdims", 1));
  KILN_RETURN_IF_ERROR(checkFlag(ctx, "noop_with_empty_axes", 0));
  const bool keepdims = ctx.node().attrInt("keepdims", 1) == 1;
  const bool noop = ctx.node().attrInt("noop_with_empty_axes", 0) == 1;
  const DType t = ctx.in(0).dtype;
  const Shape& x = ctx.in(0).shape;
  std::vector<int64_t> axes;
  if (ctx.has(1)) {
    KILN_RETURN_IF_ERROR(requireDType(ctx, 1, "axes", {DType::I64}));
    const Shape& as = ctx.in(1).shape;
    if (as.rankKnown() && as.rank() != 1)
      return ctx.error("axes has shape {}; it must be a 1-D list", toString(as));
    if (const Tensor* v = ctx.value(1)) {
      axes = v->toInts();
    } else if (!(as.rankKnown() && as[0].isStatic() && as[0].value == 0)) {
      // Axes known only at run time: which dims survive is unknown, but the rank is not
      // when keepdims=1 (size-1 dims stay 1 either way) or when the axis count is static.
      if (!x.rankKnown()) return single(t, Shape::unknownRank());
      if (keepdims) {
        std::vector<Dim> out;
        for (const Dim& d : x.dims())
          out.push_back(d.isStatic() && d.value == 1 ? d : Dim::unknown());
        return single(t, Shape(std::move(out)));
      }
      if (!as.rankKnown() || !as[0].isStatic()) return single(t, Shape::unknownRank());
      // A static, non-empty axis list removes that many dims.
      if (as[0].value > x.rank())
        return ctx.error("axes lists {} axes but data has rank {}", as[0].value, x.rank());
      return single(t, Shape(std::vector<Dim>(size_t(x.rank() - as[0].value), Dim::unknown())));
    }
  }
  if (axes.empty() && noop) return single(t, x);
  if (!x.rankKnown()) return single(t, Shape::unknownRank());
  KILN_ASSIGN_OR_RETURN(axes, normalizeAxes(ctx, axes, x.rank()));
  return single(t, reducedShape(x, axes, keepdims));
}

// ---- evaluation: the kernels of kernels/ref/reduce.h, called as reduce_emit.cc emits them ----

/// Dims of a reduction's result: reduced dims become 1 (keepdims) or disappear.
std::vector<int64_t> reducedDims(const std::vector<int64_t>& dims,
                                 const std::vector<int64_t>& reduced, bool keepdims) {
  std::vector<int64_t> out;
  for (size_t i = 0; i < dims.size(); ++i)
    if (!reduced[i])
      out.push_back(dims[i]);
    else if (keepdims)
      out.push_back(1);
  return out;
}

/// Runs kiln_ref::reduce with reducer R (or reduce_log_sum_exp when R is void) on x.
template <typename R>
Expected<Tensor> reduceWithKernel(const EvalContext& ctx, const Tensor& x,
                                  const std::vector<int64_t>& reduced, bool keepdims) {
  constexpr bool kMinMax =
      std::is_same_v<R, kiln_ref::ReduceMax> || std::is_same_v<R, kiln_ref::ReduceMin>;
  KILN_ASSIGN_OR_RETURN(Tensor out,
                        allocateResult(x.dtype(), reducedDims(x.dims(), reduced, keepdims)));
  const int rank = int(x.rank());
  auto fail = [&] {
    return Status(ctx.error("no compile-time evaluation for {}", dtypeName(x.dtype())));
  };
  KILN_RETURN_IF_ERROR(dispatchNumeric(
      x.dtype(),
      [&](auto tag) -> Status {
        using T = decltype(tag);
        if constexpr (std::is_same_v<T, bool> && !kMinMax) {
          return fail();
        } else if constexpr (std::is_void_v<R>) {
          std::vector<uint64_t> scratch(size_t(
              kiln_ref::reduce_log_sum_exp_scratch_bytes<T>(rank, x.dims().data(), reduced.data()) /
                  8 +
              1));
          kiln_ref::reduce_log_sum_exp(rank, x.dims().data(), reduced.data(), x.data<T>(),
                                       out.mutableData<T>(), scratch.data());
          return Status();
        } else {
          kiln_ref::reduce(rank, x.dims().data(), reduced.data(), x.data<T>(), out.mutableData<T>(),
                           R{});
          return Status();
        }
      },
      fail));
  return out;
}

/// R: the kiln_ref reducer; void for ReduceLogSumExp (its own kernel).
template <typename R>
Expected<std::vector<Tensor>> evalReduce(const EvalContext& ctx) {
  const Tensor& x = ctx.in(0);
  const bool keepdims = ctx.node().attrInt("keepdims", 1) == 1;
  std::vector<int64_t> axes = ctx.has(1) ? ctx.in(1).toInts() : std::vector<int64_t>{};
  if (axes.empty() && ctx.node().attrInt("noop_with_empty_axes", 0) == 1)
    return std::vector<Tensor>{x};
  if (x.rank() > kiln_ref::kMaxRank)
    return ctx.error("rank {} is above the kernels' limit of {}", x.rank(), kiln_ref::kMaxRank);
  std::vector<int64_t> reduced(size_t(x.rank()), axes.empty() ? 1 : 0);
  for (int64_t a : axes) {
    if (a < -x.rank() || a >= x.rank()) return ctx.error("axis {} is out of range", a);
    reduced[size_t(a < 0 ? a + x.rank() : a)] = 1;
  }
  KILN_ASSIGN_OR_RETURN(Tensor out, reduceWithKernel<R>(ctx, x, reduced, keepdims));
  return std::vector<Tensor>{std::move(out)};
}

// ---- ArgMax / ArgMin ----

Expected<std::vector<TensorType>> inferArg(const InferContext& ctx) {
  KILN_RETURN_IF_ERROR(requireDType(ctx, 0, "data", kNumeric));
  KILN_RETURN_IF_ERROR(checkFlag(ctx, "keepdims", 1));
  KILN_RETURN_IF_ERROR(checkFlag(ctx, "select_last_index", 0));
  const Shape& x = ctx.in(0).shape;
  if (!x.rankKnown()) return single(DType::I64, x);
  if (x.rank() == 0) return ctx.error("data is a scalar; it needs an axis to search along");
  KILN_ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(ctx, ctx.node().attrInt("axis", 0), x.rank()));
  return single(DType::I64, reducedShape(x, {axis}, ctx.node().attrInt("keepdims", 1) == 1));
}

template <bool kMax>
Expected<std::vector<Tensor>> evalArg(const EvalContext& ctx) {
  const Tensor& x = ctx.in(0);
  int64_t axis = ctx.node().attrInt("axis", 0);
  if (x.rank() == 0 || axis < -x.rank() || axis >= x.rank())
    return ctx.error("axis {} is out of range", axis);
  if (axis < 0) axis += x.rank();
  const auto& d = x.dims();
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= d[size_t(i)];
  for (int64_t i = axis + 1; i < x.rank(); ++i) inner *= d[size_t(i)];
  std::vector<int64_t> outDims;
  for (int64_t i = 0; i < x.rank(); ++i)
    if (i != axis)
      outDims.push_back(d[size_t(i)]);
    else if (ctx.node().attrInt("keepdims", 1) == 1)
      outDims.push_back(1);
  if (d[size_t(axis)] == 0) return ctx.error("cannot search an empty axis");
  KILN_ASSIGN_OR_RETURN(Tensor out, allocateResult(DType::I64, outDims));
  const bool last = ctx.node().attrInt("select_last_index", 0) == 1;
  int64_t* o = out.mutableData<int64_t>();
  const int64_t n = d[size_t(axis)];
  auto fail = [&] {
    return Status(ctx.error("no compile-time evaluation for {}", dtypeName(x.dtype())));
  };
  // The kernel reduce_emit.cc's emitArgReduce calls, with the same [outer, n, inner] view.
  KILN_RETURN_IF_ERROR(dispatchNumeric(
      x.dtype(),
      [&](auto tag) -> Status {
        using T = decltype(tag);
        if constexpr (kMax)
          kiln_ref::argmax(outer, n, inner, x.data<T>(), o, last);
        else
          kiln_ref::argmin(outer, n, inner, x.data<T>(), o, last);
        return Status();
      },
      fail));
  return std::vector<Tensor>{std::move(out)};
}

OpDef row(std::string name, int minIn, int maxIn, InferFn infer, EvalFn eval,
          std::vector<AttrSpec> attrs) {
  OpDef d;
  d.name = std::move(name);
  d.schema.minInputs = minIn;
  d.schema.maxInputs = maxIn;
  d.schema.attrs = std::move(attrs);
  d.inferTypes = infer;
  d.evaluate = eval;
  return d;
}

}  // namespace

void registerReduceOps(OpRegistry& r) {
  const auto common = &inferReduce<&kReduceTypes>;
  const auto minMax = &inferReduce<&kMinMaxTypes>;
  using namespace kiln_ref;
  r.addDef(row("ReduceSum", 1, 2, common, evalReduce<ReduceSum>, reduceAttrs()));
  r.addDef(row("ReduceMean", 1, 2, common, evalReduce<ReduceMean>, reduceAttrs()));
  r.addDef(row("ReduceProd", 1, 2, common, evalReduce<ReduceProd>, reduceAttrs()));
  r.addDef(row("ReduceL1", 1, 2, common, evalReduce<ReduceL1>, reduceAttrs()));
  r.addDef(row("ReduceL2", 1, 2, common, evalReduce<ReduceL2>, reduceAttrs()));
  r.addDef(row("ReduceLogSum", 1, 2, common, evalReduce<ReduceLogSum>, reduceAttrs()));
  r.addDef(row("ReduceLogSumExp", 1, 2, common, evalReduce<void>, reduceAttrs()));
  r.addDef(row("ReduceSumSquare", 1, 2, common, evalReduce<ReduceSumSquare>, reduceAttrs()));
  r.addDef(row("ReduceMax", 1, 2, minMax, evalReduce<ReduceMax>, reduceAttrs()));
  r.addDef(row("ReduceMin", 1, 2, minMax, evalReduce<ReduceMin>, reduceAttrs()));
  const std::vector<AttrSpec> argAttrs = {
      {"axis", AttrKind::Int}, {"keepdims", AttrKind::Int}, {"select_last_index", AttrKind::Int}};
  r.addDef(row("ArgMax", 1, 1, inferArg, evalArg<true>, argAttrs));
  r.addDef(row("ArgMin", 1, 1, inferArg, evalArg<false>, argAttrs));
}

}  // namespace kiln
