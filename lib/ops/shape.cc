// Shape op family: Shape, Size, Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Expand,
// Identity; the rest of the family lives in cast.cc, slice_concat.cc and generate.cc.
#include <algorithm>
#include <set>

#include "dim_math.h"
#include "family_registration.h"
#include "kiln/support/checked_math.h"
#include "tensor_copy.h"

namespace kiln {
namespace {

using Types = Expected<std::vector<TensorType>>;
using Tensors = Expected<std::vector<Tensor>>;

Tensors one(Expected<Tensor> t) {
  if (!t.ok()) return t.error();
  return std::vector<Tensor>{std::move(t).value()};
}

// Static dims of input 0 for evaluation: from its value, or (Shape/Size) from its type.
Expected<std::vector<int64_t>> evalInputDims(const EvalContext& ctx) {
  if (ctx.has(0)) return ctx.in(0).dims();
  const Value* v = ctx.node().input(0);
  if (!v || !v->shape().isStatic()) return ctx.error("input shape is not static");
  return v->shape().staticDims();
}

struct ShapeOp {
  static constexpr std::string_view kName = "Shape";
  static OpSchema schema() {
    return {1, 1, 1, 1, {{"start", AttrKind::Int}, {"end", AttrKind::Int}}};
  }
  // [start, end) after making negatives relative to rank and clamping to [0, rank].
  static std::pair<int64_t, int64_t> range(const Node& n, int64_t rank) {
    auto clampIdx = [rank](int64_t v) {
      return std::clamp(v < 0 ? v + rank : v, int64_t(0), rank);
    };
    int64_t start = clampIdx(n.attrInt("start", 0));
    int64_t end = n.hasAttr("end") ? clampIdx(n.attrInt("end", rank)) : rank;
    return {start, std::max(start, end)};
  }
  static Types inferTypes(const InferContext& ctx) {
    const Shape& s = ctx.in(0).shape;
    if (!s.rankKnown()) return single(DType::I64, unknownDims(1));
    auto [start, end] = range(ctx.node(), s.rank());
    return single(DType::I64, Shape::ofStatic({end - start}));
  }
  static Tensors evaluate(const EvalContext& ctx) {
    KILN_ASSIGN_OR_RETURN(auto dims, evalInputDims(ctx));
    auto [start, end] = range(ctx.node(), int64_t(dims.size()));
    std::vector<int64_t> out(dims.begin() + start, dims.begin() + end);
    int64_t n = int64_t(out.size());
    return std::vector<Tensor>{Tensor::fromVector(DType::I64, {n}, out)};
  }
};

struct SizeOp {
  static constexpr std::string_view kName = "Size";
  static OpSchema schema() { return {1, 1, 1, 1, {}}; }
  static Types inferTypes(const InferContext&) { return single(DType::I64, Shape::scalar()); }
  static Tensors evaluate(const EvalContext& ctx) {
    KILN_ASSIGN_OR_RETURN(auto dims, evalInputDims(ctx));
    auto n = checkedProduct(dims);
    if (!n) return ctx.error("element count overflows 64 bits");
    return std::vector<Tensor>{Tensor::scalar<int64_t>(DType::I64, *n)};
  }
};

// Output dims of Reshape: 0 copies an input dim (unless allowzero), one -1 is inferred.
// Works for inference (symbolic dims) and evaluation (static dims) alike.
template <typename Ctx>
Expected<std::vector<Dim>> reshapeDims(const Ctx& ctx, const Shape& in,
                                       const std::vector<int64_t>& target, bool allowZero) {
  std::vector<Dim> out;
  std::vector<bool> copied(target.size(), false);
  int64_t inferAt = -1;
  bool hasZero = false;
  for (size_t i = 0; i < target.size(); ++i) {
    int64_t v = target[i];
    if (v == -1) {
      if (inferAt >= 0) return ctx.error("shape has more than one -1 ({} and {})", inferAt, i);
      inferAt = int64_t(i);
      out.push_back(Dim::unknown());
    } else if (v < -1) {
      return ctx.error("shape[{}] is {}; dims must be >= -1", i, v);
    } else if (v == 0 && !allowZero) {
      if (in.rankKnown() && int64_t(i) >= in.rank())
        return ctx.error("shape[{}] is 0 (copy the input dim) but the input has rank {}", i,
                         in.rank());
      out.push_back(in.rankKnown() ? in[i] : Dim::unknown());
      copied[i] = true;
    } else {
      hasZero |= v == 0;
      out.push_back(Dim::known(v));
    }
  }
  if (allowZero && hasZero && inferAt >= 0)
    return ctx.error("shape has both 0 and -1, which allowzero=1 does not permit");
  if (!in.rankKnown()) return out;
  // Cancel dims that appear on both sides, then compare what is left.
  std::vector<Dim> rest(in.dims());
  std::vector<bool> used(rest.size(), false);
  // A copied dynamic dim cancels its source; copied static dims count on both sides so that a
  // copied 0 next to a -1 stays ambiguous (an error), as in the reference implementation.
  for (size_t i = 0; i < out.size(); ++i)
    if (copied[i] && !out[i].isStatic()) used[i] = true;
  int64_t inProduct = 1, outProduct = 1;
  int outDynamic = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    if ((copied[i] && !out[i].isStatic()) || int64_t(i) == inferAt) continue;
    const Dim& d = out[i];
    if (d.isStatic()) {
      auto p = checkedMul(outProduct, d.value);
      if (!p) return ctx.error("output shape element count overflows 64 bits");
      outProduct = *p;
      continue;
    }
    bool matched = false;
    for (size_t j = 0; j < rest.size() && !matched; ++j)
      if (!used[j] && d.isSymbolic() && rest[j] == d) matched = used[j] = true;
    if (!matched) ++outDynamic;
  }
  const Dim* single = nullptr;
  int inDynamic = 0;
  for (size_t j = 0; j < rest.size(); ++j) {
    if (used[j]) continue;
    if (rest[j].isStatic()) {
      auto p = checkedMul(inProduct, rest[j].value);
      if (!p) return ctx.error("input element count overflows 64 bits");
      inProduct = *p;
    } else {
      single = &rest[j];
      ++inDynamic;
    }
  }
  if (outDynamic > 0) return out;
  if (inferAt < 0) {
    if (inDynamic == 0 && inProduct != outProduct)
      return ctx.error("cannot reshape {} ({} elements) to {} ({} elements)", toString(in),
                       inProduct, toString(Shape(out)), outProduct);
    return out;
  }
  if (inDynamic == 0) {
    if (outProduct == 0 || inProduct % outProduct != 0)
      return ctx.error(
          "cannot reshape {} to {}: the other dims ({} elements) do not divide the "
          "input's {} elements",
          toString(in), toString(Shape(out)), outProduct, inProduct);
    out[size_t(inferAt)] = Dim::known(inProduct / outProduct);
  } else if (inDynamic == 1 && inProduct == outProduct) {
    out[size_t(inferAt)] = *single;
  }
  return out;
}

struct ReshapeOp {
  static constexpr std::string_view kName = "Reshape";
  static OpSchema schema() { return {2, 2, 1, 1, {{"allowzero", AttrKind::Int}}}; }
  static Types inferTypes(const InferContext& ctx) {
    KILN_RETURN_IF_ERROR(requireIntegerInput(ctx, 1, "shape"));
    const Shape& ss = ctx.in(1).shape;
    if (ss.rankKnown() && ss.rank() != 1)
      return ctx.error("the shape input must be 1-D, got {}", toString(ss));
    auto target = knownInts(ctx, 1);
    if (!target) {
      auto len = staticLength(ctx.in(1));
      return single(ctx.in(0).dtype, len ? unknownDims(*len) : Shape::unknownRank());
    }
    KILN_ASSIGN_OR_RETURN(
        auto dims, reshapeDims(ctx, ctx.in(0).shape, *target, ctx.node().attrInt("allowzero", 0)));
    return single(ctx.in(0).dtype, Shape(std::move(dims)));
  }
  static Tensors evaluate(const EvalContext& ctx) {
    KILN_RETURN_IF_ERROR(requireInputs(ctx, 2));
    const Tensor& x = ctx.in(0);
    KILN_ASSIGN_OR_RETURN(auto dims, reshapeDims(ctx, Shape::ofStatic(x.dims()), ctx.in(1).toInts(),
                                                 ctx.node().attrInt("allowzero", 0)));
    return one(withDims(x, Shape(dims).staticDims()));
  }
};

struct FlattenOp {
  static constexpr std::string_view kName = "Flatten";
  static OpSchema schema() { return {1, 1, 1, 1, {{"axis", AttrKind::Int}}}; }
  static Types inferTypes(const InferContext& ctx) {
    const Shape& s = ctx.in(0).shape;
    if (!s.rankKnown()) return single(ctx.in(0).dtype, unknownDims(2));
    int64_t r = s.rank(), axis = ctx.node().attrInt("axis", 1);
    if (axis < -r || axis > r) return ctx.error("axis {} is out of range for rank {}", axis, r);
    if (axis < 0) axis += r;
    std::span<const Dim> dims(s.dims());
    return single(ctx.in(0).dtype, Shape({dimProduct(dims.subspan(0, size_t(axis))),
                                          dimProduct(dims.subspan(size_t(axis)))}));
  }
  static Tensors evaluate(const EvalContext& ctx) {
    KILN_RETURN_IF_ERROR(requireInputs(ctx, 1));
    const Tensor& x = ctx.in(0);
    int64_t r = x.rank(), axis = ctx.node().attrInt("axis", 1);
    if (axis < -r || axis > r) return ctx.error("axis {} is out of range for rank {}", axis, r);
    if (axis < 0) axis += r;
    std::span<const int64_t> dims(x.dims());
    auto outer = checkedProduct(dims.subspan(0, size_t(axis)));
    auto inner = checkedProduct(dims.subspan(size_t(axis)));
    if (!outer || !inner) return ctx.error("element count overflows 64 bits");
    return one(withDims(x, {*outer, *inner}));
  }
};

// Squeeze without axes drops every static 1; with axes, the named dims (which must be 1).
template <typename Ctx>
Expected<Shape> squeezeShape(const Ctx& ctx, const Shape& s, const std::vector<int64_t>* axes) {
  std::vector<Dim> out;
  if (!axes) {
    for (const Dim& d : s.dims()) {
      if (!d.isStatic()) return Shape::unknownRank();  // might be 1 at run time
      if (d.value != 1) out.push_back(d);
    }
    return Shape(std::move(out));
  }
  std::set<int64_t> drop;
  for (int64_t a : *axes) {
    if (a < -s.rank() || a >= s.rank())
      return ctx.error("axis {} is out of range for rank {}", a, s.rank());
    int64_t n = a < 0 ? a + s.rank() : a;
    if (!drop.insert(n).second) return ctx.error("axis {} is repeated", a);
    if (s[size_t(n)].isStatic() && s[size_t(n)].value != 1)
      return ctx.error("cannot squeeze axis {} of size {} (only size-1 dims can be removed)", a,
                       s[size_t(n)].value);
  }
  for (int64_t i = 0; i < s.rank(); ++i)
    if (!drop.count(i)) out.push_back(s[size_t(i)]);
  return Shape(std::move(out));
}

struct SqueezeOp {
  static constexpr std::string_view kName = "Squeeze";
  static OpSchema schema() { return {1, 2, 1, 1, {}}; }
  static Types inferTypes(const InferContext& ctx) {
    KILN_RETURN_IF_ERROR(requireIntegerInput(ctx, 1, "axes"));
    const Shape& s = ctx.in(0).shape;
    auto axes = knownInts(ctx, 1);
    if (ctx.has(1) && !axes) {
      auto len = staticLength(ctx.in(1));
      if (s.rankKnown() && len && *len <= s.rank())
        return single(ctx.in(0).dtype, unknownDims(s.rank() - *len));
      return single(ctx.in(0).dtype, Shape::unknownRank());
    }
    if (!s.rankKnown()) return single(ctx.in(0).dtype, Shape::unknownRank());
    KILN_ASSIGN_OR_RETURN(Shape out, squeezeShape(ctx, s, ctx.has(1) ? &*axes : nullptr));
    return single(ctx.in(0).dtype, std::move(out));
  }
  static Tensors evaluate(const EvalContext& ctx) {
    KILN_RETURN_IF_ERROR(requireInputs(ctx, 1));
    const Tensor& x = ctx.in(0);
    std::vector<int64_t> axes;
    if (ctx.has(1)) axes = ctx.in(1).toInts();
    KILN_ASSIGN_OR_RETURN(
        Shape out, squeezeShape(ctx, Shape::ofStatic(x.dims()), ctx.has(1) ? &axes : nullptr));
    return one(withDims(x, out.staticDims()));
  }
};

template <typename Ctx>
Expected<Shape> unsqueezeShape(const Ctx& ctx, const Shape& s, const std::vector<int64_t>& axes) {
  int64_t outRank = s.rank() + int64_t(axes.size());
  std::set<int64_t> add;
  for (int64_t a : axes) {
    if (a < -outRank || a >= outRank)
      return ctx.error("axis {} is out of range for output rank {}", a, outRank);
    if (!add.insert(a < 0 ? a + outRank : a).second) return ctx.error("axis {} is repeated", a);
  }
  std::vector<Dim> out;
  size_t next = 0;
  for (int64_t i = 0; i < outRank; ++i) out.push_back(add.count(i) ? Dim::known(1) : s[next++]);
  return Shape(std::move(out));
}

struct UnsqueezeOp {
  static constexpr std::string_view kName = "Unsqueeze";
  static OpSchema schema() { return {2, 2, 1, 1, {}}; }
  static Types inferTypes(const InferContext& ctx) {
    KILN_RETURN_IF_ERROR(requireIntegerInput(ctx, 1, "axes"));
    const Shape& s = ctx.in(0).shape;
    auto axes = knownInts(ctx, 1);
    if (!s.rankKnown() || !axes) {
      auto len = staticLength(ctx.in(1));
      if (s.rankKnown() && len) return single(ctx.in(0).dtype, unknownDims(s.rank() + *len));
      return single(ctx.in(0).dtype, Shape::unknownRank());
    }
    KILN_ASSIGN_OR_RETURN(Shape out, unsqueezeShape(ctx, s, *axes));
    return single(ctx.in(0).dtype, std::move(out));
  }
  static Tensors evaluate(const EvalContext& ctx) {
    KILN_RETURN_IF_ERROR(requireInputs(ctx, 2));
    const Tensor& x = ctx.in(0);
    KILN_ASSIGN_OR_RETURN(Shape out,
                          unsqueezeShape(ctx, Shape::ofStatic(x.dims()), ctx.in(1).toInts()));
    return one(withDims(x, out.staticDims()));
  }
};

template <typename Ctx>
Expected<std::vector<int64_t>> transposePerm(const Ctx& ctx, int64_t rank) {
  std::vector<int64_t> perm = ctx.node().attrInts("perm");
  if (!ctx.node().hasAttr("perm"))
    for (int64_t i = rank - 1; i >= 0; --i) perm.push_back(i);
  if (int64_t(perm.size()) != rank)
    return ctx.error("perm has {} entries but the input has rank {}", perm.size(), rank);
  std::vector<bool> seen(size_t(rank), false);
  for (int64_t p : perm) {
    if (p < 0 || p >= rank || seen[size_t(p)])
      return ctx.error("perm must be a permutation of 0..{}", rank - 1);
    seen[size_t(p)] = true;
  }
  return perm;
}

struct TransposeOp {
  static constexpr std::string_view kName = "Transpose";
  static OpSchema schema() { return {1, 1, 1, 1, {{"perm", AttrKind::Ints}}}; }
  static Types inferTypes(const InferContext& ctx) {
    const Shape& s = ctx.in(0).shape;
    if (!s.rankKnown()) {
      const bool hasPerm = ctx.node().hasAttr("perm");
      return single(ctx.in(0).dtype, hasPerm
                                         ? unknownDims(int64_t(ctx.node().attrInts("perm").size()))
                                         : Shape::unknownRank());
    }
    KILN_ASSIGN_OR_RETURN(auto perm, transposePerm(ctx, s.rank()));
    std::vector<Dim> out;
    for (int64_t p : perm) out.push_back(s[size_t(p)]);
    return single(ctx.in(0).dtype, Shape(std::move(out)));
  }
  static Tensors evaluate(const EvalContext& ctx) {
    KILN_RETURN_IF_ERROR(requireInputs(ctx, 1));
    const Tensor& x = ctx.in(0);
    KILN_ASSIGN_OR_RETURN(auto perm, transposePerm(ctx, x.rank()));
    auto srcStrides = stridesOf(x.dims());
    std::vector<int64_t> dims, strides;
    for (int64_t p : perm) {
      dims.push_back(x.dims()[size_t(p)]);
      strides.push_back(srcStrides[size_t(p)]);
    }
    return one(takeStrided(x, dims, strides, 0));
  }
};

struct ExpandOp {
  static constexpr std::string_view kName = "Expand";
  static OpSchema schema() { return {2, 2, 1, 1, {}}; }
  static Types inferTypes(const InferContext& ctx) {
    KILN_RETURN_IF_ERROR(requireIntegerInput(ctx, 1, "shape"));
    const Shape& s = ctx.in(0).shape;
    DType t = ctx.in(0).dtype;
    auto target = knownInts(ctx, 1);
    if (target) {
      for (int64_t v : *target)
        if (v < 0) return ctx.error("shape contains negative dim {}", v);
      KILN_ASSIGN_OR_RETURN(Shape out, broadcastShapes(ctx, {s, Shape::ofStatic(*target)}));
      return single(t, std::move(out));
    }
    auto len = staticLength(ctx.in(1));
    if (!s.rankKnown() || !len) return single(t, Shape::unknownRank());
    // Unknown target values: only input dims > 1 are certain to survive broadcasting.
    int64_t rank = std::max(s.rank(), *len);
    Shape out = unknownDims(rank);
    for (int64_t i = 0; i < s.rank(); ++i) {
      const Dim& d = s[size_t(i)];
      if (d.isStatic() && d.value != 1) out.dims()[size_t(rank - s.rank() + i)] = d;
    }
    return single(t, std::move(out));
  }
  static Tensors evaluate(const EvalContext& ctx) {
    KILN_RETURN_IF_ERROR(requireInputs(ctx, 2));
    const Tensor& x = ctx.in(0);
    auto target = ctx.in(1).toInts();
    for (int64_t v : target)
      if (v < 0) return ctx.error("shape contains negative dim {}", v);
    auto dims = broadcastDims({x.dims(), target});
    if (!dims) return ctx.error("cannot broadcast input to the requested shape");
    return one(takeStrided(x, *dims, broadcastStrides(x.dims(), *dims), 0));
  }
};

struct IdentityOp {
  static constexpr std::string_view kName = "Identity";
  static OpSchema schema() { return {1, 1, 1, 1, {}}; }
  static Types inferTypes(const InferContext& ctx) {
    return single(ctx.in(0).dtype, ctx.in(0).shape);
  }
  static Tensors evaluate(const EvalContext& ctx) {
    KILN_RETURN_IF_ERROR(requireInputs(ctx, 1));
    return std::vector<Tensor>{ctx.in(0)};
  }
};

}  // namespace

void registerShapeOps(OpRegistry& r) {
  r.add<ShapeOp>();
  r.add<SizeOp>();
  r.add<ReshapeOp>();
  r.add<FlattenOp>();
  r.add<SqueezeOp>();
  r.add<UnsqueezeOp>();
  r.add<TransposeOp>();
  r.add<ExpandOp>();
  r.add<IdentityOp>();
  registerCastOps(r);
  registerSliceConcatOps(r);
  registerPadOps(r);
  registerGenerateOps(r);
}

}  // namespace kiln
