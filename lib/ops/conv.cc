// Convolution ops: Conv, ConvTranspose, ConvInteger and QLinearConv (ONNX semantics, 1-D to
// N-D, groups, dilations, explicit or automatic padding).
#include "kiln/ops/registry.h"
#include "kiln/support/checked_math.h"
#include "shape_math.h"

namespace kiln {
namespace {

constexpr std::initializer_list<DType> kInt8 = {DType::I8, DType::U8};

std::vector<AttrSpec> convAttrs() {
  return {{"auto_pad", AttrKind::String},     {"dilations", AttrKind::Ints},
          {"group", AttrKind::Int},           {"kernel_shape", AttrKind::Ints},
          {"pads", AttrKind::Ints},           {"strides", AttrKind::Ints},
          {"output_padding", AttrKind::Ints}, {"output_shape", AttrKind::Ints}};
}

Status sameDType(const InferContext& ctx, size_t i, std::string_view role, size_t ref,
                 std::string_view refRole) {
  if (!ctx.has(i) || ctx.in(i).dtype == ctx.in(ref).dtype) return Status();
  return ctx.error("input {} ({}) is {} but {} is {}; they must have one element type", i, role,
                   dtypeName(ctx.in(i).dtype), refRole, dtypeName(ctx.in(ref).dtype));
}

// The number of spatial dims, from X, W or kernel_shape (whichever is known); -1 if none is.
Expected<int64_t> spatialRank(const InferContext& ctx, const Shape& x, const Shape& w) {
  if (x.rankKnown() && x.rank() < 3)
    return ctx.error("input X has shape {}; it needs rank >= 3 (N, C, spatial dims...)",
                     toString(x));
  if (w.rankKnown() && w.rank() < 3)
    return ctx.error("weights W have shape {}; they need rank >= 3 (M, C/group, kernel dims...)",
                     toString(w));
  if (x.rankKnown() && w.rankKnown() && x.rank() != w.rank())
    return ctx.error("input X {} and weights W {} must have the same rank", toString(x),
                     toString(w));
  if (x.rankKnown()) return x.rank() - 2;
  if (w.rankKnown()) return w.rank() - 2;
  if (const Attribute* k = ctx.node().attr("kernel_shape")) return int64_t(k->ints().size());
  return -1;
}

// kernel_shape if given (checked against W), else W's trailing dims (-1 where unknown).
Expected<std::vector<int64_t>> kernelOf(const InferContext& ctx, const Shape& w, size_t spatial) {
  std::vector<int64_t> fromW(spatial, -1);
  if (w.rankKnown())
    for (size_t i = 0; i < spatial; ++i)
      if (w[2 + i].isStatic()) fromW[i] = w[2 + i].value;
  if (!ctx.node().hasAttr("kernel_shape")) return fromW;
  auto k = ctx.node().attrInts("kernel_shape");
  if (k.size() != spatial)
    return ctx.error("attribute 'kernel_shape' has {} values, expected {} for {} spatial dims",
                     k.size(), spatial, spatial);
  for (size_t i = 0; i < spatial; ++i)
    if (fromW[i] >= 0 && fromW[i] != k[i])
      return ctx.error("attribute 'kernel_shape' {} does not match the weights' kernel {}",
                       formatExtents(k), formatExtents(fromW));
  return k;
}

Expected<int64_t> groupOf(const InferContext& ctx) {
  int64_t group = ctx.node().attrInt("group", 1);
  if (group <= 0) return ctx.error("attribute 'group' is {}; it must be positive", group);
  return group;
}

// A 1-D bias of `channels` elements, when present.
Status checkBias(const InferContext& ctx, size_t i, const Dim& channels) {
  if (!ctx.has(i) || !ctx.in(i).shape.rankKnown()) return Status();
  const Shape& b = ctx.in(i).shape;
  if (b.rank() != 1 || (b[0].isStatic() && channels.isStatic() && b[0].value != channels.value))
    return ctx.error("bias B has shape {}; it must be 1-D with one value per output channel ({})",
                     toString(b), channels.isStatic() ? std::to_string(channels.value) : "?");
  return Status();
}

std::vector<Dim> spatialDims(const Shape& x, size_t spatial) {
  if (!x.rankKnown()) return std::vector<Dim>(spatial, Dim::unknown());
  return {x.dims().begin() + 2, x.dims().end()};
}

// Output shape of Conv-like ops: X [N, C, D...], W [M, C/group, k...] -> [N, M, O...].
// Input xi is X and wi is W; bias (if any) is checked by the caller.
Expected<Shape> convShape(const InferContext& ctx, size_t xi, size_t wi) {
  const Shape& x = ctx.in(xi).shape;
  const Shape& w = ctx.in(wi).shape;
  KILN_ASSIGN_OR_RETURN(int64_t spatial, spatialRank(ctx, x, w));
  KILN_ASSIGN_OR_RETURN(int64_t group, groupOf(ctx));
  if (spatial < 0) return Shape::unknownRank();
  if (x.rankKnown() && w.rankKnown() && x[1].isStatic() && w[1].isStatic()) {
    auto expect = checkedMul(w[1].value, group);
    if (!expect || *expect != x[1].value)
      return ctx.error("input X has {} channels but weights W {} with group={} expect {}",
                       x[1].value, toString(w), group,
                       expect ? std::to_string(*expect) : std::string("more than 2^63"));
  }
  if (w.rankKnown() && w[0].isStatic() && w[0].value % group != 0)
    return ctx.error("weights W have {} output channels, not divisible by group={}", w[0].value,
                     group);
  KILN_ASSIGN_OR_RETURN(auto kernel, kernelOf(ctx, w, size_t(spatial)));
  KILN_ASSIGN_OR_RETURN(auto geom, readWindowGeometry(ctx, kernel, true, false));
  KILN_ASSIGN_OR_RETURN(auto outSpatial,
                        slidingWindowDims(ctx, geom, spatialDims(x, size_t(spatial))));
  std::vector<Dim> out;
  out.push_back(x.rankKnown() ? x[0] : Dim::unknown());
  out.push_back(w.rankKnown() ? w[0] : Dim::unknown());
  out.insert(out.end(), outSpatial.begin(), outSpatial.end());
  return Shape(std::move(out));
}

struct ConvOp {
  static constexpr std::string_view kName = "Conv";
  static OpSchema schema() { return {2, 3, 1, 1, convAttrs()}; }
  static Expected<std::vector<TensorType>> inferTypes(const InferContext& ctx) {
    KILN_RETURN_IF_ERROR(requirePresent(ctx, 2));
    KILN_RETURN_IF_ERROR(requireDType(ctx, 0, "X", kFloatTypes));
    KILN_RETURN_IF_ERROR(sameDType(ctx, 1, "W", 0, "X"));
    KILN_RETURN_IF_ERROR(sameDType(ctx, 2, "B", 0, "X"));
    KILN_ASSIGN_OR_RETURN(Shape s, convShape(ctx, 0, 1));
    KILN_RETURN_IF_ERROR(checkBias(ctx, 2, s.rankKnown() ? s[1] : Dim::unknown()));
    return single(ctx.in(0).dtype, std::move(s));
  }
};

// Integer convolution: u8/i8 data and weights with optional zero points, i32 accumulators.
struct ConvIntegerOp {
  static constexpr std::string_view kName = "ConvInteger";
  static OpSchema schema() { return {2, 4, 1, 1, convAttrs()}; }
  static Expected<std::vector<TensorType>> inferTypes(const InferContext& ctx) {
    KILN_RETURN_IF_ERROR(requirePresent(ctx, 2));
    KILN_RETURN_IF_ERROR(requireDType(ctx, 0, "x", kInt8));
    KILN_RETURN_IF_ERROR(requireDType(ctx, 1, "w", kInt8));
    KILN_RETURN_IF_ERROR(sameDType(ctx, 2, "x_zero_point", 0, "x"));
    KILN_RETURN_IF_ERROR(sameDType(ctx, 3, "w_zero_point", 1, "w"));
    KILN_ASSIGN_OR_RETURN(Shape s, convShape(ctx, 0, 1));
    return single(DType::I32, std::move(s));
  }
};

// Quantized convolution: x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, optional i32 B.
struct QLinearConvOp {
  static constexpr std::string_view kName = "QLinearConv";
  static OpSchema schema() { return {8, 9, 1, 1, convAttrs()}; }
  static Expected<std::vector<TensorType>> inferTypes(const InferContext& ctx) {
    KILN_RETURN_IF_ERROR(requirePresent(ctx, 8));
    KILN_RETURN_IF_ERROR(requireDType(ctx, 0, "x", kInt8));
    KILN_RETURN_IF_ERROR(requireDType(ctx, 3, "w", kInt8));
    KILN_RETURN_IF_ERROR(requireDType(ctx, 7, "y_zero_point", kInt8));
    KILN_RETURN_IF_ERROR(sameDType(ctx, 2, "x_zero_point", 0, "x"));
    KILN_RETURN_IF_ERROR(sameDType(ctx, 5, "w_zero_point", 3, "w"));
    for (size_t i : {size_t(1), size_t(4), size_t(6)})
      KILN_RETURN_IF_ERROR(requireDType(ctx, i,
                                        i == 1   ? "x_scale"
                                        : i == 4 ? "w_scale"
                                                 : "y_scale",
                                        {DType::F32}));
    if (ctx.has(8)) KILN_RETURN_IF_ERROR(requireDType(ctx, 8, "B", {DType::I32}));
    KILN_ASSIGN_OR_RETURN(Shape s, convShape(ctx, 0, 3));
    KILN_RETURN_IF_ERROR(checkBias(ctx, 8, s.rankKnown() ? s[1] : Dim::unknown()));
    return single(ctx.in(7).dtype, std::move(s));
  }
};

// One spatial output extent of ConvTranspose without output_shape:
// stride*(in-1) + output_padding + dilated kernel - pads, or in*stride under SAME_*.
Expected<Dim> transposedExtent(const InferContext& ctx, const WindowGeometry& g, size_t i,
                               const Dim& in, int64_t outPad) {
  const size_t k = g.kernel.size();
  const int64_t s = g.strides[i];
  const bool same = g.autoPad == "SAME_UPPER" || g.autoPad == "SAME_LOWER";
  if (g.kernel[i] < 0 && !same) return Dim::unknown();
  if (!in.isStatic()) {
    auto span = checkedMul(g.kernel[i] - 1, g.dilations[i]);
    auto grow = span ? checkedAdd(*span, outPad) : std::nullopt;
    bool identity = s == 1 && (same || (grow && *grow == g.pads[i] + g.pads[i + k]));
    return identity ? in : Dim::unknown();
  }
  if (in.value == 0) return Dim::known(0);
  if (same) {
    auto v = checkedMul(in.value, s);
    if (!v) return ctx.error("output size overflows");
    return Dim::known(*v);
  }
  auto grown = checkedMul(s, in.value - 1);
  auto span = checkedMul(g.kernel[i] - 1, g.dilations[i]);
  auto total = grown && span ? checkedAdd(*grown, *span) : std::nullopt;
  if (total) total = checkedAdd(*total, outPad + 1);
  if (!total) return ctx.error("output size overflows");
  const int64_t v = *total - g.pads[i] - g.pads[i + k];
  if (v <= 0)
    return ctx.error("pads [{}] remove the whole output along spatial dim {}",
                     fmt::join(g.pads, ","), i);
  return Dim::known(v);
}

// X [N, C, D...], W [C, M/group, k...] -> [N, M, O...].
struct ConvTransposeOp {
  static constexpr std::string_view kName = "ConvTranspose";
  static OpSchema schema() { return {2, 3, 1, 1, convAttrs()}; }
  static Expected<std::vector<TensorType>> inferTypes(const InferContext& ctx) {
    KILN_RETURN_IF_ERROR(requirePresent(ctx, 2));
    KILN_RETURN_IF_ERROR(requireDType(ctx, 0, "X", kFloatTypes));
    KILN_RETURN_IF_ERROR(sameDType(ctx, 1, "W", 0, "X"));
    KILN_RETURN_IF_ERROR(sameDType(ctx, 2, "B", 0, "X"));
    const DType t = ctx.in(0).dtype;
    const Shape& x = ctx.in(0).shape;
    const Shape& w = ctx.in(1).shape;
    KILN_ASSIGN_OR_RETURN(int64_t spatialRank_, spatialRank(ctx, x, w));
    KILN_ASSIGN_OR_RETURN(int64_t group, groupOf(ctx));
    if (spatialRank_ < 0) return single(t, Shape::unknownRank());
    const size_t spatial = size_t(spatialRank_);
    if (x.rankKnown() && w.rankKnown() && x[1].isStatic() && w[0].isStatic() &&
        x[1].value != w[0].value)
      return ctx.error("input X has {} channels but weights W {} expect {}", x[1].value,
                       toString(w), w[0].value);
    if (w.rankKnown() && w[0].isStatic() && w[0].value % group != 0)
      return ctx.error("weights W have {} input channels, not divisible by group={}", w[0].value,
                       group);
    Dim channels = Dim::unknown();
    if (w.rankKnown() && w[1].isStatic()) {
      auto m = checkedMul(w[1].value, group);
      if (!m) return ctx.error("output channel count overflows");
      channels = Dim::known(*m);
    } else if (w.rankKnown() && group == 1) {
      channels = w[1];
    }
    KILN_ASSIGN_OR_RETURN(auto kernel, kernelOf(ctx, w, spatial));
    KILN_ASSIGN_OR_RETURN(auto g, readWindowGeometry(ctx, kernel, true, false));
    auto outPad = ctx.node().attrInts("output_padding", std::vector<int64_t>(spatial, 0));
    if (outPad.size() != spatial)
      return ctx.error("attribute 'output_padding' has {} values, expected {}", outPad.size(),
                       spatial);
    for (size_t i = 0; i < spatial; ++i)
      if (outPad[i] < 0 || (outPad[i] >= g.strides[i] && outPad[i] >= g.dilations[i]))
        return ctx.error("attribute 'output_padding' {} must be below the stride or dilation",
                         outPad[i]);
    std::vector<Dim> out{x.rankKnown() ? x[0] : Dim::unknown(), channels};
    if (ctx.node().hasAttr("output_shape")) {
      // The explicit output size wins; pads are derived from it. N and C may be included.
      auto os = ctx.node().attrInts("output_shape");
      if (os.size() == spatial + 2) os.erase(os.begin(), os.begin() + 2);
      if (os.size() != spatial)
        return ctx.error("attribute 'output_shape' has {} values, expected {} spatial sizes",
                         os.size(), spatial);
      for (int64_t v : os) {
        if (v < 0) return ctx.error("attribute 'output_shape' has negative size {}", v);
        out.push_back(Dim::known(v));
      }
    } else {
      auto in = spatialDims(x, spatial);
      for (size_t i = 0; i < spatial; ++i) {
        KILN_ASSIGN_OR_RETURN(Dim d, transposedExtent(ctx, g, i, in[i], outPad[i]));
        out.push_back(d);
      }
    }
    KILN_RETURN_IF_ERROR(checkBias(ctx, 2, channels));
    return single(t, Shape(std::move(out)));
  }
};

}  // namespace

void registerConvOps(OpRegistry& r) {
  r.add<ConvOp>();
  r.add<ConvTransposeOp>();
  r.add<ConvIntegerOp>();
  r.add<QLinearConvOp>();
}

}  // namespace kiln
