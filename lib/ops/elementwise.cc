// Elementwise families: broadcasting binary arithmetic, comparisons, logic, variadic
// Sum/Mean/Max/Min, unary math, and Where. Evaluation and generated code both run the
// kernels in kernels/ref/elementwise.h.
#include "ref/elementwise.h"

#include <algorithm>

#include "cpu_emit.h"
#include "dtype_dispatch.h"
#include "emit_support.h"
#include "kiln/ops/registry.h"
#include "shape_math.h"

namespace kiln {
namespace {

/// A kernel functor's C++ spelling, as a template argument.
template <size_t N>
struct Spelling {
  char text[N];
  constexpr Spelling(const char (&s)[N]) { std::copy_n(s, N, text); }  // NOLINT
};

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
Expected<std::vector<TensorType>> inferLogic(const InferContext& ctx) {
  for (size_t i = 0; i < ctx.numInputs(); ++i)
    if (ctx.in(i).dtype != DType::Bool)
      return ctx.error("input {} is {}, expected bool", i, dtypeName(ctx.in(i).dtype));
  return inferBroadcast(ctx, DType::Bool);
}
Expected<std::vector<TensorType>> inferPow(const InferContext& ctx) {
  return inferBroadcast(ctx, ctx.in(0).dtype);  // the exponent may have another type
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

// ---- shared loop geometry for evaluation and emission ----

std::vector<int64_t> staticDimsOf(const Value* v) {
  return v->shape().staticDims();
}

BroadcastLoop loopFor(const Node& n, size_t first, size_t count) {
  std::vector<std::vector<int64_t>> operands;
  for (size_t i = first; i < first + count; ++i) operands.push_back(staticDimsOf(n.input(i)));
  return collapseBroadcast(staticDimsOf(n.output(0)), operands);
}

BroadcastLoop loopForTensors(const std::vector<int64_t>& out,
                             const std::vector<const Tensor*>& ins) {
  std::vector<std::vector<int64_t>> operands;
  for (const Tensor* t : ins) operands.push_back(t->dims());
  return collapseBroadcast(out, operands);
}

// ---- evaluation ----

template <typename Fn>
Fn makeFn(const Node&) {
  return Fn{};
}
template <>
kiln_ref::IsInf makeFn<kiln_ref::IsInf>(const Node& n) {
  return kiln_ref::IsInf{n.attrInt("detect_negative", 1) != 0,
                         n.attrInt("detect_positive", 1) != 0};
}

/// Folds inputs left to right with a binary kernel (variadic Sum/Max/Min use k > 2).
template <typename Fn, bool kBoolOut>
Expected<std::vector<Tensor>> evalBinary(const EvalContext& ctx) {
  DType t = ctx.in(0).dtype();
  for (size_t i = 1; i < ctx.numInputs(); ++i)
    if (ctx.in(i).dtype() != t) return ctx.error("mixed input types");
  std::vector<std::vector<int64_t>> dims;
  for (size_t i = 0; i < ctx.numInputs(); ++i) dims.push_back(ctx.in(i).dims());
  auto outDims = broadcastDims(dims);
  if (!outDims) return ctx.error("inputs do not broadcast");
  KILN_ASSIGN_OR_RETURN(Tensor out, Tensor::zeros(kBoolOut ? DType::Bool : t, *outDims));
  auto run = [&](auto tag) -> Status {
    using T = decltype(tag);
    if constexpr (!std::is_invocable_v<Fn, T, T>) {
      return ctx.error("no evaluation for {}", dtypeName(t));
    } else {
      using R = std::conditional_t<kBoolOut, bool, T>;
      R* o = out.mutableData<R>();
      if (ctx.numInputs() == 1) {
        std::memcpy(o, ctx.in(0).bytes(), ctx.in(0).byteSize());
        return Status();
      }
      auto loop = loopForTensors(*outDims, {&ctx.in(0), &ctx.in(1)});
      kiln_ref::binary(int(loop.dims.size()), loop.dims.data(), loop.strides[0].data(),
                       loop.strides[1].data(), ctx.in(0).data<T>(), ctx.in(1).data<T>(), o, Fn{});
      if constexpr (!kBoolOut) {
        for (size_t k = 2; k < ctx.numInputs(); ++k) {
          Tensor acc = out;  // shares bytes; kernel reads and writes the same element
          auto l = loopForTensors(*outDims, {&acc, &ctx.in(k)});
          kiln_ref::binary(int(l.dims.size()), l.dims.data(), l.strides[0].data(),
                           l.strides[1].data(), acc.data<T>(), ctx.in(k).data<T>(), o, Fn{});
        }
      }
      return Status();
    }
  };
  KILN_RETURN_IF_ERROR(dispatchNumeric(
      t, run, [&] { return Status(ctx.error("no evaluation for {}", dtypeName(t))); }));
  return std::vector<Tensor>{std::move(out)};
}

template <typename Fn, bool kBoolOut>
Expected<std::vector<Tensor>> evalUnary(const EvalContext& ctx) {
  const Tensor& x = ctx.in(0);
  KILN_ASSIGN_OR_RETURN(Tensor out, Tensor::zeros(kBoolOut ? DType::Bool : x.dtype(), x.dims()));
  Fn fn = makeFn<Fn>(ctx.node());
  auto run = [&](auto tag) -> Status {
    using T = decltype(tag);
    if constexpr (!std::is_invocable_v<Fn, T> ||
                  std::is_same_v<T, bool> != std::is_same_v<Fn, kiln_ref::Not>) {
      return ctx.error("no evaluation for {}", dtypeName(x.dtype()));
    } else {
      using R = std::conditional_t<kBoolOut, bool, T>;
      kiln_ref::unary(x.numElements(), x.data<T>(), out.mutableData<R>(), fn);
      return Status();
    }
  };
  KILN_RETURN_IF_ERROR(dispatchNumeric(x.dtype(), run, [&] {
    return Status(ctx.error("no evaluation for {}", dtypeName(x.dtype())));
  }));
  return std::vector<Tensor>{std::move(out)};
}

Expected<std::vector<Tensor>> evalWhere(const EvalContext& ctx) {
  DType t = ctx.in(1).dtype();
  std::vector<std::vector<int64_t>> dims = {ctx.in(0).dims(), ctx.in(1).dims(), ctx.in(2).dims()};
  auto outDims = broadcastDims(dims);
  if (!outDims) return ctx.error("inputs do not broadcast");
  KILN_ASSIGN_OR_RETURN(Tensor out, Tensor::zeros(t, *outDims));
  auto run = [&](auto tag) -> Status {
    using T = decltype(tag);
    auto l = loopForTensors(*outDims, {&ctx.in(0), &ctx.in(1), &ctx.in(2)});
    kiln_ref::where(int(l.dims.size()), l.dims.data(), l.strides[0].data(), l.strides[1].data(),
                    l.strides[2].data(), ctx.in(0).data<bool>(), ctx.in(1).data<T>(),
                    ctx.in(2).data<T>(), out.mutableData<T>());
    return Status();
  };
  KILN_RETURN_IF_ERROR(dispatchNumeric(
      t, run, [&] { return Status(ctx.error("no evaluation for {}", dtypeName(t))); }));
  return std::vector<Tensor>{std::move(out)};
}

// ---- emission ----

Status checkComputable(const Node& n, EmitContext& ctx) {
  for (Value* v : n.inputs())
    if (v && (v->dtype() == DType::F16 || v->dtype() == DType::BF16 || cTypeOf(v->dtype()).empty()))
      return ctx.unsupported(fmt::format("{} arithmetic", dtypeName(v->dtype())));
  return Status();
}

std::string fnExpr(const Node& n, const char* spelling) {
  if (std::string_view(spelling) == "kiln_ref::IsInf")
    return fmt::format("kiln_ref::IsInf{{{}, {}}}", n.attrInt("detect_negative", 1) != 0,
                       n.attrInt("detect_positive", 1) != 0);
  return std::string(spelling) + "{}";
}

/// kHalfExact: the op is exact on f16 computed in float (Max, Min, Mod with fmod=1), so f16
/// inputs run through kiln_ref::HalfVia.
template <Spelling kFn, bool kHalfExact = false>
Status emitBinary(const Node& n, EmitContext& ctx) {
  bool half = kHalfExact;
  for (Value* v : n.inputs()) half = half && v && v->dtype() == DType::F16;
  if (!half) KILN_RETURN_IF_ERROR(checkComputable(n, ctx));
  const std::string fn =
      half ? fmt::format("kiln_ref::HalfVia<{}>{{}}", kFn.text) : fnExpr(n, kFn.text);
  ctx.useHeader("kiln_ref/elementwise.h");
  const size_t count = n.numInputs();
  const int64_t outElems = *n.output(0)->shape().numElements();
  if (count == 1) {
    ctx.call("kiln_ref::copy", fmt::format("std::memcpy({}, {}, {});", ctx.output(0), ctx.input(0),
                                           *dtypeStorageBytes(n.output(0)->dtype(), outElems)));
    return Status();
  }
  // The output may take over a dead input's buffer. With more than two inputs only input 0's:
  // the first step overwrites the output before later inputs are read.
  std::string out = count == 2 ? ctx.outputInPlace(0, {0, 1}) : ctx.outputInPlace(0, {0});
  if (count == 2 && !half && n.output(0)->dtype() == DType::F32 &&
      n.input(0)->dtype() == DType::F32 && n.input(1)->dtype() == DType::F32) {
    // f32 with a broadcast of at most 3 collapsed dims (a per-channel scale): a loop nest the
    // compiler vectorizes, split over threads when large (broadcastLoopNest).
    auto loop = collapseBroadcast(staticDimsOf(n.output(0)),
                                  {staticDimsOf(n.input(0)), staticDimsOf(n.input(1))});
    std::string stmt = broadcastLoopNest(
        ctx, loop,
        fmt::format("const float* p0 = {}; const float* p1 = {}; ", ctx.input(0), ctx.input(1)),
        out, fmt::format("[&](float a, float b) -> float {{ return {}(a, b); }}", fn),
        "p0[@0], p1[@1]");
    if (!stmt.empty()) {
      ctx.call(std::string("kiln::Broadcast<") + kFn.text + ">", stmt);
      return Status();
    }
  }
  for (size_t k = 1; k < count; ++k) {
    // The first step reads input 0; later steps accumulate into the output in place.
    std::vector<std::vector<int64_t>> operands = {
        k == 1 ? staticDimsOf(n.input(0)) : staticDimsOf(n.output(0)), staticDimsOf(n.input(k))};
    auto loop = collapseBroadcast(staticDimsOf(n.output(0)), operands);
    std::string a = k == 1 ? ctx.input(0) : out;
    ctx.call(std::string("kiln_ref::binary<") + kFn.text + ">",
             fmt::format("kiln_ref::binary({}, {}, {}, {}, {}, {}, {}, {});", loop.dims.size(),
                         ctx.constArray(loop.dims), ctx.constArray(loop.strides[0]),
                         ctx.constArray(loop.strides[1]), a, ctx.input(k), out, fn));
  }
  return Status();
}

Status emitMean(const Node& n, EmitContext& ctx) {
  KILN_RETURN_IF_ERROR(emitBinary<"kiln_ref::Add">(n, ctx));
  if (n.numInputs() > 1)
    ctx.call("kiln_ref::scale",
             fmt::format("kiln_ref::divide_by({}, {}, {});", *n.output(0)->shape().numElements(),
                         ctx.output(0), n.numInputs()));
  return Status();
}

Expected<std::vector<Tensor>> evalMean(const EvalContext& ctx) {
  KILN_ASSIGN_OR_RETURN(auto outs, (evalBinary<kiln_ref::Add, false>(ctx)));
  Tensor& t = outs[0];
  auto run = [&](auto tag) -> Status {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<T>) {
      kiln_ref::divide_by(t.numElements(), t.mutableData<T>(), ctx.numInputs());
      return Status();
    } else {
      return ctx.error("Mean needs a float type");
    }
  };
  KILN_RETURN_IF_ERROR(dispatchNumeric(t.dtype(), run, [&] { return Status(ctx.error("type")); }));
  return outs;
}

Expected<std::vector<Tensor>> evalMod(const EvalContext& ctx) {
  if (ctx.node().attrInt("fmod", 0)) return evalBinary<kiln_ref::ModTrunc, false>(ctx);
  return evalBinary<kiln_ref::ModFloor, false>(ctx);
}
Status emitMod(const Node& n, EmitContext& ctx) {
  if (n.attrInt("fmod", 0)) return emitBinary<"kiln_ref::ModTrunc", true>(n, ctx);
  if (isFloat(n.input(0)->dtype()))
    return ctx.unsupported("Mod with fmod=0 on floats (the spec requires fmod=1)");
  return emitBinary<"kiln_ref::ModFloor">(n, ctx);
}
Expected<std::vector<Tensor>> evalBitShift(const EvalContext& ctx) {
  if (ctx.node().attrString("direction", "") == "LEFT")
    return evalBinary<kiln_ref::ShiftLeft, false>(ctx);
  return evalBinary<kiln_ref::ShiftRight, false>(ctx);
}
Status emitBitShift(const Node& n, EmitContext& ctx) {
  if (n.attrString("direction", "") == "LEFT") return emitBinary<"kiln_ref::ShiftLeft">(n, ctx);
  return emitBinary<"kiln_ref::ShiftRight">(n, ctx);
}

Expected<std::vector<Tensor>> evalPow(const EvalContext& ctx) {
  const Tensor& a = ctx.in(0);
  const Tensor& b = ctx.in(1);
  auto outDims = broadcastDims({a.dims(), b.dims()});
  if (!outDims) return ctx.error("inputs do not broadcast");
  KILN_ASSIGN_OR_RETURN(Tensor out, Tensor::zeros(a.dtype(), *outDims));
  auto loop = loopForTensors(*outDims, {&a, &b});
  auto fail = [&] { return Status(ctx.error("no evaluation for these types")); };
  KILN_RETURN_IF_ERROR(dispatchNumeric(
      a.dtype(),
      [&](auto ta) -> Status {
        using A = decltype(ta);
        if constexpr (std::is_same_v<A, bool>)
          return fail();
        else
          return dispatchNumeric(
              b.dtype(),
              [&](auto tb) -> Status {
                using B = decltype(tb);
                if constexpr (std::is_same_v<B, bool>)
                  return fail();
                else {
                  kiln_ref::binary(int(loop.dims.size()), loop.dims.data(), loop.strides[0].data(),
                                   loop.strides[1].data(), a.data<A>(), b.data<B>(),
                                   out.mutableData<A>(), kiln_ref::Pow{});
                  return Status();
                }
              },
              fail);
      },
      fail));
  return std::vector<Tensor>{std::move(out)};
}

template <Spelling kFn>
Status emitUnary(const Node& n, EmitContext& ctx) {
  KILN_RETURN_IF_ERROR(checkComputable(n, ctx));
  KILN_ASSIGN_OR_RETURN(bool vectorized, emitCpuVectorUnary(n, ctx));
  if (vectorized) return Status();
  ctx.useHeader("kiln_ref/elementwise.h");
  std::string out = ctx.outputInPlace(0, {0});
  ctx.call(std::string("kiln_ref::unary<") + kFn.text + ">",
           fmt::format("kiln_ref::unary({}, {}, {}, {});", *n.output(0)->shape().numElements(),
                       ctx.input(0), out, fnExpr(n, kFn.text)));
  return Status();
}

Status emitWhere(const Node& n, EmitContext& ctx) {
  // Selection copies elements, so f16/bf16 (stored as uint16_t) work as well.
  if (cTypeOf(n.output(0)->dtype()).empty())
    return ctx.unsupported(fmt::format("Where on {} tensors", dtypeName(n.output(0)->dtype())));
  ctx.useHeader("kiln_ref/elementwise.h");
  auto loop = loopFor(n, 0, 3);
  ctx.call("kiln_ref::where",
           fmt::format("kiln_ref::where({}, {}, {}, {}, {}, {}, {}, {}, {});", loop.dims.size(),
                       ctx.constArray(loop.dims), ctx.constArray(loop.strides[0]),
                       ctx.constArray(loop.strides[1]), ctx.constArray(loop.strides[2]),
                       ctx.input(0), ctx.input(1), ctx.input(2), ctx.output(0)));
  return Status();
}

OpDef row(std::string name, int minIn, int maxIn, InferFn infer, EvalFn eval, EmitFn emit,
          std::vector<AttrSpec> attrs = {}) {
  OpDef d;
  d.name = std::move(name);
  d.schema.minInputs = minIn;
  d.schema.maxInputs = maxIn;
  d.schema.attrs = std::move(attrs);
  d.inferTypes = infer;
  d.evaluate = eval;
  d.emit = emit;
  return d;
}

#define KILN_BINARY(fn, boolOut) evalBinary<kiln_ref::fn, boolOut>, emitBinary<"kiln_ref::" #fn>
#define KILN_UNARY(fn, boolOut) evalUnary<kiln_ref::fn, boolOut>, emitUnary<"kiln_ref::" #fn>

}  // namespace

void registerElementwiseOps(OpRegistry& r) {
  r.addDef(row("Add", 2, 2, inferSameType, KILN_BINARY(Add, false)));
  r.addDef(row("Sub", 2, 2, inferSameType, KILN_BINARY(Sub, false)));
  r.addDef(row("Mul", 2, 2, inferSameType, KILN_BINARY(Mul, false)));
  r.addDef(row("Div", 2, 2, inferSameType, KILN_BINARY(Div, false)));
  r.addDef(row("Mod", 2, 2, inferSameType, evalMod, emitMod, {{"fmod", AttrKind::Int}}));
  r.addDef(row("Pow", 2, 2, inferPow, evalPow, emitBinary<"kiln_ref::Pow">));
  r.addDef(row("BitShift", 2, 2, inferBitShift, evalBitShift, emitBitShift,
               {{"direction", AttrKind::String, true}}));
  r.addDef(row("BitwiseAnd", 2, 2, inferSameType, KILN_BINARY(BitAnd, false)));
  r.addDef(row("BitwiseOr", 2, 2, inferSameType, KILN_BINARY(BitOr, false)));
  r.addDef(row("BitwiseXor", 2, 2, inferSameType, KILN_BINARY(BitXor, false)));
  r.addDef(row("Max", 1, -1, inferSameType, evalBinary<kiln_ref::Max, false>,
               emitBinary<"kiln_ref::Max", true>));
  r.addDef(row("Min", 1, -1, inferSameType, evalBinary<kiln_ref::Min, false>,
               emitBinary<"kiln_ref::Min", true>));
  r.addDef(row("Sum", 1, -1, inferSameType, KILN_BINARY(Add, false)));
  r.addDef(row("Mean", 1, -1, inferSameType, evalMean, emitMean));
  r.addDef(row("Equal", 2, 2, inferCompare, KILN_BINARY(Equal, true)));
  r.addDef(row("Less", 2, 2, inferCompare, KILN_BINARY(Less, true)));
  r.addDef(row("Greater", 2, 2, inferCompare, KILN_BINARY(Greater, true)));
  r.addDef(row("LessOrEqual", 2, 2, inferCompare, KILN_BINARY(LessEq, true)));
  r.addDef(row("GreaterOrEqual", 2, 2, inferCompare, KILN_BINARY(GreaterEq, true)));
  r.addDef(row("And", 2, 2, inferLogic, KILN_BINARY(And, true)));
  r.addDef(row("Or", 2, 2, inferLogic, KILN_BINARY(Or, true)));
  r.addDef(row("Xor", 2, 2, inferLogic, KILN_BINARY(Xor, true)));
  r.addDef(row("Where", 3, 3, inferWhere, evalWhere, emitWhere));
  r.addDef(row("Not", 1, 1, inferUnaryBool, KILN_UNARY(Not, true)));
  r.addDef(row("BitwiseNot", 1, 1, inferUnary, KILN_UNARY(BitNot, false)));
  r.addDef(row("IsNaN", 1, 1, inferUnaryBool, KILN_UNARY(IsNaN, true)));
  r.addDef(row("IsInf", 1, 1, inferUnaryBool, KILN_UNARY(IsInf, true),
               {{"detect_negative", AttrKind::Int}, {"detect_positive", AttrKind::Int}}));
  r.addDef(row("Neg", 1, 1, inferUnary, KILN_UNARY(Neg, false)));
  r.addDef(row("Abs", 1, 1, inferUnary, KILN_UNARY(Abs, false)));
  r.addDef(row("Sign", 1, 1, inferUnary, KILN_UNARY(Sign, false)));
  r.addDef(row("Reciprocal", 1, 1, inferUnary, KILN_UNARY(Reciprocal, false)));
  r.addDef(row("Sqrt", 1, 1, inferUnary, KILN_UNARY(Sqrt, false)));
  r.addDef(row("Exp", 1, 1, inferUnary, KILN_UNARY(Exp, false)));
  r.addDef(row("Log", 1, 1, inferUnary, KILN_UNARY(Log, false)));
  r.addDef(row("Floor", 1, 1, inferUnary, KILN_UNARY(Floor, false)));
  r.addDef(row("Ceil", 1, 1, inferUnary, KILN_UNARY(Ceil, false)));
  r.addDef(row("Round", 1, 1, inferUnary, KILN_UNARY(Round, false)));
  r.addDef(row("Sin", 1, 1, inferUnary, KILN_UNARY(Sin, false)));
  r.addDef(row("Cos", 1, 1, inferUnary, KILN_UNARY(Cos, false)));
  r.addDef(row("Tan", 1, 1, inferUnary, KILN_UNARY(Tan, false)));
  r.addDef(row("Asin", 1, 1, inferUnary, KILN_UNARY(Asin, false)));
  r.addDef(row("Acos", 1, 1, inferUnary, KILN_UNARY(Acos, false)));
  r.addDef(row("Atan", 1, 1, inferUnary, KILN_UNARY(Atan, false)));
  r.addDef(row("Sinh", 1, 1, inferUnary, KILN_UNARY(Sinh, false)));
  r.addDef(row("Cosh", 1, 1, inferUnary, KILN_UNARY(Cosh, false)));
  r.addDef(row("Asinh", 1, 1, inferUnary, KILN_UNARY(Asinh, false)));
  r.addDef(row("Acosh", 1, 1, inferUnary, KILN_UNARY(Acosh, false)));
  r.addDef(row("Atanh", 1, 1, inferUnary, KILN_UNARY(Atanh, false)));
  r.addDef(row("Erf", 1, 1, inferUnary, KILN_UNARY(Erf, false)));
}

}  // namespace kiln
