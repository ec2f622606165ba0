// Elementwise families: broadcasting binary arithmetic, comparisons, logic, variadic
// Sum/Mean/Max/Min, unary math, and Where. One table row per op.
#include <cmath>
#include <cstring>
#include <type_traits>

#include "kiln/ops/registry.h"
#include "shape_math.h"

namespace kiln {
namespace {

// ---- broadcasting evaluation over typed storage ----

// Calls fn(offsets) for every output element, where offsets[k] is the element of input k
// that broadcasts to it; stores the results as R.
template <typename R, typename Fn>
Expected<Tensor> mapBroadcast(const EvalContext& ctx, DType outType, Fn fn) {
  std::vector<std::vector<int64_t>> dims;
  for (size_t i = 0; i < ctx.numInputs(); ++i) dims.push_back(ctx.in(i).dims());
  auto outDims = broadcastDims(dims);
  if (!outDims) return ctx.error("inputs do not broadcast");
  KILN_ASSIGN_OR_RETURN(Tensor out, Tensor::zeros(outType, *outDims));
  std::vector<std::vector<int64_t>> strides;
  for (const auto& d : dims) strides.push_back(broadcastStrides(d, *outDims));
  const size_t rank = outDims->size();
  const size_t n = dims.size();
  std::vector<int64_t> idx(rank, 0), offs(n, 0);
  R* o = out.mutableData<R>();
  for (int64_t e = 0; e < out.numElements(); ++e) {
    o[e] = fn(offs);
    for (size_t d = rank; d-- > 0;) {
      ++idx[d];
      for (size_t k = 0; k < n; ++k) offs[k] += strides[k][d];
      if (idx[d] < (*outDims)[d]) break;
      for (size_t k = 0; k < n; ++k) offs[k] -= strides[k][d] * idx[d];
      idx[d] = 0;
    }
  }
  return out;
}

// Dispatches a typed lambda over the numeric dtypes used in compile-time math.
template <typename Body>
Expected<Tensor> dispatchNumeric(const EvalContext& ctx, DType t, Body body) {
  switch (t) {
    case DType::F32: return body(float{});
    case DType::F64: return body(double{});
    case DType::I64: return body(int64_t{});
    case DType::I32: return body(int32_t{});
    case DType::I8: return body(int8_t{});
    case DType::U8: return body(uint8_t{});
    case DType::Bool: return body(bool{});
    default: return ctx.error("no compile-time evaluation for {}", dtypeName(t));
  }
}

// ---- scalar functions ----

struct AddFn { template <typename T> T operator()(T a, T b) const { return T(a + b); } };
struct SubFn { template <typename T> T operator()(T a, T b) const { return T(a - b); } };
struct MulFn { template <typename T> T operator()(T a, T b) const { return T(a * b); } };
struct DivFn {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      if (b == 0) return T(0);  // ONNX leaves this undefined; never trap at compile time
      if constexpr (std::is_signed_v<T>)
        if (a == std::numeric_limits<T>::min() && b == T(-1)) return a;
    }
    return T(a / b);
  }
};
struct MaxFn { template <typename T> T operator()(T a, T b) const {
  if constexpr (std::is_floating_point_v<T>) if (std::isnan(a) || std::isnan(b)) return NAN;
  return a < b ? b : a; } };
struct MinFn { template <typename T> T operator()(T a, T b) const {
  if constexpr (std::is_floating_point_v<T>) if (std::isnan(a) || std::isnan(b)) return NAN;
  return b < a ? b : a; } };
struct EqualFn { template <typename T> bool operator()(T a, T b) const { return a == b; } };
struct LessFn { template <typename T> bool operator()(T a, T b) const { return a < b; } };
struct GreaterFn { template <typename T> bool operator()(T a, T b) const { return a > b; } };
struct LessEqFn { template <typename T> bool operator()(T a, T b) const { return a <= b; } };
struct GreaterEqFn { template <typename T> bool operator()(T a, T b) const { return a >= b; } };
struct AndFn { bool operator()(bool a, bool b) const { return a && b; } };
struct OrFn { bool operator()(bool a, bool b) const { return a || b; } };
struct XorFn { bool operator()(bool a, bool b) const { return a != b; } };

// ---- type inference ----

Expected<std::vector<TensorType>> inferBroadcast(const InferContext& ctx, DType outType) {
  std::vector<Shape> shapes;
  for (size_t i = 0; i < ctx.numInputs(); ++i)
    if (ctx.has(i)) shapes.push_back(ctx.in(i).shape);
  KILN_ASSIGN_OR_RETURN(Shape s, broadcastShapes(ctx, shapes));
  return single(outType, std::move(s));
}

Status sameDTypes(const InferContext& ctx, size_t first = 0) {
  for (size_t i = first + 1; i < ctx.numInputs(); ++i)
    if (ctx.has(i) && ctx.in(i).dtype != ctx.in(first).dtype)
      return ctx.error("input {} is {} but input {} is {}; the op needs one element type", i,
                       dtypeName(ctx.in(i).dtype), first, dtypeName(ctx.in(first).dtype));
  return Status();
}

Expected<std::vector<TensorType>> inferSameType(const InferContext& ctx) {
  KILN_RETURN_IF_ERROR(sameDTypes(ctx));
  return inferBroadcast(ctx, ctx.in(0).dtype);
}
Expected<std::vector<TensorType>> inferCompare(const InferContext& ctx) {
  KILN_RETURN_IF_ERROR(sameDTypes(ctx));
  return inferBroadcast(ctx, DType::Bool);
}
Expected<std::vector<TensorType>> inferPow(const InferContext& ctx) {
  return inferBroadcast(ctx, ctx.in(0).dtype);  // exponent may have another type
}
Expected<std::vector<TensorType>> inferBitShift(const InferContext& ctx) {
  KILN_RETURN_IF_ERROR(sameDTypes(ctx));
  auto dir = ctx.node().attrString("direction", "");
  if (dir != "LEFT" && dir != "RIGHT")
    return ctx.error("attribute 'direction' must be LEFT or RIGHT, got '{}'", dir);
  return inferBroadcast(ctx, ctx.in(0).dtype);
}
Expected<std::vector<TensorType>> inferUnary(const InferContext& ctx) {
  return single(ctx.in(0).dtype, ctx.in(0).shape);
}
Expected<std::vector<TensorType>> inferUnaryBool(const InferContext& ctx) {
  return single(DType::Bool, ctx.in(0).shape);
}
Expected<std::vector<TensorType>> inferWhere(const InferContext& ctx) {
  if (ctx.in(0).dtype != DType::Bool)
    return ctx.error("condition must be bool, got {}", dtypeName(ctx.in(0).dtype));
  KILN_RETURN_IF_ERROR(sameDTypes(ctx, 1));
  return inferBroadcast(ctx, ctx.in(1).dtype);
}

// ---- evaluation ----

template <typename Fn, bool kBoolOut>
Expected<std::vector<Tensor>> evalBinaryT(const EvalContext& ctx) {
  DType t = ctx.in(0).dtype();
  KILN_ASSIGN_OR_RETURN(Tensor out, dispatchNumeric(ctx, t, [&](auto tag) -> Expected<Tensor> {
    using T = decltype(tag);
    if constexpr (std::is_invocable_v<Fn, T, T>) {
      // Fold inputs left to right (variadic Sum/Max/Min).
      Tensor acc = ctx.in(0);
      for (size_t k = 1; k < ctx.numInputs(); ++k) {
        std::vector<const Tensor*> pair{&acc, &ctx.in(k)};
        EvalContext sub(ctx.node(), pair);
        const T* a = acc.data<T>();
        const T* b = ctx.in(k).data<T>();
        using R = std::conditional_t<kBoolOut, bool, T>;
        auto r = mapBroadcast<R>(sub, kBoolOut ? DType::Bool : t,
                                 [&](const std::vector<int64_t>& o) {
                                   return R(Fn{}(a[o[0]], b[o[1]]));
                                 });
        if (!r.ok()) return r.error();
        acc = std::move(*r);
      }
      return acc;
    } else {
      return ctx.error("no compile-time evaluation for {}", dtypeName(t));
    }
  }));
  return std::vector<Tensor>{std::move(out)};
}

Expected<std::vector<Tensor>> evalWhere(const EvalContext& ctx) {
  DType t = ctx.in(1).dtype();
  KILN_ASSIGN_OR_RETURN(Tensor out, dispatchNumeric(ctx, t, [&](auto tag) -> Expected<Tensor> {
    using T = decltype(tag);
    const bool* c = ctx.in(0).data<bool>();
    const T* x = ctx.in(1).data<T>();
    const T* y = ctx.in(2).data<T>();
    return mapBroadcast<T>(ctx, t, [&](const std::vector<int64_t>& o) {
      return c[o[0]] ? x[o[1]] : y[o[2]];
    });
  }));
  return std::vector<Tensor>{std::move(out)};
}

template <typename Fn>
Expected<std::vector<Tensor>> evalUnaryFloat(const EvalContext& ctx) {
  const Tensor& x = ctx.in(0);
  KILN_ASSIGN_OR_RETURN(Tensor out, Tensor::zeros(x.dtype(), x.dims()));
  if (x.dtype() == DType::F32) {
    const float* a = x.data<float>();
    float* o = out.mutableData<float>();
    for (int64_t i = 0; i < x.numElements(); ++i) o[i] = float(Fn{}(double(a[i])));
  } else if (x.dtype() == DType::F64) {
    const double* a = x.data<double>();
    double* o = out.mutableData<double>();
    for (int64_t i = 0; i < x.numElements(); ++i) o[i] = Fn{}(a[i]);
  } else {
    return ctx.error("no compile-time evaluation for {}", dtypeName(x.dtype()));
  }
  return std::vector<Tensor>{std::move(out)};
}

struct NegFn { double operator()(double v) const { return -v; } };
struct AbsFn { double operator()(double v) const { return std::fabs(v); } };
struct SqrtFn { double operator()(double v) const { return std::sqrt(v); } };
struct FloorFn { double operator()(double v) const { return std::floor(v); } };
struct CeilFn { double operator()(double v) const { return std::ceil(v); } };
struct ReciprocalFn { double operator()(double v) const { return 1.0 / v; } };

Expected<std::vector<Tensor>> evalNot(const EvalContext& ctx) {
  const Tensor& x = ctx.in(0);
  KILN_ASSIGN_OR_RETURN(Tensor out, Tensor::zeros(DType::Bool, x.dims()));
  const uint8_t* a = x.bytes();
  uint8_t* o = out.mutableBytes();
  for (int64_t i = 0; i < x.numElements(); ++i) o[i] = a[i] ? 0 : 1;
  return std::vector<Tensor>{std::move(out)};
}

OpDef row(std::string name, int minIn, int maxIn, InferFn infer, EvalFn eval = nullptr,
          std::vector<AttrSpec> attrs = {}) {
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

void registerElementwiseOps(OpRegistry& r) {
  r.addDef(row("Add", 2, 2, inferSameType, evalBinaryT<AddFn, false>));
  r.addDef(row("Sub", 2, 2, inferSameType, evalBinaryT<SubFn, false>));
  r.addDef(row("Mul", 2, 2, inferSameType, evalBinaryT<MulFn, false>));
  r.addDef(row("Div", 2, 2, inferSameType, evalBinaryT<DivFn, false>));
  r.addDef(row("Mod", 2, 2, inferSameType, nullptr, {{"fmod", AttrKind::Int}}));
  r.addDef(row("Pow", 2, 2, inferPow));
  r.addDef(row("BitShift", 2, 2, inferBitShift, nullptr, {{"direction", AttrKind::String, true}}));
  for (const char* op : {"BitwiseAnd", "BitwiseOr", "BitwiseXor"})
    r.addDef(row(op, 2, 2, inferSameType));
  r.addDef(row("Max", 1, -1, inferSameType, evalBinaryT<MaxFn, false>));
  r.addDef(row("Min", 1, -1, inferSameType, evalBinaryT<MinFn, false>));
  r.addDef(row("Sum", 1, -1, inferSameType, evalBinaryT<AddFn, false>));
  r.addDef(row("Mean", 1, -1, inferSameType));
  r.addDef(row("Equal", 2, 2, inferCompare, evalBinaryT<EqualFn, true>));
  r.addDef(row("Less", 2, 2, inferCompare, evalBinaryT<LessFn, true>));
  r.addDef(row("Greater", 2, 2, inferCompare, evalBinaryT<GreaterFn, true>));
  r.addDef(row("LessOrEqual", 2, 2, inferCompare, evalBinaryT<LessEqFn, true>));
  r.addDef(row("GreaterOrEqual", 2, 2, inferCompare, evalBinaryT<GreaterEqFn, true>));
  r.addDef(row("And", 2, 2, inferCompare, evalBinaryT<AndFn, true>));
  r.addDef(row("Or", 2, 2, inferCompare, evalBinaryT<OrFn, true>));
  r.addDef(row("Xor", 2, 2, inferCompare, evalBinaryT<XorFn, true>));
  r.addDef(row("Where", 3, 3, inferWhere, evalWhere));
  r.addDef(row("Not", 1, 1, inferUnaryBool, evalNot));
  r.addDef(row("BitwiseNot", 1, 1, inferUnary));
  r.addDef(row("IsNaN", 1, 1, inferUnaryBool));
  r.addDef(row("IsInf", 1, 1, inferUnaryBool, nullptr,
               {{"detect_negative", AttrKind::Int}, {"detect_positive", AttrKind::Int}}));
  r.addDef(row("Neg", 1, 1, inferUnary, evalUnaryFloat<NegFn>));
  r.addDef(row("Abs", 1, 1, inferUnary, evalUnaryFloat<AbsFn>));
  r.addDef(row("Sqrt", 1, 1, inferUnary, evalUnaryFloat<SqrtFn>));
  r.addDef(row("Floor", 1, 1, inferUnary, evalUnaryFloat<FloorFn>));
  r.addDef(row("Ceil", 1, 1, inferUnary, evalUnaryFloat<CeilFn>));
  r.addDef(row("Reciprocal", 1, 1, inferUnary, evalUnaryFloat<ReciprocalFn>));
  for (const char* op : {"Exp", "Log", "Round", "Sign", "Sin", "Cos", "Tan", "Asin", "Acos", "Atan",
                         "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "Erf"})
    r.addDef(row(op, 1, 1, inferUnary));
}

}  // namespace kiln
