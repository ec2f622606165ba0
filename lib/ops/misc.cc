// Misc op family: random generators (RandomNormal/Uniform and their *Like forms, Bernoulli,
// Multinomial); signal ops live in signal.cc and quantization ops in quantize.cc.
#include "dim_math.h"
#include "family_registration.h"

namespace kiln {
namespace {

using Types = Expected<std::vector<TensorType>>;

Status requireFloat(const InferContext& ctx, DType t, const char* what) {
  if (!isFloat(t)) return ctx.error("{} must be a float type, got {}", what, dtypeName(t));
  return Status();
}

// RandomNormal and RandomUniform: shape from the 'shape' attribute.
template <bool kNormal>
struct RandomOp {
  static constexpr std::string_view kName = kNormal ? "RandomNormal" : "RandomUniform";
  static OpSchema schema() {
    return {0,
            0,
            1,
            1,
            {{"shape", AttrKind::Ints, true},
             {"dtype", AttrKind::String},
             {kNormal ? "mean" : "low", AttrKind::Float},
             {kNormal ? "scale" : "high", AttrKind::Float},
             {"seed", AttrKind::Float}}};
  }
  static Types inferTypes(const InferContext& ctx) {
    KILN_ASSIGN_OR_RETURN(DType t, dtypeAttr(ctx, "dtype", DType::F32));
    KILN_RETURN_IF_ERROR(requireFloat(ctx, t, "dtype"));
    auto dims = ctx.node().attrInts("shape");
    for (int64_t d : dims)
      if (d < 0) return ctx.error("shape contains negative dim {}", d);
    return single(t, Shape::ofStatic(dims));
  }
};

// RandomNormalLike and RandomUniformLike: shape of the input, dtype defaulting to its dtype.
template <bool kNormal>
struct RandomLikeOp {
  static constexpr std::string_view kName = kNormal ? "RandomNormalLike" : "RandomUniformLike";
  static OpSchema schema() {
    return {1,
            1,
            1,
            1,
            {{"dtype", AttrKind::String},
             {kNormal ? "mean" : "low", AttrKind::Float},
             {kNormal ? "scale" : "high", AttrKind::Float},
             {"seed", AttrKind::Float}}};
  }
  static Types inferTypes(const InferContext& ctx) {
    KILN_ASSIGN_OR_RETURN(DType t, dtypeAttr(ctx, "dtype", ctx.in(0).dtype));
    KILN_RETURN_IF_ERROR(requireFloat(ctx, t, "dtype"));
    return single(t, ctx.in(0).shape);
  }
};

struct BernoulliOp {
  static constexpr std::string_view kName = "Bernoulli";
  static OpSchema schema() {
    return {1, 1, 1, 1, {{"dtype", AttrKind::String}, {"seed", AttrKind::Float}}};
  }
  static Types inferTypes(const InferContext& ctx) {
    KILN_RETURN_IF_ERROR(requireFloat(ctx, ctx.in(0).dtype, "input"));
    KILN_ASSIGN_OR_RETURN(DType t, dtypeAttr(ctx, "dtype", ctx.in(0).dtype));
    return single(t, ctx.in(0).shape);
  }
};

struct MultinomialOp {
  static constexpr std::string_view kName = "Multinomial";
  static OpSchema schema() {
    return {1,
            1,
            1,
            1,
            {{"dtype", AttrKind::String}, {"sample_size", AttrKind::Int}, {"seed", AttrKind::Float}}};
  }
  static Types inferTypes(const InferContext& ctx) {
    KILN_ASSIGN_OR_RETURN(DType t, dtypeAttr(ctx, "dtype", DType::I32));
    if (t != DType::I32 && t != DType::I64)
      return ctx.error("dtype must be i32 or i64, got {}", dtypeName(t));
    int64_t samples = ctx.node().attrInt("sample_size", 1);
    if (samples < 1) return ctx.error("sample_size must be >= 1, got {}", samples);
    const Shape& s = ctx.in(0).shape;
    if (s.rankKnown() && s.rank() != 2)
      return ctx.error("input must be 2-D [batch, classes], got {}", toString(s));
    return single(t, Shape({s.rankKnown() ? s[0] : Dim::unknown(), Dim::known(samples)}));
  }
};

}  // namespace

void registerMiscOps(OpRegistry& r) {
  r.add<RandomOp<true>>();
  r.add<RandomOp<false>>();
  r.add<RandomLikeOp<true>>();
  r.add<RandomLikeOp<false>>();
  r.add<BernoulliOp>();
  r.add<MultinomialOp>();
  registerSignalOps(r);
  registerQuantizeOps(r);
}

}  // namespace kiln
