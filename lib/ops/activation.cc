// Activation ops: pointwise nonlinearities (Relu ... Mish), Clip, PRelu, Shrink, and the
// single-axis Softmax/LogSoftmax/Hardmax. One table row per op; pointwise ones fold on f32/f64.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "kiln/ops/registry.h"
#include "shape_math.h"

namespace kiln {
namespace {

constexpr std::initializer_list<DType> kFloats = {DType::F32, DType::F16, DType::BF16, DType::F64};
constexpr std::initializer_list<DType> kReluTypes = {
    DType::F32, DType::F16, DType::BF16, DType::F64, DType::I8, DType::I16, DType::I32, DType::I64};
constexpr std::initializer_list<DType> kPReluTypes = {DType::F32, DType::F16, DType::BF16,
                                                      DType::F64, DType::I32, DType::I64,
                                                      DType::U32, DType::U64};
constexpr std::initializer_list<DType> kNumeric = {DType::F32, DType::F16, DType::BF16, DType::F64,
                                                   DType::I8,  DType::U8,  DType::I16,  DType::U16,
                                                   DType::I32, DType::U32, DType::I64,  DType::U64};

// ---- pointwise functions; each reads its attributes (ONNX defaults) once per node ----

struct ReluFn {
  explicit ReluFn(const Node&) {}
  double operator()(double x) const { return x > 0 ? x : 0; }
};
struct LeakyReluFn {
  double alpha;
  explicit LeakyReluFn(const Node& n) : alpha(n.attrFloat("alpha", 0.01f)) {}
  double operator()(double x) const { return x >= 0 ? x : alpha * x; }
};
struct EluFn {
  double alpha;
  explicit EluFn(const Node& n) : alpha(n.attrFloat("alpha", 1.0f)) {}
  double operator()(double x) const { return x >= 0 ? x : alpha * std::expm1(x); }
};
struct SeluFn {
  double alpha, gamma;
  explicit SeluFn(const Node& n)
      : alpha(n.attrFloat("alpha", 1.67326319217681884765625f)),
        gamma(n.attrFloat("gamma", 1.05070102214813232421875f)) {}
  double operator()(double x) const { return gamma * (x > 0 ? x : alpha * std::expm1(x)); }
};
struct CeluFn {
  double alpha;
  explicit CeluFn(const Node& n) : alpha(n.attrFloat("alpha", 1.0f)) {}
  double operator()(double x) const {
    return std::max(0.0, x) + std::min(0.0, alpha * std::expm1(x / alpha));
  }
};
struct SigmoidFn {
  explicit SigmoidFn(const Node&) {}
  double operator()(double x) const { return 1.0 / (1.0 + std::exp(-x)); }
};
struct HardSigmoidFn {
  double alpha, beta;
  explicit HardSigmoidFn(const Node& n)
      : alpha(n.attrFloat("alpha", 0.2f)), beta(n.attrFloat("beta", 0.5f)) {}
  double operator()(double x) const { return std::clamp(alpha * x + beta, 0.0, 1.0); }
};
struct HardSwishFn {
  explicit HardSwishFn(const Node&) {}
  double operator()(double x) const { return x * std::clamp(x / 6.0 + 0.5, 0.0, 1.0); }
};
struct TanhFn {
  explicit TanhFn(const Node&) {}
  double operator()(double x) const { return std::tanh(x); }
};
struct SoftplusFn {
  explicit SoftplusFn(const Node&) {}
  double operator()(double x) const { return std::log1p(std::exp(x)); }
};
struct SoftsignFn {
  explicit SoftsignFn(const Node&) {}
  double operator()(double x) const { return x / (1.0 + std::fabs(x)); }
};
struct ThresholdedReluFn {
  double alpha;
  explicit ThresholdedReluFn(const Node& n) : alpha(n.attrFloat("alpha", 1.0f)) {}
  double operator()(double x) const { return x > alpha ? x : 0; }
};
struct GeluFn {
  bool tanhApprox;
  explicit GeluFn(const Node& n) : tanhApprox(n.attrString("approximate", "none") == "tanh") {}
  double operator()(double x) const {
    if (!tanhApprox) return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
    const double c = std::sqrt(2.0 / M_PI);
    return 0.5 * x * (1.0 + std::tanh(c * (x + 0.044715 * x * x * x)));
  }
};
struct MishFn {
  explicit MishFn(const Node&) {}
  double operator()(double x) const { return x * std::tanh(std::log1p(std::exp(x))); }
};
struct ShrinkFn {
  double bias, lambd;
  explicit ShrinkFn(const Node& n)
      : bias(n.attrFloat("bias", 0.0f)), lambd(n.attrFloat("lambd", 0.5f)) {}
  double operator()(double x) const { return x < -lambd ? x + bias : x > lambd ? x - bias : 0.0; }
};

// Applies Fn elementwise to f32/f64 input 0 (and to integer types where ints are allowed,
// through double, which is exact for the small values constant folding sees).
template <typename Fn>
Expected<std::vector<Tensor>> evalPointwise(const EvalContext& ctx) {
  const Tensor& x = ctx.in(0);
  Fn fn(ctx.node());
  KILN_ASSIGN_OR_RETURN(Tensor out, Tensor::zeros(x.dtype(), x.dims()));
  auto run = [&](auto tag) {
    using T = decltype(tag);
    const T* a = x.data<T>();
    T* o = out.mutableData<T>();
    for (int64_t i = 0; i < x.numElements(); ++i) o[i] = T(fn(double(a[i])));
  };
  switch (x.dtype()) {
    case DType::F32:
      run(float{});
      break;
    case DType::F64:
      run(double{});
      break;
    default:
      return ctx.error("no compile-time evaluation for {}", dtypeName(x.dtype()));
  }
  return std::vector<Tensor>{std::move(out)};
}

Expected<std::vector<Tensor>> evalRelu(const EvalContext& ctx) {
  const Tensor& x = ctx.in(0);
  if (x.dtype() != DType::I64 && x.dtype() != DType::I32) return evalPointwise<ReluFn>(ctx);
  KILN_ASSIGN_OR_RETURN(Tensor out, Tensor::zeros(x.dtype(), x.dims()));
  for (int64_t i = 0; i < x.numElements(); ++i) {
    if (x.dtype() == DType::I64)
      out.mutableData<int64_t>()[i] = std::max<int64_t>(0, x.data<int64_t>()[i]);
    else
      out.mutableData<int32_t>()[i] = std::max<int32_t>(0, x.data<int32_t>()[i]);
  }
  return std::vector<Tensor>{std::move(out)};
}

// ---- type inference ----

template <const std::initializer_list<DType>* kAllowed>
Expected<std::vector<TensorType>> inferPointwise(const InferContext& ctx) {
  KILN_RETURN_IF_ERROR(requireDType(ctx, 0, "X", *kAllowed));
  return single(ctx.in(0).dtype, ctx.in(0).shape);
}

Expected<std::vector<TensorType>> inferCelu(const InferContext& ctx) {
  KILN_RETURN_IF_ERROR(requireDType(ctx, 0, "X", {DType::F32}));
  if (ctx.node().attrFloat("alpha", 1.0f) == 0.0f)
    return ctx.error("attribute 'alpha' must not be 0 (Celu divides by it)");
  return single(ctx.in(0).dtype, ctx.in(0).shape);
}

Expected<std::vector<TensorType>> inferGelu(const InferContext& ctx) {
  KILN_RETURN_IF_ERROR(requireDType(ctx, 0, "X", kFloats));
  auto approx = ctx.node().attrString("approximate", "none");
  if (approx != "none" && approx != "tanh")
    return ctx.error("attribute 'approximate' is '{}'; use 'none' or 'tanh'", approx);
  return single(ctx.in(0).dtype, ctx.in(0).shape);
}

// The slope broadcasts unidirectionally to X: the output always has X's shape.
Expected<std::vector<TensorType>> inferPRelu(const InferContext& ctx) {
  KILN_RETURN_IF_ERROR(requirePresent(ctx, 2));
  KILN_RETURN_IF_ERROR(requireDType(ctx, 0, "X", kPReluTypes));
  if (ctx.in(1).dtype != ctx.in(0).dtype)
    return ctx.error("slope is {} but X is {}; they must have one element type",
                     dtypeName(ctx.in(1).dtype), dtypeName(ctx.in(0).dtype));
  const Shape& x = ctx.in(0).shape;
  const Shape& slope = ctx.in(1).shape;
  if (x.rankKnown() && slope.rankKnown()) {
    if (slope.rank() > x.rank())
      return ctx.error("slope {} has a higher rank than X {}; it must broadcast to X",
                       toString(slope), toString(x));
    const size_t off = size_t(x.rank() - slope.rank());
    for (size_t i = 0; i < slope.dims().size(); ++i) {
      const Dim& s = slope[i];
      const Dim& d = x[off + i];
      if (s.isStatic() && s.value != 1 && d.isStatic() && s.value != d.value)
        return ctx.error("slope {} does not broadcast to X {} (dim {} is {} vs {})",
                         toString(slope), toString(x), off + i, s.value, d.value);
    }
  }
  return single(ctx.in(0).dtype, x);
}

// min and max are optional scalars of X's type.
Expected<std::vector<TensorType>> inferClip(const InferContext& ctx) {
  KILN_RETURN_IF_ERROR(requireDType(ctx, 0, "input", kNumeric));
  for (size_t i : {size_t(1), size_t(2)}) {
    if (!ctx.has(i)) continue;
    const char* role = i == 1 ? "min" : "max";
    if (ctx.in(i).dtype != ctx.in(0).dtype)
      return ctx.error("{} is {} but the input is {}; they must have one element type", role,
                       dtypeName(ctx.in(i).dtype), dtypeName(ctx.in(0).dtype));
    auto count = ctx.in(i).shape.numElements();
    if (ctx.in(i).shape.rankKnown() && ctx.in(i).shape.rank() > 0 && count != int64_t(1))
      return ctx.error("{} has shape {}; it must be a scalar", role, toString(ctx.in(i).shape));
  }
  return single(ctx.in(0).dtype, ctx.in(0).shape);
}

Expected<std::vector<Tensor>> evalClip(const EvalContext& ctx) {
  const Tensor& x = ctx.in(0);
  for (size_t i : {size_t(1), size_t(2)})
    if (ctx.has(i) && (ctx.in(i).dtype() != x.dtype() || ctx.in(i).numElements() != 1))
      return ctx.error("min/max must be scalars of the input's type");
  KILN_ASSIGN_OR_RETURN(Tensor out, Tensor::zeros(x.dtype(), x.dims()));
  auto run = [&](auto tag) -> Status {
    using T = decltype(tag);
    T lo = ctx.has(1) ? ctx.in(1).data<T>()[0] : std::numeric_limits<T>::lowest();
    T hi = ctx.has(2) ? ctx.in(2).data<T>()[0] : std::numeric_limits<T>::max();
    const T* a = x.data<T>();
    T* o = out.mutableData<T>();
    // min(max(x, lo), hi): max wins when min > max, and NaN passes through, as in the spec.
    for (int64_t i = 0; i < x.numElements(); ++i) {
      T m = a[i] < lo ? lo : a[i];
      o[i] = m > hi ? hi : m;
    }
    return Status();
  };
  switch (x.dtype()) {
    case DType::F32:
      KILN_RETURN_IF_ERROR(run(float{}));
      break;
    case DType::F64:
      KILN_RETURN_IF_ERROR(run(double{}));
      break;
    case DType::I64:
      KILN_RETURN_IF_ERROR(run(int64_t{}));
      break;
    case DType::I32:
      KILN_RETURN_IF_ERROR(run(int32_t{}));
      break;
    case DType::I8:
      KILN_RETURN_IF_ERROR(run(int8_t{}));
      break;
    case DType::U8:
      KILN_RETURN_IF_ERROR(run(uint8_t{}));
      break;
    default:
      return ctx.error("no compile-time evaluation for {}", dtypeName(x.dtype()));
  }
  return std::vector<Tensor>{std::move(out)};
}

// Softmax, LogSoftmax and Hardmax (opset 13): one axis, default -1.
Expected<std::vector<TensorType>> inferSoftmax(const InferContext& ctx) {
  KILN_RETURN_IF_ERROR(requireDType(ctx, 0, "input", kFloats));
  const Shape& s = ctx.in(0).shape;
  if (s.rankKnown()) {
    if (s.rank() == 0) return ctx.error("input is a scalar; it needs at least one axis");
    KILN_RETURN_IF_ERROR(normalizeAxis(ctx, ctx.node().attrInt("axis", -1), s.rank()).status());
  }
  return single(ctx.in(0).dtype, s);
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

void registerActivationOps(OpRegistry& r) {
  const auto floats = &inferPointwise<&kFloats>;
  const AttrSpec alpha{"alpha", AttrKind::Float};
  r.addDef(row("Relu", 1, 1, inferPointwise<&kReluTypes>, evalRelu));
  r.addDef(row("LeakyRelu", 1, 1, floats, evalPointwise<LeakyReluFn>, {alpha}));
  r.addDef(row("PRelu", 2, 2, inferPRelu));
  r.addDef(row("Elu", 1, 1, floats, evalPointwise<EluFn>, {alpha}));
  r.addDef(row("Selu", 1, 1, floats, evalPointwise<SeluFn>, {alpha, {"gamma", AttrKind::Float}}));
  r.addDef(row("Celu", 1, 1, inferCelu, evalPointwise<CeluFn>, {alpha}));
  r.addDef(row("Sigmoid", 1, 1, floats, evalPointwise<SigmoidFn>));
  r.addDef(row("HardSigmoid", 1, 1, floats, evalPointwise<HardSigmoidFn>,
               {alpha, {"beta", AttrKind::Float}}));
  r.addDef(row("HardSwish", 1, 1, floats, evalPointwise<HardSwishFn>));
  r.addDef(row("Tanh", 1, 1, floats, evalPointwise<TanhFn>));
  r.addDef(row("Softplus", 1, 1, floats, evalPointwise<SoftplusFn>));
  r.addDef(row("Softsign", 1, 1, floats, evalPointwise<SoftsignFn>));
  r.addDef(row("ThresholdedRelu", 1, 1, floats, evalPointwise<ThresholdedReluFn>, {alpha}));
  r.addDef(
      row("Gelu", 1, 1, inferGelu, evalPointwise<GeluFn>, {{"approximate", AttrKind::String}}));
  r.addDef(row("Mish", 1, 1, floats, evalPointwise<MishFn>));
  r.addDef(row("Shrink", 1, 1, inferPointwise<&kNumeric>, evalPointwise<ShrinkFn>,
               {{"bias", AttrKind::Float}, {"lambd", AttrKind::Float}}));
  r.addDef(row("Clip", 1, 3, inferClip, evalClip));
  for (const char* op : {"Softmax", "LogSoftmax", "Hardmax"})
    r.addDef(row(op, 1, 1, inferSoftmax, nullptr, {{"axis", AttrKind::Int}}));
}

}  // namespace kiln
