// Tensor op family: Constant, OneHot, TopK, NonZero, Unique, Compress, CumSum,
// ReverseSequence; gathers/scatters live in gather_scatter.cc, image ops in resize.cc.
#include "dim_math.h"
#include "family_registration.h"
#include "tensor_copy.h"

namespace kiln {
namespace {

using Types = Expected<std::vector<TensorType>>;
using Tensors = Expected<std::vector<Tensor>>;

struct ConstantOp {
  static constexpr std::string_view kName = "Constant";
  static OpSchema schema() { return {0, 0, 1, 1, {{"value", AttrKind::Tensor, true}}}; }
  static Types inferTypes(const InferContext& ctx) {
    const Attribute* v = ctx.node().attr("value");
    if (!v || v->kind() != AttrKind::Tensor || !v->t().valid())
      return ctx.error("Constant needs a tensor attribute 'value'");
    return single(v->t().dtype(), Shape::ofStatic(v->t().dims()));
  }
  static Tensors evaluate(const EvalContext& ctx) {
    const Attribute* v = ctx.node().attr("value");
    if (!v || v->kind() != AttrKind::Tensor || !v->t().valid())
      return ctx.error("Constant needs a tensor attribute 'value'");
    return std::vector<Tensor>{v->t()};
  }
};

struct OneHotOp {
  static constexpr std::string_view kName = "OneHot";
  static OpSchema schema() { return {3, 3, 1, 1, {{"axis", AttrKind::Int}}}; }
  static Types inferTypes(const InferContext& ctx) {
    const TensorType& indices = ctx.in(0);
    DType t = ctx.in(2).dtype;
    if (auto n = ctx.in(2).shape.numElements(); n && *n != 2)
      return ctx.error("values must hold [off_value, on_value], it has {} elements", *n);
    if (auto n = ctx.in(1).shape.numElements(); n && *n != 1)
      return ctx.error("depth must hold one element, it has {}", *n);
    Dim depth = Dim::unknown();
    if (auto d = knownScalar(ctx, 1)) {
      if (*d < 1) return ctx.error("depth must be positive, got {}", *d);
      depth = Dim::known(*d);
    }
    if (!indices.shape.rankKnown()) return single(t, Shape::unknownRank());
    int64_t outRank = indices.shape.rank() + 1;
    KILN_ASSIGN_OR_RETURN(int64_t axis,
                          normalizeAxis(ctx, ctx.node().attrInt("axis", -1), outRank));
    std::vector<Dim> out = indices.shape.dims();
    out.insert(out.begin() + axis, depth);
    return single(t, Shape(std::move(out)));
  }
};

struct TopKOp {
  static constexpr std::string_view kName = "TopK";
  static OpSchema schema() {
    return {2,
            2,
            2,
            2,
            {{"axis", AttrKind::Int}, {"largest", AttrKind::Int}, {"sorted", AttrKind::Int}}};
  }
  static Types inferTypes(const InferContext& ctx) {
    KILN_RETURN_IF_ERROR(requireIntegerInput(ctx, 1, "K"));
    const TensorType& x = ctx.in(0);
    if (auto n = ctx.in(1).shape.numElements(); n && *n != 1)
      return ctx.error("K must hold one element, it has {}", *n);
    if (!x.shape.rankKnown())
      return std::vector<TensorType>{{x.dtype, Shape()}, {DType::I64, Shape()}};
    KILN_ASSIGN_OR_RETURN(int64_t axis,
                          normalizeAxis(ctx, ctx.node().attrInt("axis", -1), x.shape.rank()));
    Shape out = x.shape;
    Dim& d = out.dims()[size_t(axis)];
    if (auto k = knownScalar(ctx, 1)) {
      if (*k < 0) return ctx.error("K is negative ({})", *k);
      if (d.isStatic() && *k > d.value)
        return ctx.error("K ({}) is larger than the axis ({} elements)", *k, d.value);
      d = Dim::known(*k);
    } else {
      // K is read at run time: at most the axis (docs/dynamic-shapes.md).
      d = d.isStatic() ? Dim::bounded(d.value) : Dim::unknown();
    }
    return std::vector<TensorType>{{x.dtype, out}, {DType::I64, out}};
  }
};

// Output [rank, count]: the count is data-dependent, so known only for a known input.
struct NonZeroOp {
  static constexpr std::string_view kName = "NonZero";
  static OpSchema schema() { return {1, 1, 1, 1, {}}; }
  static bool isNonZero(const Tensor& x, int64_t i) {
    return x.dtype() == DType::String ? !x.strings()[size_t(i)].empty() : x.doubleAt(i) != 0;
  }
  static int64_t count(const Tensor& x) {
    int64_t n = 0;
    for (int64_t i = 0; i < x.numElements(); ++i) n += isNonZero(x, i);
    return n;
  }
  static Types inferTypes(const InferContext& ctx) {
    const Shape& s = ctx.in(0).shape;
    Dim rank = s.rankKnown() ? Dim::known(s.rank()) : Dim::unknown();
    const Tensor* x = ctx.value(0);
    if (x) return single(DType::I64, Shape({rank, Dim::known(count(*x))}));
    // Decided by the data: at most every element.
    auto n = s.numElements();
    return single(DType::I64, Shape({rank, n ? Dim::bounded(*n) : Dim::unknown()}));
  }
  static Tensors evaluate(const EvalContext& ctx) {
    KILN_RETURN_IF_ERROR(requireInputs(ctx, 1));
    const Tensor& x = ctx.in(0);
    const int64_t r = x.rank(), n = count(x);
    KILN_ASSIGN_OR_RETURN(Tensor out, allocateResult(DType::I64, {r, n}));
    int64_t* o = out.mutableData<int64_t>();
    std::vector<int64_t> idx(size_t(r), 0);
    int64_t k = 0;
    for (int64_t e = 0; e < x.numElements(); ++e) {
      if (isNonZero(x, e)) {
        for (int64_t d = 0; d < r; ++d) o[d * n + k] = idx[size_t(d)];
        ++k;
      }
      for (int64_t d = r; d-- > 0;) {
        if (++idx[size_t(d)] < x.dims()[size_t(d)]) break;
        idx[size_t(d)] = 0;
      }
    }
    return std::vector<Tensor>{std::move(out)};
  }
};

struct UniqueOp {
  static constexpr std::string_view kName = "Unique";
  static OpSchema schema() {
    return {1, 1, 1, 4, {{"axis", AttrKind::Int}, {"sorted", AttrKind::Int}}};
  }
  static Types inferTypes(const InferContext& ctx) {
    const TensorType& x = ctx.in(0);
    Shape y = unknownDims(1);
    Dim inverse = Dim::unknown();
    // The number of unique slices is decided by the data: at most the slices there are.
    auto boundOf = [](const Dim& d) {
      return d.isStatic() ? Dim::bounded(d.value) : Dim::unknown();
    };
    Dim unique = Dim::unknown();
    if (ctx.node().hasAttr("axis")) {
      if (x.shape.rankKnown()) {
        KILN_ASSIGN_OR_RETURN(int64_t axis,
                              normalizeAxis(ctx, ctx.node().attrInt("axis", 0), x.shape.rank()));
        y = x.shape;
        inverse = y[size_t(axis)];
        unique = boundOf(inverse);
        y.dims()[size_t(axis)] = unique;
      } else {
        y = Shape::unknownRank();
      }
    } else if (x.shape.rankKnown()) {
      inverse = dimProduct(x.shape.dims());
      unique = boundOf(inverse);
      y = Shape({unique});
    }
    Shape uniqueCount({unique});
    return std::vector<TensorType>{{x.dtype, y},
                                   {DType::I64, uniqueCount},
                                   {DType::I64, Shape({inverse})},
                                   {DType::I64, uniqueCount}};
  }
};

struct CompressOp {
  static constexpr std::string_view kName = "Compress";
  static OpSchema schema() { return {2, 2, 1, 1, {{"axis", AttrKind::Int}}}; }
  static Types inferTypes(const InferContext& ctx) {
    const TensorType& x = ctx.in(0);
    if (ctx.in(1).dtype != DType::Bool)
      return ctx.error("condition must be bool, got {}", dtypeName(ctx.in(1).dtype));
    const Shape& cs = ctx.in(1).shape;
    if (cs.rankKnown() && cs.rank() != 1)
      return ctx.error("condition must be 1-D, got {}", toString(cs));
    // The selected count is known when the condition is.
    Dim count = Dim::unknown();
    std::optional<int64_t> condLen = staticLength(ctx.in(1));
    const Tensor* c = ctx.value(1);
    if (c) {
      int64_t n = 0;
      for (int64_t i = 0; i < c->numElements(); ++i) n += c->intAt(i) != 0;
      count = Dim::known(n);
    }
    // Otherwise decided by the data: at most the condition's length, clipped to the axis.
    auto bounded = [&](const Dim& axisDim) {
      if (c) return count;
      int64_t b = axisDim.isStatic() ? axisDim.value : -1;
      if (condLen && (b < 0 || *condLen < b)) b = *condLen;
      return b >= 0 ? Dim::bounded(b) : Dim::unknown();
    };
    auto checkLen = [&](const Dim& d) -> Status {
      if (condLen && d.isStatic() && *condLen > d.value)
        return ctx.error("condition has {} elements but the input has only {}", *condLen, d.value);
      return Status();
    };
    if (!ctx.node().hasAttr("axis")) {
      Dim all = x.shape.rankKnown() ? dimProduct(x.shape.dims()) : Dim::unknown();
      KILN_RETURN_IF_ERROR(checkLen(all));
      return single(x.dtype, Shape({bounded(all)}));
    }
    if (!x.shape.rankKnown()) return single(x.dtype, Shape::unknownRank());
    KILN_ASSIGN_OR_RETURN(int64_t axis,
                          normalizeAxis(ctx, ctx.node().attrInt("axis", 0), x.shape.rank()));
    Shape out = x.shape;
    KILN_RETURN_IF_ERROR(checkLen(out[size_t(axis)]));
    out.dims()[size_t(axis)] = bounded(out[size_t(axis)]);
    return single(x.dtype, std::move(out));
  }
};

struct CumSumOp {
  static constexpr std::string_view kName = "CumSum";
  static OpSchema schema() {
    return {2, 2, 1, 1, {{"exclusive", AttrKind::Int}, {"reverse", AttrKind::Int}}};
  }
  static Types inferTypes(const InferContext& ctx) {
    KILN_RETURN_IF_ERROR(requireIntegerInput(ctx, 1, "axis"));
    const TensorType& x = ctx.in(0);
    if (auto a = knownScalar(ctx, 1); a && x.shape.rankKnown())
      KILN_RETURN_IF_ERROR(normalizeAxis(ctx, *a, x.shape.rank()).status());
    return single(x.dtype, x.shape);
  }
};

struct ReverseSequenceOp {
  static constexpr std::string_view kName = "ReverseSequence";
  static OpSchema schema() {
    return {2, 2, 1, 1, {{"batch_axis", AttrKind::Int}, {"time_axis", AttrKind::Int}}};
  }
  static Types inferTypes(const InferContext& ctx) {
    KILN_RETURN_IF_ERROR(requireIntegerInput(ctx, 1, "sequence_lens"));
    const TensorType& x = ctx.in(0);
    int64_t b = ctx.node().attrInt("batch_axis", 1), t = ctx.node().attrInt("time_axis", 0);
    if ((b != 0 && b != 1) || (t != 0 && t != 1) || b == t)
      return ctx.error("batch_axis ({}) and time_axis ({}) must be 0 and 1 in some order", b, t);
    if (x.shape.rankKnown() && x.shape.rank() < 2)
      return ctx.error("input must have rank >= 2, got {}", toString(x.shape));
    return single(x.dtype, x.shape);
  }
};

}  // namespace

void registerTensorOps(OpRegistry& r) {
  r.add<ConstantOp>();
  r.add<OneHotOp>();
  r.add<TopKOp>();
  r.add<NonZeroOp>();
  r.add<UniqueOp>();
  r.add<CompressOp>();
  r.add<CumSumOp>();
  r.add<ReverseSequenceOp>();
  registerGatherScatterOps(r);
  registerImageOps(r);
}

}  // namespace kiln
