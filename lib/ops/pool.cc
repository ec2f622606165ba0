// Pooling ops: MaxPool, AveragePool, LpPool, their Global forms, MaxRoiPool and MaxUnpool.
#include "kiln/ops/registry.h"
#include "kiln/support/checked_math.h"
#include "shape_math.h"

namespace kiln {
namespace {

constexpr std::initializer_list<DType> kMaxPoolTypes = {DType::F32, DType::F16, DType::BF16,
                                                        DType::F64, DType::I8,  DType::U8};

std::vector<AttrSpec> poolAttrs() {
  return {{"auto_pad", AttrKind::String},
          {"ceil_mode", AttrKind::Int},
          {"count_include_pad", AttrKind::Int},
          {"dilations", AttrKind::Ints},
          {"kernel_shape", AttrKind::Ints, true},
          {"pads", AttrKind::Ints},
          {"storage_order", AttrKind::Int},
          {"strides", AttrKind::Ints},
          {"p", AttrKind::Int}};
}

// kernel_shape, checked against X's rank: X is [N, C, D1..Dk] for a k-D kernel.
Expected<std::vector<int64_t>> poolKernel(const InferContext& ctx) {
  auto kernel = ctx.node().attrInts("kernel_shape");
  if (kernel.empty()) return ctx.error("attribute 'kernel_shape' must list the window size");
  const Shape& x = ctx.in(0).shape;
  if (x.rankKnown() && x.rank() != int64_t(kernel.size()) + 2)
    return ctx.error("input X has shape {} but kernel_shape {} needs rank {} (N, C, spatial...)",
                     toString(x), formatExtents(kernel), kernel.size() + 2);
  return kernel;
}

std::vector<Dim> spatialOf(const Shape& x, size_t k) {
  if (!x.rankKnown()) return std::vector<Dim>(k, Dim::unknown());
  return {x.dims().begin() + 2, x.dims().end()};
}

// Sliding-window pooling output: [N, C, O1..Ok].
Expected<Shape> poolShape(const InferContext& ctx, bool useDilations) {
  KILN_ASSIGN_OR_RETURN(auto kernel, poolKernel(ctx));
  const size_t k = kernel.size();
  KILN_ASSIGN_OR_RETURN(auto g, readWindowGeometry(ctx, kernel, useDilations, true));
  const Shape& x = ctx.in(0).shape;
  KILN_ASSIGN_OR_RETURN(auto spatial, slidingWindowDims(ctx, g, spatialOf(x, k)));
  std::vector<Dim> out{x.rankKnown() ? x[0] : Dim::unknown(),
                       x.rankKnown() ? x[1] : Dim::unknown()};
  out.insert(out.end(), spatial.begin(), spatial.end());
  return Shape(std::move(out));
}

Status checkFlag(const InferContext& ctx, const char* name) {
  int64_t v = ctx.node().attrInt(name, 0);
  if (v != 0 && v != 1) return ctx.error("attribute '{}' is {}; use 0 or 1", name, v);
  return Status();
}

Status checkP(const InferContext& ctx) {
  int64_t p = ctx.node().attrInt("p", 2);
  if (p <= 0) return ctx.error("attribute 'p' is {}; the norm order must be positive", p);
  return Status();
}

// Y, and optionally Indices (i64, same shape) into the flattened input.
struct MaxPoolOp {
  static constexpr std::string_view kName = "MaxPool";
  static OpSchema schema() { return {1, 1, 1, 2, poolAttrs()}; }
  static Expected<std::vector<TensorType>> inferTypes(const InferContext& ctx) {
    KILN_RETURN_IF_ERROR(requireDType(ctx, 0, "X", kMaxPoolTypes));
    KILN_RETURN_IF_ERROR(checkFlag(ctx, "storage_order"));
    KILN_ASSIGN_OR_RETURN(Shape s, poolShape(ctx, true));
    return std::vector<TensorType>{{ctx.in(0).dtype, s}, {DType::I64, s}};
  }
};

struct AveragePoolOp {
  static constexpr std::string_view kName = "AveragePool";
  static OpSchema schema() { return {1, 1, 1, 1, poolAttrs()}; }
  static Expected<std::vector<TensorType>> inferTypes(const InferContext& ctx) {
    KILN_RETURN_IF_ERROR(requireDType(ctx, 0, "X", kFloatTypes));
    KILN_RETURN_IF_ERROR(checkFlag(ctx, "count_include_pad"));
    KILN_ASSIGN_OR_RETURN(Shape s, poolShape(ctx, true));
    return single(ctx.in(0).dtype, std::move(s));
  }
};

struct LpPoolOp {
  static constexpr std::string_view kName = "LpPool";
  static OpSchema schema() { return {1, 1, 1, 1, poolAttrs()}; }
  static Expected<std::vector<TensorType>> inferTypes(const InferContext& ctx) {
    KILN_RETURN_IF_ERROR(requireDType(ctx, 0, "X", kFloatTypes));
    KILN_RETURN_IF_ERROR(checkP(ctx));
    KILN_ASSIGN_OR_RETURN(Shape s, poolShape(ctx, true));
    return single(ctx.in(0).dtype, std::move(s));
  }
};

// Global pools reduce every spatial dim to 1: [N, C, D...] -> [N, C, 1...].
Expected<std::vector<TensorType>> inferGlobalPool(const InferContext& ctx) {
  KILN_RETURN_IF_ERROR(requireDType(ctx, 0, "X", kFloatTypes));
  if (ctx.node().opType() == "GlobalLpPool") KILN_RETURN_IF_ERROR(checkP(ctx));
  const Shape& x = ctx.in(0).shape;
  if (!x.rankKnown()) return single(ctx.in(0).dtype, x);
  if (x.rank() < 2)
    return ctx.error("input X has shape {}; it needs rank >= 2 (N, C, spatial...)", toString(x));
  std::vector<Dim> out(size_t(x.rank()), Dim::known(1));
  out[0] = x[0];
  out[1] = x[1];
  return single(ctx.in(0).dtype, Shape(std::move(out)));
}

template <const char* kOpName>
struct GlobalPoolOp {
  static constexpr std::string_view kName = kOpName;
  static OpSchema schema() { return {1, 1, 1, 1, {{"p", AttrKind::Int}}}; }
  static Expected<std::vector<TensorType>> inferTypes(const InferContext& ctx) {
    return inferGlobalPool(ctx);
  }
};
constexpr char kGlobalAveragePool[] = "GlobalAveragePool";
constexpr char kGlobalMaxPool[] = "GlobalMaxPool";
constexpr char kGlobalLpPool[] = "GlobalLpPool";

// X [N, C, H, W], rois [R, 5] (batch index, x1, y1, x2, y2) -> [R, C, ph, pw].
struct MaxRoiPoolOp {
  static constexpr std::string_view kName = "MaxRoiPool";
  static OpSchema schema() {
    return {
        2, 2, 1, 1, {{"pooled_shape", AttrKind::Ints, true}, {"spatial_scale", AttrKind::Float}}};
  }
  static Expected<std::vector<TensorType>> inferTypes(const InferContext& ctx) {
    KILN_RETURN_IF_ERROR(requirePresent(ctx, 2));
    KILN_RETURN_IF_ERROR(requireDType(ctx, 0, "X", kFloatTypes));
    if (ctx.in(1).dtype != ctx.in(0).dtype)
      return ctx.error("rois are {} but X is {}; they must have one element type",
                       dtypeName(ctx.in(1).dtype), dtypeName(ctx.in(0).dtype));
    auto pooled = ctx.node().attrInts("pooled_shape");
    if (pooled.size() != 2 || pooled[0] <= 0 || pooled[1] <= 0)
      return ctx.error("attribute 'pooled_shape' is [{}]; it must be two positive sizes",
                       fmt::join(pooled, ","));
    const Shape& x = ctx.in(0).shape;
    const Shape& rois = ctx.in(1).shape;
    if (x.rankKnown() && x.rank() != 4)
      return ctx.error("input X has shape {}; it must be 4-D [N, C, H, W]", toString(x));
    if (rois.rankKnown() && (rois.rank() != 2 || (rois[1].isStatic() && rois[1].value != 5)))
      return ctx.error("rois have shape {}; they must be [num_rois, 5]", toString(rois));
    return single(ctx.in(0).dtype, Shape({rois.rankKnown() ? rois[0] : Dim::unknown(),
                                          x.rankKnown() ? x[1] : Dim::unknown(),
                                          Dim::known(pooled[0]), Dim::known(pooled[1])}));
  }
};

// X and Indices (from MaxPool) scatter into a zero tensor of output_shape, or of the size
// MaxPool's input had: (in - 1) * stride + kernel - pads.
struct MaxUnpoolOp {
  static constexpr std::string_view kName = "MaxUnpool";
  static OpSchema schema() { return {2, 3, 1, 1, poolAttrs()}; }
  static Expected<std::vector<TensorType>> inferTypes(const InferContext& ctx) {
    KILN_RETURN_IF_ERROR(requireDType(ctx, 0, "X", kFloatTypes));
    KILN_RETURN_IF_ERROR(requireDType(ctx, 1, "I", {DType::I64}));
    const DType t = ctx.in(0).dtype;
    const Shape& x = ctx.in(0).shape;
    KILN_ASSIGN_OR_RETURN(auto kernel, poolKernel(ctx));
    const size_t k = kernel.size();
    KILN_ASSIGN_OR_RETURN(auto g, readWindowGeometry(ctx, kernel, false, false));
    if (g.autoPad != "NOTSET")
      return ctx.error("attribute 'auto_pad' is not part of MaxUnpool; use 'pads'");
    if (ctx.has(2)) {
      KILN_RETURN_IF_ERROR(requireDType(ctx, 2, "output_shape", {DType::I64}));
      const Tensor* v = ctx.value(2);
      if (!v) return single(t, Shape(std::vector<Dim>(k + 2, Dim::unknown())));
      if (v->rank() != 1 || v->numElements() != int64_t(k) + 2)
        return ctx.error("output_shape has {} values; it must list all {} output dims",
                         v->numElements(), k + 2);
      std::vector<Dim> out;
      for (int64_t d : v->toInts()) {
        if (d < 0) return ctx.error("output_shape has negative size {}", d);
        out.push_back(Dim::known(d));
      }
      return single(t, Shape(std::move(out)));
    }
    std::vector<Dim> out{x.rankKnown() ? x[0] : Dim::unknown(),
                         x.rankKnown() ? x[1] : Dim::unknown()};
    auto in = spatialOf(x, k);
    for (size_t i = 0; i < k; ++i) {
      const int64_t pads = g.pads[i] + g.pads[i + k];
      if (!in[i].isStatic()) {
        out.push_back(g.strides[i] == 1 && kernel[i] - 1 == pads ? in[i] : Dim::unknown());
        continue;
      }
      auto grown = checkedMul(in[i].value - 1 < 0 ? 0 : in[i].value - 1, g.strides[i]);
      auto total = grown ? checkedAdd(*grown, kernel[i]) : std::nullopt;
      if (!total) return ctx.error("output size overflows");
      if (*total - pads <= 0)
        return ctx.error("pads [{}] remove the whole output along spatial dim {}",
                         fmt::join(g.pads, ","), i);
      out.push_back(Dim::known(in[i].value == 0 ? 0 : *total - pads));
    }
    return single(t, Shape(std::move(out)));
  }
};

}  // namespace

void registerPoolOps(OpRegistry& r) {
  r.add<MaxPoolOp>();
  r.add<AveragePoolOp>();
  r.add<LpPoolOp>();
  r.add<GlobalPoolOp<kGlobalAveragePool>>();
  r.add<GlobalPoolOp<kGlobalMaxPool>>();
  r.add<GlobalPoolOp<kGlobalLpPool>>();
  r.add<MaxRoiPoolOp>();
  r.add<MaxUnpoolOp>();
}

}  // namespace kiln
