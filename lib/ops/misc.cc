// Misc op family: random generators (RandomNormal/Uniform and their *Like forms, Bernoulli,
// Multinomial), Det and the text ops; signal ops live in signal.cc, quantization ops in
// quantize.cc, recurrent layers in recurrent.cc and losses in loss.cc.
#include <algorithm>

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
    return {
        1,
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

struct DetOp {
  static constexpr std::string_view kName = "Det";
  static OpSchema schema() { return {1, 1, 1, 1, {}}; }
  static Types inferTypes(const InferContext& ctx) {
    const TensorType& x = ctx.in(0);
    KILN_RETURN_IF_ERROR(requireFloat(ctx, x.dtype, "input"));
    if (!x.shape.rankKnown()) return single(x.dtype, Shape::unknownRank());
    const int64_t r = x.shape.rank();
    if (r < 2 || !unifyDim(x.shape[size_t(r - 2)], x.shape[size_t(r - 1)]))
      return ctx.error("input must be [..., M, M] (square matrices), got {}", toString(x.shape));
    return single(x.dtype, Shape({x.shape.dims().begin(), x.shape.dims().end() - 2}));
  }
};

// Stop words make the kept count data-dependent; without them the shape is unchanged.
struct StringNormalizerOp {
  static constexpr std::string_view kName = "StringNormalizer";
  static OpSchema schema() {
    return {1,
            1,
            1,
            1,
            {{"case_change_action", AttrKind::String},
             {"is_case_sensitive", AttrKind::Int},
             {"locale", AttrKind::String},
             {"stopwords", AttrKind::Strings}}};
  }
  static Types inferTypes(const InferContext& ctx) {
    const TensorType& x = ctx.in(0);
    if (x.dtype != DType::String)
      return ctx.error("input must be a string tensor, got {}", dtypeName(x.dtype));
    std::string action = ctx.node().attrString("case_change_action", "NONE");
    if (action != "NONE" && action != "LOWER" && action != "UPPER")
      return ctx.error("case_change_action '{}' is not one of NONE, LOWER, UPPER", action);
    const Shape& s = x.shape;
    if (s.rankKnown() && s.rank() != 1 && !(s.rank() == 2 && s[0] == Dim::known(1)))
      return ctx.error("input must be [C] or [1, C], got {}", toString(s));
    const Attribute* stop = ctx.node().attr("stopwords");
    if (!stop || stop->strings().empty() || !s.rankKnown()) return single(DType::String, s);
    Shape out = s;
    out.dims().back() = Dim::unknown();
    return single(DType::String, std::move(out));
  }
};

struct TfIdfVectorizerOp {
  static constexpr std::string_view kName = "TfIdfVectorizer";
  static OpSchema schema() {
    return {1,
            1,
            1,
            1,
            {{"max_gram_length", AttrKind::Int, true},
             {"max_skip_count", AttrKind::Int, true},
             {"min_gram_length", AttrKind::Int, true},
             {"mode", AttrKind::String, true},
             {"ngram_counts", AttrKind::Ints, true},
             {"ngram_indexes", AttrKind::Ints, true},
             {"pool_int64s", AttrKind::Ints},
             {"pool_strings", AttrKind::Strings},
             {"weights", AttrKind::Floats}}};
  }
  static Types inferTypes(const InferContext& ctx) {
    const TensorType& x = ctx.in(0);
    if (x.dtype != DType::String && x.dtype != DType::I32 && x.dtype != DType::I64)
      return ctx.error("input must be string, i32 or i64, got {}", dtypeName(x.dtype));
    int64_t size = 0;
    for (int64_t i : ctx.node().attrInts("ngram_indexes")) {
      if (i < 0) return ctx.error("ngram_indexes contains negative index {}", i);
      size = std::max(size, i + 1);
    }
    const Shape& s = x.shape;
    if (!s.rankKnown()) return single(DType::F32, Shape::unknownRank());
    if (s.rank() == 1) return single(DType::F32, Shape({Dim::known(size)}));
    if (s.rank() == 2) return single(DType::F32, Shape({s[0], Dim::known(size)}));
    return ctx.error("input must be [N] or [B, N], got {}", toString(s));
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
  // Ops no other family claims; added only where still missing.
  addIfAbsent<DetOp>(r);
  addIfAbsent<StringNormalizerOp>(r);
  addIfAbsent<TfIdfVectorizerOp>(r);
  registerRecurrentOps(r);
  registerLossOps(r);
}

}  // namespace kiln
