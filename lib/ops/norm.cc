// Normalization ops: BatchNormalization (inference and training form), InstanceNormalization,
// LayerNormalization, GroupNormalization, LpNormalization, LRN, MeanVarianceNormalization.
#include "kiln/ops/registry.h"
#include "shape_math.h"

namespace kiln {
namespace {

std::vector<TensorType> sameAsInput(const InferContext& ctx) {
  return single(ctx.in(0).dtype, ctx.in(0).shape);
}

// The channel dim (dim 1) of X, or unknown; `minRank` guards the access.
Expected<Dim> channelsOf(const InferContext& ctx, int64_t minRank) {
  const Shape& x = ctx.in(0).shape;
  if (!x.rankKnown()) return Dim::unknown();
  if (x.rank() < minRank)
    return ctx.error("input has shape {}; it needs rank >= {} (N, C, ...)", toString(x), minRank);
  return x.rank() >= 2 ? x[1] : Dim::known(1);
}

// Input i must be a 1-D tensor of `count` values (per channel or per group).
Status checkPerChannel(const InferContext& ctx, size_t i, std::string_view role, const Dim& count) {
  if (!ctx.has(i) || !ctx.in(i).shape.rankKnown()) return Status();
  const Shape& s = ctx.in(i).shape;
  if (s.rank() != 1 || (s[0].isStatic() && count.isStatic() && s[0].value != count.value))
    return ctx.error("{} has shape {}; it must be 1-D with one value per channel ({})", role,
                     toString(s), count.isStatic() ? std::to_string(count.value) : "C");
  return Status();
}

Status requireFloat(const InferContext& ctx, size_t i, std::string_view role) {
  if (!ctx.has(i)) return Status();
  return requireDType(ctx, i, role, kFloatTypes);
}

Status sameDType(const InferContext& ctx, size_t i, std::string_view role, size_t ref,
                 std::string_view refRole) {
  if (!ctx.has(i) || ctx.in(i).dtype == ctx.in(ref).dtype) return Status();
  return ctx.error("input {} ({}) is {} but {} is {}; they must have one element type", i, role,
                   dtypeName(ctx.in(i).dtype), refRole, dtypeName(ctx.in(ref).dtype));
}

// stash_type: the precision of Mean/InvStdDev. Accepts a kiln dtype name (the IR's form for
// dtype attributes) or an ONNX TensorProto code as written by exporters.
Expected<DType> stashType(const InferContext& ctx) {
  const Attribute* a = ctx.node().attr("stash_type");
  if (!a) return DType::F32;
  std::optional<DType> t;
  if (a->kind() == AttrKind::String) t = parseDType(a->s());
  if (a->kind() == AttrKind::Int) {
    switch (a->i()) {
      case 1:
        t = DType::F32;
        break;
      case 10:
        t = DType::F16;
        break;
      case 11:
        t = DType::F64;
        break;
      case 16:
        t = DType::BF16;
        break;
      default:
        break;
    }
  }
  if (!t || !isFloat(*t))
    return ctx.error("attribute 'stash_type' must name a floating-point type such as f32");
  return *t;
}

// X, scale, B, input_mean, input_var -> Y (and, optionally, the unchanged running stats).
struct BatchNormalizationOp {
  static constexpr std::string_view kName = "BatchNormalization";
  static OpSchema schema() {
    return {5,
            5,
            1,
            3,
            {{"epsilon", AttrKind::Float},
             {"momentum", AttrKind::Float},
             {"training_mode", AttrKind::Int}}};
  }
  static Expected<std::vector<TensorType>> inferTypes(const InferContext& ctx) {
    KILN_RETURN_IF_ERROR(requirePresent(ctx, 5));
    KILN_RETURN_IF_ERROR(requireDType(ctx, 0, "X", kFloatTypes));
    KILN_RETURN_IF_ERROR(requireFloat(ctx, 1, "scale"));
    KILN_RETURN_IF_ERROR(sameDType(ctx, 2, "B", 1, "scale"));
    KILN_RETURN_IF_ERROR(requireFloat(ctx, 3, "input_mean"));
    KILN_RETURN_IF_ERROR(sameDType(ctx, 4, "input_var", 3, "input_mean"));
    KILN_ASSIGN_OR_RETURN(Dim c, channelsOf(ctx, 1));
    const char* roles[] = {"X", "scale", "B", "input_mean", "input_var"};
    for (size_t i = 1; i < 5; ++i) KILN_RETURN_IF_ERROR(checkPerChannel(ctx, i, roles[i], c));
    TensorType stats{ctx.in(3).dtype, Shape({c})};
    return std::vector<TensorType>{{ctx.in(0).dtype, ctx.in(0).shape}, stats, stats};
  }
};

// input [N, C, D...], scale [C], B [C].
struct InstanceNormalizationOp {
  static constexpr std::string_view kName = "InstanceNormalization";
  static OpSchema schema() { return {3, 3, 1, 1, {{"epsilon", AttrKind::Float}}}; }
  static Expected<std::vector<TensorType>> inferTypes(const InferContext& ctx) {
    KILN_RETURN_IF_ERROR(requirePresent(ctx, 3));
    KILN_RETURN_IF_ERROR(requireDType(ctx, 0, "input", kFloatTypes));
    KILN_RETURN_IF_ERROR(sameDType(ctx, 1, "scale", 0, "input"));
    KILN_RETURN_IF_ERROR(sameDType(ctx, 2, "B", 0, "input"));
    KILN_ASSIGN_OR_RETURN(Dim c, channelsOf(ctx, 2));
    KILN_RETURN_IF_ERROR(checkPerChannel(ctx, 1, "scale", c));
    KILN_RETURN_IF_ERROR(checkPerChannel(ctx, 2, "B", c));
    return sameAsInput(ctx);
  }
};

// Normalizes over dims [axis, rank). Mean and InvStdDev keep the leading dims and have 1s
// for the normalized ones, in stash_type precision.
struct LayerNormalizationOp {
  static constexpr std::string_view kName = "LayerNormalization";
  static OpSchema schema() {
    return {2, 3, 1, 3, {{"axis", AttrKind::Int}, {"epsilon", AttrKind::Float}}};
  }
  static Expected<std::vector<TensorType>> inferTypes(const InferContext& ctx) {
    KILN_RETURN_IF_ERROR(requirePresent(ctx, 2));
    KILN_RETURN_IF_ERROR(requireDType(ctx, 0, "X", kFloatTypes));
    KILN_RETURN_IF_ERROR(sameDType(ctx, 1, "Scale", 0, "X"));
    KILN_RETURN_IF_ERROR(sameDType(ctx, 2, "B", 0, "X"));
    KILN_ASSIGN_OR_RETURN(DType stash, stashType(ctx));
    const Shape& x = ctx.in(0).shape;
    if (!x.rankKnown()) {
      TensorType unknown{stash, Shape::unknownRank()};
      return std::vector<TensorType>{{ctx.in(0).dtype, x}, unknown, unknown};
    }
    KILN_ASSIGN_OR_RETURN(int64_t axis,
                          normalizeAxis(ctx, ctx.node().attrInt("axis", -1), x.rank()));
    // Scale and B broadcast to the normalized part of X's shape.
    const Shape normalized(std::vector<Dim>(x.dims().begin() + axis, x.dims().end()));
    for (size_t i : {size_t(1), size_t(2)}) {
      if (!ctx.has(i) || !ctx.in(i).shape.rankKnown()) continue;
      const Shape& s = ctx.in(i).shape;
      bool ok = s.rank() <= normalized.rank();
      for (size_t j = 0; ok && j < s.dims().size(); ++j) {
        const Dim& d = s[j];
        const Dim& t = normalized[size_t(normalized.rank() - s.rank()) + j];
        ok = !(d.isStatic() && d.value != 1 && t.isStatic() && d.value != t.value);
      }
      if (!ok)
        return ctx.error("{} has shape {}; it must broadcast to the normalized dims {}",
                         i == 1 ? "Scale" : "B", toString(s), toString(normalized));
    }
    std::vector<Dim> statDims(x.dims().begin(), x.dims().begin() + axis);
    statDims.resize(size_t(x.rank()), Dim::known(1));
    TensorType stats{stash, Shape(std::move(statDims))};
    return std::vector<TensorType>{{ctx.in(0).dtype, x}, stats, stats};
  }
};

// X [N, C, D...] in num_groups groups of channels; scale and bias [C] (opset 21 form).
struct GroupNormalizationOp {
  static constexpr std::string_view kName = "GroupNormalization";
  static OpSchema schema() {
    return {3, 3, 1, 1, {{"epsilon", AttrKind::Float}, {"num_groups", AttrKind::Int, true}}};
  }
  static Expected<std::vector<TensorType>> inferTypes(const InferContext& ctx) {
    KILN_RETURN_IF_ERROR(requirePresent(ctx, 3));
    KILN_RETURN_IF_ERROR(requireDType(ctx, 0, "X", kFloatTypes));
    KILN_RETURN_IF_ERROR(sameDType(ctx, 1, "scale", 0, "X"));
    KILN_RETURN_IF_ERROR(sameDType(ctx, 2, "bias", 0, "X"));
    KILN_RETURN_IF_ERROR(stashType(ctx).status());
    const int64_t groups = ctx.node().attrInt("num_groups", 0);
    if (groups <= 0) return ctx.error("attribute 'num_groups' is {}; it must be positive", groups);
    KILN_ASSIGN_OR_RETURN(Dim c, channelsOf(ctx, 2));
    if (c.isStatic() && c.value % groups != 0)
      return ctx.error("{} channels do not split into num_groups={} groups", c.value, groups);
    KILN_RETURN_IF_ERROR(checkPerChannel(ctx, 1, "scale", c));
    KILN_RETURN_IF_ERROR(checkPerChannel(ctx, 2, "bias", c));
    return sameAsInput(ctx);
  }
};

struct LpNormalizationOp {
  static constexpr std::string_view kName = "LpNormalization";
  static OpSchema schema() { return {1, 1, 1, 1, {{"axis", AttrKind::Int}, {"p", AttrKind::Int}}}; }
  static Expected<std::vector<TensorType>> inferTypes(const InferContext& ctx) {
    KILN_RETURN_IF_ERROR(requireDType(ctx, 0, "input", kFloatTypes));
    const int64_t p = ctx.node().attrInt("p", 2);
    if (p != 1 && p != 2) return ctx.error("attribute 'p' is {}; only 1 and 2 are defined", p);
    const Shape& x = ctx.in(0).shape;
    if (x.rankKnown())
      KILN_RETURN_IF_ERROR(normalizeAxis(ctx, ctx.node().attrInt("axis", -1), x.rank()).status());
    return sameAsInput(ctx);
  }
};

// Local response normalization across `size` neighbouring channels.
struct LrnOp {
  static constexpr std::string_view kName = "LRN";
  static OpSchema schema() {
    return {1,
            1,
            1,
            1,
            {{"alpha", AttrKind::Float},
             {"beta", AttrKind::Float},
             {"bias", AttrKind::Float},
             {"size", AttrKind::Int, true}}};
  }
  static Expected<std::vector<TensorType>> inferTypes(const InferContext& ctx) {
    KILN_RETURN_IF_ERROR(requireDType(ctx, 0, "X", kFloatTypes));
    const int64_t size = ctx.node().attrInt("size", 0);
    if (size <= 0) return ctx.error("attribute 'size' is {}; it must be positive", size);
    KILN_RETURN_IF_ERROR(channelsOf(ctx, 3).status());
    return sameAsInput(ctx);
  }
};

// Normalizes to zero mean and unit variance over `axes` (default [0, 2, 3]).
struct MeanVarianceNormalizationOp {
  static constexpr std::string_view kName = "MeanVarianceNormalization";
  static OpSchema schema() { return {1, 1, 1, 1, {{"axes", AttrKind::Ints}}}; }
  static Expected<std::vector<TensorType>> inferTypes(const InferContext& ctx) {
    KILN_RETURN_IF_ERROR(requireDType(ctx, 0, "X", kFloatTypes));
    const Shape& x = ctx.in(0).shape;
    if (x.rankKnown())
      KILN_RETURN_IF_ERROR(
          normalizeAxes(ctx, ctx.node().attrInts("axes", {0, 2, 3}), x.rank()).status());
    return sameAsInput(ctx);
  }
};

}  // namespace

void registerNormOps(OpRegistry& r) {
  r.add<BatchNormalizationOp>();
  r.add<InstanceNormalizationOp>();
  r.add<LayerNormalizationOp>();
  r.add<GroupNormalizationOp>();
  r.add<LpNormalizationOp>();
  r.add<LrnOp>();
  r.add<MeanVarianceNormalizationOp>();
}

}  // namespace kiln
