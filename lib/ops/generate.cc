// Ops that create or rearrange whole tensors: ConstantOfShape, Range, EyeLike, Trilu,
// Dropout, DepthToSpace, SpaceToDepth.
#include "ref/misc.h"

#include <cmath>
#include <type_traits>

#include "dim_math.h"
#include "dtype_dispatch.h"
#include "family_registration.h"
#include "kiln/ops/infer.h"
#include "kiln/support/checked_math.h"
#include "tensor_copy.h"

namespace kiln {
namespace {

using Types = Expected<std::vector<TensorType>>;
using Tensors = Expected<std::vector<Tensor>>;

struct ConstantOfShapeOp {
  static constexpr std::string_view kName = "ConstantOfShape";
  static OpSchema schema() { return {1, 1, 1, 1, {{"value", AttrKind::Tensor}}}; }
  template <typename Ctx>
  static Expected<DType> valueType(const Ctx& ctx) {
    const Attribute* v = ctx.node().attr("value");
    if (!v) return DType::F32;
    if (v->t().numElements() != 1)
      return ctx.error("attribute 'value' must hold exactly one element, it has {}",
                       v->t().numElements());
    return v->t().dtype();
  }
  static Types inferTypes(const InferContext& ctx) {
    KILN_RETURN_IF_ERROR(requireIntegerInput(ctx, 0, "shape"));
    KILN_ASSIGN_OR_RETURN(DType t, valueType(ctx));
    const Shape& ss = ctx.in(0).shape;
    if (ss.rankKnown() && ss.rank() != 1)
      return ctx.error("the shape input must be 1-D, got {}", toString(ss));
    auto dims = knownInts(ctx, 0);
    if (!dims) {
      auto len = staticLength(ctx.in(0));
      return single(t, len ? unknownDims(*len) : Shape::unknownRank());
    }
    for (int64_t d : *dims)
      if (d < 0) return ctx.error("shape contains negative dim {}", d);
    return single(t, Shape::ofStatic(*dims));
  }
  static Tensors evaluate(const EvalContext& ctx) {
    KILN_RETURN_IF_ERROR(requireInputs(ctx, 1));
    KILN_ASSIGN_OR_RETURN(DType t, valueType(ctx));
    auto dims = ctx.in(0).toInts();
    KILN_ASSIGN_OR_RETURN(TensorBuilder b, TensorBuilder::create(t, dims));
    if (const Attribute* v = ctx.node().attr("value"))
      for (int64_t i = 0; i < b.numElements(); ++i) b.copy(i, v->t(), 0);
    KILN_ASSIGN_OR_RETURN(Tensor out, std::move(b).finish());
    return std::vector<Tensor>{std::move(out)};
  }
};

// Number of elements of Range(start, limit, delta): max(ceil((limit - start) / delta), 0).
template <typename Ctx>
Expected<int64_t> rangeCount(const Ctx& ctx, const Tensor& start, const Tensor& limit,
                             const Tensor& delta) {
  if (isFloat(start.dtype())) {
    double s = start.doubleAt(0), l = limit.doubleAt(0), d = delta.doubleAt(0);
    if (d == 0) return ctx.error("delta is 0");
    double n = std::ceil((l - s) / d);
    if (std::isnan(n)) return ctx.error("start, limit and delta give no element count");
    if (n <= 0) return int64_t(0);
    if (n > 9.0e18) return ctx.error("Range would have {} elements", n);
    return int64_t(n);
  }
  int64_t s = start.intAt(0), l = limit.intAt(0), d = delta.intAt(0), diff;
  if (d == 0) return ctx.error("delta is 0");
  if (__builtin_sub_overflow(l, s, &diff)) return ctx.error("limit - start overflows");
  if ((d > 0 && diff <= 0) || (d < 0 && diff >= 0)) return int64_t(0);
  return diff / d + (diff % d != 0);
}

struct RangeOp {
  static constexpr std::string_view kName = "Range";
  static OpSchema schema() { return {3, 3, 1, 1, {}}; }
  static Types inferTypes(const InferContext& ctx) {
    DType t = ctx.in(0).dtype;
    for (size_t i = 0; i < 3; ++i) {
      if (ctx.in(i).dtype != t)
        return ctx.error("start, limit and delta must have one type; input {} is {}", i,
                         dtypeName(ctx.in(i).dtype));
      auto n = ctx.in(i).shape.numElements();
      if (n && *n != 1) return ctx.error("input {} must be a scalar, it has {} elements", i, *n);
    }
    if (!isFloat(t) && !isSignedInteger(t))
      return ctx.error("Range needs a float or signed integer type, got {}", dtypeName(t));
    if (ctx.value(0) && ctx.value(1) && ctx.value(2)) {
      KILN_ASSIGN_OR_RETURN(int64_t n,
                            rangeCount(ctx, *ctx.value(0), *ctx.value(1), *ctx.value(2)));
      return single(t, Shape::ofStatic({n}));
    }
    // A run-time count: a data symbol, which a declared size downstream may fix.
    return single(t, Shape({Dim::named(dataDimSymbol(ctx.node().output(0)->name()))}));
  }
  static Tensors evaluate(const EvalContext& ctx) {
    KILN_RETURN_IF_ERROR(requireInputs(ctx, 3));
    const Tensor &start = ctx.in(0), &delta = ctx.in(2);
    for (size_t i = 0; i < 3; ++i)
      if (ctx.in(i).numElements() != 1 || ctx.in(i).dtype() != start.dtype())
        return ctx.error("start, limit and delta must be scalars of one type");
    KILN_ASSIGN_OR_RETURN(int64_t n, rangeCount(ctx, start, ctx.in(1), delta));
    KILN_ASSIGN_OR_RETURN(Tensor out, allocateResult(start.dtype(), {n}));
    // The kernel generate_emit.cc's emitRange calls: computed in the element type.
    auto fail = [&] {
      return Status(ctx.error("no compile-time evaluation for {}", dtypeName(start.dtype())));
    };
    KILN_RETURN_IF_ERROR(dispatchKernelElem(
        start.dtype(),
        [&](auto tag) -> Status {
          using E = decltype(tag);
          using S = kiln_ref::storage_t<E>;
          if constexpr (std::is_same_v<E, bool> || std::is_unsigned_v<E>) {
            return fail();
          } else {
            kiln_ref::range<E>(start.data<S>()[0], delta.data<S>()[0], n, out.mutableData<S>());
            return Status();
          }
        },
        fail));
    return std::vector<Tensor>{std::move(out)};
  }
};

struct EyeLikeOp {
  static constexpr std::string_view kName = "EyeLike";
  static OpSchema schema() {
    return {1, 1, 1, 1, {{"dtype", AttrKind::String}, {"k", AttrKind::Int}}};
  }
  static Types inferTypes(const InferContext& ctx) {
    const TensorType& in = ctx.in(0);
    if (in.shape.rankKnown() && in.shape.rank() != 2)
      return ctx.error("input must be 2-D, got {}", toString(in.shape));
    KILN_ASSIGN_OR_RETURN(DType t, dtypeAttr(ctx, "dtype", in.dtype));
    return single(t, in.shape.rankKnown() ? in.shape : unknownDims(2));
  }
  static Tensors evaluate(const EvalContext& ctx) {
    KILN_RETURN_IF_ERROR(requireInputs(ctx, 1));
    const Tensor& x = ctx.in(0);
    auto t = parseDType(ctx.node().attrString("dtype", std::string(dtypeName(x.dtype()))));
    if (!t || x.rank() != 2 || *t == DType::String || *t == DType::Undefined)
      return ctx.error("cannot evaluate EyeLike for this input");
    KILN_ASSIGN_OR_RETURN(Tensor out, allocateResult(*t, x.dims()));
    const int64_t rows = x.dims()[0], cols = x.dims()[1], k = ctx.node().attrInt("k", 0);
    auto fail = [&] { return Status(ctx.error("cannot evaluate EyeLike for this input")); };
    // The kernel generate_emit.cc's emitEyeLike calls.
    KILN_RETURN_IF_ERROR(dispatchKernelElem(
        *t,
        [&](auto tag) -> Status {
          using E = decltype(tag);
          kiln_ref::eye_like<E>(rows, cols, k, out.mutableData<kiln_ref::storage_t<E>>());
          return Status();
        },
        fail));
    return std::vector<Tensor>{std::move(out)};
  }
};

struct TriluOp {
  static constexpr std::string_view kName = "Trilu";
  static OpSchema schema() { return {1, 2, 1, 1, {{"upper", AttrKind::Int}}}; }
  static Types inferTypes(const InferContext& ctx) {
    KILN_RETURN_IF_ERROR(requireIntegerInput(ctx, 1, "k"));
    const TensorType& in = ctx.in(0);
    if (in.shape.rankKnown() && in.shape.rank() < 2)
      return ctx.error("input must have rank >= 2, got {}", toString(in.shape));
    return single(in.dtype, in.shape);
  }
};

struct DropoutOp {
  static constexpr std::string_view kName = "Dropout";
  static OpSchema schema() { return {1, 3, 1, 2, {{"seed", AttrKind::Int}}}; }
  static Types inferTypes(const InferContext& ctx) {
    const TensorType& in = ctx.in(0);
    if (ctx.has(1) && !isFloat(ctx.in(1).dtype))
      return ctx.error("ratio must be a float scalar, got {}", dtypeName(ctx.in(1).dtype));
    if (ctx.has(2) && ctx.in(2).dtype != DType::Bool)
      return ctx.error("training_mode must be a bool scalar, got {}", dtypeName(ctx.in(2).dtype));
    // Training mode (a run-time flag, or a true constant) draws the mask from kiln's seeded
    // generator (kernels/ref/random.h): deterministic, but not numpy's numbers.
    return std::vector<TensorType>{in, {DType::Bool, in.shape}};
  }
  // Inference mode (or a zero ratio) is the identity with an all-true mask.
  static Tensors evaluate(const EvalContext& ctx) {
    KILN_RETURN_IF_ERROR(requireInputs(ctx, 1));
    bool training = ctx.has(2) && ctx.in(2).numElements() == 1 && ctx.in(2).intAt(0) != 0;
    double ratio = ctx.has(1) && ctx.in(1).numElements() == 1 ? ctx.in(1).doubleAt(0) : 0.5;
    if (training && ratio != 0) return ctx.error("training-mode dropout is random");
    std::vector<Tensor> outs{ctx.in(0)};
    if (ctx.node().numOutputs() > 1) {
      KILN_ASSIGN_OR_RETURN(Tensor mask, allocateResult(DType::Bool, ctx.in(0).dims()));
      uint8_t* m = mask.mutableBytes();
      for (int64_t i = 0; i < mask.numElements(); ++i) m[i] = 1;
      outs.push_back(std::move(mask));
    }
    return outs;
  }
};

// DepthToSpace ([N, C, H, W] → [N, C/b², H*b, W*b]) and its inverse SpaceToDepth.
template <bool kToSpace>
struct BlockRearrangeOp {
  static constexpr std::string_view kName = kToSpace ? "DepthToSpace" : "SpaceToDepth";
  static OpSchema schema() {
    if constexpr (kToSpace)
      return {1, 1, 1, 1, {{"blocksize", AttrKind::Int, true}, {"mode", AttrKind::String}}};
    else
      return {1, 1, 1, 1, {{"blocksize", AttrKind::Int, true}}};
  }
  static Types inferTypes(const InferContext& ctx) {
    const TensorType& in = ctx.in(0);
    int64_t b = ctx.node().attrInt("blocksize", 0);
    if (b < 1) return ctx.error("blocksize must be >= 1, got {}", b);
    if (kToSpace) {
      std::string mode = ctx.node().attrString("mode", "DCR");
      if (mode != "DCR" && mode != "CRD") return ctx.error("mode '{}' is not DCR or CRD", mode);
    }
    if (!in.shape.rankKnown()) return single(in.dtype, unknownDims(4));
    if (in.shape.rank() != 4) return ctx.error("input must be 4-D, got {}", toString(in.shape));
    auto bb = checkedMul(b, b);
    if (!bb) return ctx.error("blocksize {} is too large", b);
    std::vector<Dim> d = in.shape.dims();
    // shrink: divide a dim by k, which must divide it when static.
    auto shrink = [&](const Dim& x, int64_t k, const char* what) -> Expected<Dim> {
      if (!x.isStatic()) return k == 1 ? x : Dim::unknown();
      if (x.value % k != 0) return ctx.error("{} ({}) is not divisible by {}", what, x.value, k);
      return Dim::known(x.value / k);
    };
    if (kToSpace) {
      KILN_ASSIGN_OR_RETURN(d[1], shrink(d[1], *bb, "channels"));
      d[2] = dimTimes(d[2], b);
      d[3] = dimTimes(d[3], b);
    } else {
      d[1] = dimTimes(d[1], *bb);
      KILN_ASSIGN_OR_RETURN(d[2], shrink(d[2], b, "height"));
      KILN_ASSIGN_OR_RETURN(d[3], shrink(d[3], b, "width"));
    }
    return single(in.dtype, Shape(std::move(d)));
  }
};

}  // namespace

void registerGenerateOps(OpRegistry& r) {
  r.add<ConstantOfShapeOp>();
  r.add<RangeOp>();
  r.add<EyeLikeOp>();
  r.add<TriluOp>();
  r.add<DropoutOp>();
  r.add<BlockRearrangeOp<true>>();
  r.add<BlockRearrangeOp<false>>();
}

}  // namespace kiln
