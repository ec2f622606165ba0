// Reductions: Reduce* with axes as optional input 1 (keepdims, noop_with_empty_axes), and
// ArgMax/ArgMin. Sum/Prod/Max/Min/Mean and friends fold on f32/f64/i32/i64 for shape math.
#include <cmath>
#include <limits>
#include <type_traits>

#include "kiln/ops/registry.h"
#include "shape_math.h"

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

enum class ReduceKind { Sum, Mean, Max, Min, Prod, L1, L2, LogSum, LogSumExp, SumSquare };

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

// ---- evaluation ----

// Reduces x over `reduced` dims with a T-typed (integers, wrapping) or double accumulator.
template <typename T>
Expected<Tensor> reduceTyped(ReduceKind kind, const Tensor& x, const std::vector<bool>& reduced,
                             bool keepdims) {
  using Acc = std::conditional_t<std::is_floating_point_v<T>, double, T>;
  const auto& dims = x.dims();
  std::vector<int64_t> outDims, keptDims;
  for (size_t i = 0; i < dims.size(); ++i) {
    keptDims.push_back(reduced[i] ? 1 : dims[i]);
    if (!reduced[i] || keepdims) outDims.push_back(keptDims.back());
  }
  KILN_ASSIGN_OR_RETURN(Tensor out, Tensor::zeros(x.dtype(), outDims));
  // Output offset of each input element: kept-dims strides, 0 on reduced dims.
  std::vector<int64_t> strides = stridesOf(keptDims);
  for (size_t i = 0; i < dims.size(); ++i)
    if (reduced[i]) strides[i] = 0;
  constexpr bool kFloat = std::is_floating_point_v<Acc>;
  Acc init = Acc(kind == ReduceKind::Prod ? 1 : 0);
  if constexpr (kFloat) {
    if (kind == ReduceKind::Max) init = -INFINITY;
    if (kind == ReduceKind::Min) init = INFINITY;
  } else {
    if (kind == ReduceKind::Max) init = std::numeric_limits<T>::lowest();
    if (kind == ReduceKind::Min) init = std::numeric_limits<T>::max();
  }
  std::vector<Acc> acc(size_t(out.numElements()), init);
  // Integer math wraps (two's complement) instead of overflowing.
  using U = std::make_unsigned_t<std::conditional_t<kFloat, int64_t, Acc>>;
  auto add = [](Acc a, Acc b) -> Acc {
    if constexpr (kFloat)
      return a + b;
    else
      return Acc(U(a) + U(b));
  };
  auto mul = [](Acc a, Acc b) -> Acc {
    if constexpr (kFloat)
      return a * b;
    else
      return Acc(U(a) * U(b));
  };
  auto isNaN = [](Acc v) {
    if constexpr (kFloat)
      return std::isnan(v);
    else
      return (void)v, false;
  };
  const T* in = x.data<T>();
  std::vector<int64_t> idx(dims.size(), 0);
  int64_t o = 0;
  for (int64_t e = 0; e < x.numElements(); ++e) {
    const Acc v = Acc(in[e]);
    Acc& a = acc[size_t(o)];
    switch (kind) {
      case ReduceKind::Max:
        a = !isNaN(a) && (v > a || isNaN(v)) ? v : a;
        break;
      case ReduceKind::Min:
        a = !isNaN(a) && (v < a || isNaN(v)) ? v : a;
        break;
      case ReduceKind::Prod:
        a = mul(a, v);
        break;
      case ReduceKind::SumSquare:
      case ReduceKind::L2:
        a = add(a, mul(v, v));
        break;
      case ReduceKind::L1:
        a = add(a, v < Acc(0) ? mul(v, Acc(-1)) : v);
        break;
      case ReduceKind::LogSumExp:
        a = add(a, Acc(std::exp(double(v))));
        break;
      default:
        a = add(a, v);
        break;
    }
    for (size_t d = dims.size(); d-- > 0;) {
      o += strides[d];
      if (++idx[d] < dims[d]) break;
      o -= strides[d] * idx[d];
      idx[d] = 0;
    }
  }
  const int64_t count = out.numElements() ? x.numElements() / out.numElements() : 1;
  T* po = out.mutableData<T>();
  for (size_t i = 0; i < acc.size(); ++i) {
    Acc a = acc[i];
    if (kind == ReduceKind::Mean) a = count ? Acc(a / Acc(count)) : kFloat ? Acc(NAN) : Acc(0);
    if (kind == ReduceKind::L2) a = Acc(std::sqrt(double(a)));
    if (kind == ReduceKind::LogSum || kind == ReduceKind::LogSumExp) a = Acc(std::log(double(a)));
    po[i] = T(a);
  }
  return out;
}

template <ReduceKind kKind>
Expected<std::vector<Tensor>> evalReduce(const EvalContext& ctx) {
  const Tensor& x = ctx.in(0);
  const bool keepdims = ctx.node().attrInt("keepdims", 1) == 1;
  std::vector<int64_t> axes = ctx.has(1) ? ctx.in(1).toInts() : std::vector<int64_t>{};
  if (axes.empty() && ctx.node().attrInt("noop_with_empty_axes", 0) == 1)
    return std::vector<Tensor>{x};
  std::vector<bool> reduced(size_t(x.rank()), axes.empty());
  for (int64_t a : axes) {
    if (a < -x.rank() || a >= x.rank()) return ctx.error("axis {} is out of range", a);
    reduced[size_t(a < 0 ? a + x.rank() : a)] = true;
  }
  const bool floatOnly = kKind == ReduceKind::LogSum || kKind == ReduceKind::LogSumExp;
  Expected<Tensor> out = ctx.error("no compile-time evaluation for {}", dtypeName(x.dtype()));
  switch (x.dtype()) {
    case DType::F32:
      out = reduceTyped<float>(kKind, x, reduced, keepdims);
      break;
    case DType::F64:
      out = reduceTyped<double>(kKind, x, reduced, keepdims);
      break;
    case DType::I64:
      if (!floatOnly) out = reduceTyped<int64_t>(kKind, x, reduced, keepdims);
      break;
    case DType::I32:
      if (!floatOnly) out = reduceTyped<int32_t>(kKind, x, reduced, keepdims);
      break;
    default:
      break;
  }
  if (!out.ok()) return out.error();
  return std::vector<Tensor>{std::move(*out)};
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

template <typename T, bool kMax>
void argTyped(const Tensor& x, int64_t outer, int64_t n, int64_t inner, bool last, int64_t* o) {
  const T* p = x.data<T>();
  for (int64_t a = 0; a < outer; ++a)
    for (int64_t b = 0; b < inner; ++b) {
      const T* row = p + a * n * inner + b;
      int64_t best = 0;
      for (int64_t i = 1; i < n; ++i) {
        T v = row[i * inner], cur = row[best * inner];
        bool better = kMax ? (v > cur || (last && v == cur)) : (v < cur || (last && v == cur));
        if (better) best = i;
      }
      o[a * inner + b] = best;
    }
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
  KILN_ASSIGN_OR_RETURN(Tensor out, Tensor::zeros(DType::I64, outDims));
  const bool last = ctx.node().attrInt("select_last_index", 0) == 1;
  int64_t* o = out.mutableData<int64_t>();
  const int64_t n = d[size_t(axis)];
  switch (x.dtype()) {
    case DType::F32:
      argTyped<float, kMax>(x, outer, n, inner, last, o);
      break;
    case DType::F64:
      argTyped<double, kMax>(x, outer, n, inner, last, o);
      break;
    case DType::I32:
      argTyped<int32_t, kMax>(x, outer, n, inner, last, o);
      break;
    case DType::I64:
      argTyped<int64_t, kMax>(x, outer, n, inner, last, o);
      break;
    default:
      return ctx.error("no compile-time evaluation for {}", dtypeName(x.dtype()));
  }
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
  using K = ReduceKind;
  const auto common = &inferReduce<&kReduceTypes>;
  r.addDef(row("ReduceSum", 1, 2, common, evalReduce<K::Sum>, reduceAttrs()));
  r.addDef(row("ReduceMean", 1, 2, common, evalReduce<K::Mean>, reduceAttrs()));
  r.addDef(row("ReduceProd", 1, 2, common, evalReduce<K::Prod>, reduceAttrs()));
  r.addDef(row("ReduceL1", 1, 2, common, evalReduce<K::L1>, reduceAttrs()));
  r.addDef(row("ReduceL2", 1, 2, common, evalReduce<K::L2>, reduceAttrs()));
  r.addDef(row("ReduceLogSum", 1, 2, common, evalReduce<K::LogSum>, reduceAttrs()));
  r.addDef(row("ReduceLogSumExp", 1, 2, common, evalReduce<K::LogSumExp>, reduceAttrs()));
  r.addDef(row("ReduceSumSquare", 1, 2, common, evalReduce<K::SumSquare>, reduceAttrs()));
  r.addDef(row("ReduceMax", 1, 2, inferReduce<&kMinMaxTypes>, evalReduce<K::Max>, reduceAttrs()));
  r.addDef(row("ReduceMin", 1, 2, inferReduce<&kMinMaxTypes>, evalReduce<K::Min>, reduceAttrs()));
  const std::vector<AttrSpec> argAttrs = {
      {"axis", AttrKind::Int}, {"keepdims", AttrKind::Int}, {"select_last_index", AttrKind::Int}};
  r.addDef(row("ArgMax", 1, 1, inferArg, evalArg<true>, argAttrs));
  r.addDef(row("ArgMin", 1, 1, inferArg, evalArg<false>, argAttrs));
}

}  // namespace kiln
