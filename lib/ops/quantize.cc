// Linear quantization ops: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear.
#include "dim_math.h"
#include "family_registration.h"

namespace kiln {
namespace {

using Types = Expected<std::vector<TensorType>>;

// Scale (and zero point) must be per-tensor (one element), per-axis (1-D of the axis' size)
// or blocked (the input's rank, with block_size > 0).
Status checkQuantParams(const InferContext& ctx, const Shape& x) {
  const Shape& scale = ctx.in(1).shape;
  const int64_t block = ctx.node().attrInt("block_size", 0);
  if (block < 0) return ctx.error("block_size must be >= 0, got {}", block);
  if (ctx.has(2) && ctx.in(2).shape.rankKnown() && scale.rankKnown() &&
      ctx.in(2).shape.rank() != scale.rank())
    return ctx.error("zero point {} and scale {} must have the same shape",
                     toString(ctx.in(2).shape), toString(scale));
  if (!scale.rankKnown() || !x.rankKnown()) return Status();
  auto n = scale.numElements();
  if (block == 0 && n && *n == 1) return Status();  // per-tensor
  if (block == 0) {
    if (scale.rank() != 1)
      return ctx.error("scale {} must be a scalar or 1-D (per-axis) unless block_size is set",
                       toString(scale));
    KILN_ASSIGN_OR_RETURN(int64_t axis,
                          normalizeAxis(ctx, ctx.node().attrInt("axis", 1), x.rank()));
    if (!unifyDim(scale[0], x[size_t(axis)]))
      return ctx.error("per-axis scale has {} elements but axis {} has {}", scale[0].value, axis,
                       x[size_t(axis)].value);
    return Status();
  }
  if (scale.rank() != x.rank())
    return ctx.error("blocked scale {} must have the input's rank {}", toString(scale), x.rank());
  return Status();
}

struct QuantizeLinearOp {
  static constexpr std::string_view kName = "QuantizeLinear";
  static OpSchema schema() {
    return {2,
            3,
            1,
            1,
            {{"axis", AttrKind::Int},
             {"saturate", AttrKind::Int},
             {"block_size", AttrKind::Int},
             {"output_dtype", AttrKind::String}}};
  }
  static Types inferTypes(const InferContext& ctx) {
    const TensorType& x = ctx.in(0);
    KILN_RETURN_IF_ERROR(checkQuantParams(ctx, x.shape));
    KILN_ASSIGN_OR_RETURN(DType t, dtypeAttr(ctx, "output_dtype", DType::U8));
    if (ctx.has(2)) {
      if (ctx.node().hasAttr("output_dtype") && t != ctx.in(2).dtype)
        return ctx.error("output_dtype {} differs from the zero point's {}", dtypeName(t),
                         dtypeName(ctx.in(2).dtype));
      t = ctx.in(2).dtype;
    }
    return single(t, x.shape);
  }
};

struct DequantizeLinearOp {
  static constexpr std::string_view kName = "DequantizeLinear";
  static OpSchema schema() {
    return {2, 3, 1, 1, {{"axis", AttrKind::Int}, {"block_size", AttrKind::Int}}};
  }
  static Types inferTypes(const InferContext& ctx) {
    const TensorType& x = ctx.in(0);
    KILN_RETURN_IF_ERROR(checkQuantParams(ctx, x.shape));
    if (ctx.has(2) && ctx.in(2).dtype != x.dtype)
      return ctx.error("zero point is {} but the input is {}", dtypeName(ctx.in(2).dtype),
                       dtypeName(x.dtype));
    if (!isFloat(ctx.in(1).dtype))
      return ctx.error("scale must be a float type, got {}", dtypeName(ctx.in(1).dtype));
    return single(ctx.in(1).dtype, x.shape);
  }
};

struct DynamicQuantizeLinearOp {
  static constexpr std::string_view kName = "DynamicQuantizeLinear";
  static OpSchema schema() { return {1, 1, 3, 3, {}}; }
  static Types inferTypes(const InferContext& ctx) {
    if (ctx.in(0).dtype != DType::F32)
      return ctx.error("input must be f32, got {}", dtypeName(ctx.in(0).dtype));
    return std::vector<TensorType>{
        {DType::U8, ctx.in(0).shape}, {DType::F32, Shape::scalar()}, {DType::U8, Shape::scalar()}};
  }
};

}  // namespace

void registerQuantizeOps(OpRegistry& r) {
  r.add<QuantizeLinearOp>();
  r.add<DequantizeLinearOp>();
  r.add<DynamicQuantizeLinearOp>();
}

}  // namespace kiln
