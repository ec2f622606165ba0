// Activation ops: pointwise nonlinearities (Relu ... Mish), Clip, PRelu, Shrink, and the
// single-axis Softmax/LogSoftmax/Hardmax. One table row per op; pointwise ones and Clip fold
// through the kernels/ref/activation.h functors the generated code applies.
#include "ref/activation.h"
#include "ref/elementwise.h"

#include <type_traits>

#include "dtype_dispatch.h"
#include "kiln/ops/registry.h"
#include "shape_math.h"
#include "tensor_copy.h"

namespace kiln {
namespace {

constexpr std::initializer_list<DType> kReluTypes = {
    DType::F32, DType::F16, DType::BF16, DType::F64, DType::I8, DType::I16, DType::I32, DType::I64};
constexpr std::initializer_list<DType> kPReluTypes = {DType::F32, DType::F16, DType::BF16,
                                                      DType::F64, DType::I32, DType::I64,
                                                      DType::U32, DType::U64};
constexpr std::initializer_list<DType> kNumeric = {DType::F32, DType::F16, DType::BF16, DType::F64,
                                                   DType::I8,  DType::U8,  DType::I16,  DType::U16,
                                                   DType::I32, DType::U32, DType::I64,  DType::U64};

// ---- evaluation: the kernels/ref/activation.h functors nn_emit.cc emits, with the same
// attributes (ONNX defaults), applied by kiln_ref::unary ----

template <typename Fn>
Fn makeActivation(const Node&) {
  return Fn{};
}
template <>
kiln_ref::LeakyRelu makeActivation(const Node& n) {
  return {n.attrFloat("alpha", 0.01f)};
}
template <>
kiln_ref::Elu makeActivation(const Node& n) {
  return {n.attrFloat("alpha", 1.0f)};
}
template <>
kiln_ref::Celu makeActivation(const Node& n) {
  return {n.attrFloat("alpha", 1.0f)};
}
template <>
kiln_ref::Selu makeActivation(const Node& n) {
  return {n.attrFloat("alpha", 1.67326319217681884765625f),
          n.attrFloat("gamma", 1.05070102214813232421875f)};
}
template <>
kiln_ref::HardSigmoid makeActivation(const Node& n) {
  return {n.attrFloat("alpha", 0.2f), n.attrFloat("beta", 0.5f)};
}
template <>
kiln_ref::ThresholdedRelu makeActivation(const Node& n) {
  return {n.attrFloat("alpha", 1.0f)};
}
template <>
kiln_ref::Gelu makeActivation(const Node& n) {
  return {n.attrString("approximate", "none") == "tanh"};
}
template <>
kiln_ref::Shrink makeActivation(const Node& n) {
  return {n.attrFloat("bias", 0.0f), n.attrFloat("lambd", 0.5f)};
}

// Applies Fn elementwise on the types the emitter accepts: f32/f64, and for Relu the signed
// integers as well.
template <typename Fn>
Expected<std::vector<Tensor>> evalPointwise(const EvalContext& ctx) {
  const Tensor& x = ctx.in(0);
  const Fn fn = makeActivation<Fn>(ctx.node());
  KILN_ASSIGN_OR_RETURN(Tensor out, allocateResult(x.dtype(), x.dims()));
  auto fail = [&] {
    return Status(ctx.error("no compile-time evaluation for {}", dtypeName(x.dtype())));
  };
  KILN_RETURN_IF_ERROR(dispatchNumeric(
      x.dtype(),
      [&](auto tag) -> Status {
        using T = decltype(tag);
        constexpr bool kReluInt =
            std::is_same_v<Fn, kiln_ref::Relu> && std::is_integral_v<T> && std::is_signed_v<T>;
        if constexpr (std::is_floating_point_v<T> || kReluInt) {
          kiln_ref::unary(x.numElements(), x.data<T>(), out.mutableData<T>(), fn);
          return Status();
        } else {
          return fail();
        }
      },
      fail));
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
  KILN_RETURN_IF_ERROR(requireDType(ctx, 0, "X", kFloatTypes));
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
  KILN_ASSIGN_OR_RETURN(Tensor out, allocateResult(x.dtype(), x.dims()));
  auto fail = [&] {
    return Status(ctx.error("no compile-time evaluation for {}", dtypeName(x.dtype())));
  };
  // The functor nn_emit.cc's emitClip applies: absent bounds are ClipBounds (±inf for floats).
  KILN_RETURN_IF_ERROR(dispatchNumeric(
      x.dtype(),
      [&](auto tag) -> Status {
        using T = decltype(tag);
        if constexpr (std::is_same_v<T, bool>) {
          return fail();
        } else {
          kiln_ref::Clip<T> clip{
              ctx.has(1) ? ctx.in(1).data<T>()[0] : kiln_ref::ClipBounds<T>::lowest(),
              ctx.has(2) ? ctx.in(2).data<T>()[0] : kiln_ref::ClipBounds<T>::highest()};
          kiln_ref::unary(x.numElements(), x.data<T>(), out.mutableData<T>(), clip);
          return Status();
        }
      },
      fail));
  return std::vector<Tensor>{std::move(out)};
}

// Softmax, LogSoftmax and Hardmax (opset 13): one axis, default -1.
Expected<std::vector<TensorType>> inferSoftmax(const InferContext& ctx) {
  KILN_RETURN_IF_ERROR(requireDType(ctx, 0, "input", kFloatTypes));
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
  const auto floats = &inferPointwise<&kFloatTypes>;
  const AttrSpec alpha{"alpha", AttrKind::Float};
  r.addDef(row("Relu", 1, 1, inferPointwise<&kReluTypes>, evalPointwise<kiln_ref::Relu>));
  r.addDef(row("LeakyRelu", 1, 1, floats, evalPointwise<kiln_ref::LeakyRelu>, {alpha}));
  r.addDef(row("PRelu", 2, 2, inferPRelu));
  r.addDef(row("Elu", 1, 1, floats, evalPointwise<kiln_ref::Elu>, {alpha}));
  r.addDef(row("Selu", 1, 1, floats, evalPointwise<kiln_ref::Selu>,
               {alpha, {"gamma", AttrKind::Float}}));
  r.addDef(row("Celu", 1, 1, inferCelu, evalPointwise<kiln_ref::Celu>, {alpha}));
  r.addDef(row("Sigmoid", 1, 1, floats, evalPointwise<kiln_ref::Sigmoid>));
  r.addDef(row("HardSigmoid", 1, 1, floats, evalPointwise<kiln_ref::HardSigmoid>,
               {alpha, {"beta", AttrKind::Float}}));
  r.addDef(row("HardSwish", 1, 1, floats, evalPointwise<kiln_ref::HardSwish>));
  r.addDef(row("Tanh", 1, 1, floats, evalPointwise<kiln_ref::Tanh>));
  r.addDef(row("Softplus", 1, 1, floats, evalPointwise<kiln_ref::Softplus>));
  r.addDef(row("Softsign", 1, 1, floats, evalPointwise<kiln_ref::Softsign>));
  r.addDef(row("ThresholdedRelu", 1, 1, floats, evalPointwise<kiln_ref::ThresholdedRelu>, {alpha}));
  r.addDef(row("Gelu", 1, 1, inferGelu, evalPointwise<kiln_ref::Gelu>,
               {{"approximate", AttrKind::String}}));
  r.addDef(row("Mish", 1, 1, floats, evalPointwise<kiln_ref::Mish>));
  r.addDef(row("Shrink", 1, 1, inferPointwise<&kNumeric>, evalPointwise<kiln_ref::Shrink>,
               {{"bias", AttrKind::Float}, {"lambd", AttrKind::Float}}));
  r.addDef(row("Clip", 1, 3, inferClip, evalClip));
  for (const char* op : {"Softmax", "LogSoftmax", "Hardmax"})
    r.addDef(row(op, 1, 1, inferSoftmax, nullptr, {{"axis", AttrKind::Int}}));
}

}  // namespace kiln
