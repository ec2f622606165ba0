// Misc op family: random generators (RandomNormal/Uniform and their *Like forms, Bernoulli,
// Multinomial), Det and the text ops; signal ops live in signal.cc, quantization ops in
// quantize.cc, recurrent layers in recurrent.cc and losses in loss.cc.
#include <algorithm>

#include "dim_math.h"
#include "emit_support.h"
#include "family_registration.h"
#include "ref/linalg.h"
#include "ref/text.h"

namespace kiln {
namespace {

using Types = Expected<std::vector<TensorType>>;

Status requireFloat(const InferContext& ctx, DType t, const char* what) {
  if (!isFloat(t)) return ctx.error("{} must be a float type, got {}", what, dtypeName(t));
  return Status();
}

// The seed of a random op: its 'seed' attribute, else a hash of the node's first output name,
// so that a model gives the same numbers on every compile and run (kernels/ref/random.h).
uint64_t randomSeed(const Node& n) {
  if (const Attribute* a = n.attr("seed")) {
    if (a->kind() == AttrKind::Float) return uint64_t(int64_t(a->f()));
    if (a->kind() == AttrKind::Int) return uint64_t(a->i());
  }
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a
  for (unsigned char c : n.output(0)->name()) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

// Emits random_uniform / random_normal for a random op of any form (shape from the output).
Status emitRandomFill(const Node& n, EmitContext& ctx, bool normal) {
  const DType t = n.output(0)->dtype();
  if (t != DType::F32 && t != DType::F64)
    return ctx.unsupported(fmt::format("{} of {} values", n.opType(), dtypeName(t)));
  const int64_t count = staticNumel(n.output(0));
  if (count == 0) return Status();
  const double a = n.attrFloat(normal ? "mean" : "low", 0.0f);
  const double b = n.attrFloat(normal ? "scale" : "high", 1.0f);
  ctx.useHeader("kiln_ref/random.h");
  ctx.call(normal ? "kiln_ref::random_normal" : "kiln_ref::random_uniform",
           fmt::format("kiln_ref::{}<{}>({}, {:.17g}, {:.17g}, {}ull, {});",
                       normal ? "random_normal" : "random_uniform", cTypeOf(t), count, a, b,
                       randomSeed(n), ctx.output(0)));
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
  static Status emit(const Node& n, EmitContext& ctx) { return emitRandomFill(n, ctx, kNormal); }
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
  static Status emit(const Node& n, EmitContext& ctx) { return emitRandomFill(n, ctx, kNormal); }
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
  // y = 1 with probability p: one uniform draw per element (kernels/ref/random.h).
  static Status emit(const Node& n, EmitContext& ctx) {
    const DType tp = n.input(0)->dtype(), ty = n.output(0)->dtype();
    if ((tp != DType::F32 && tp != DType::F64) || ty == DType::F16 || ty == DType::BF16 ||
        cTypeOf(ty).empty())
      return ctx.unsupported(fmt::format("Bernoulli from {} to {}", dtypeName(tp), dtypeName(ty)));
    const int64_t count = staticNumel(n.output(0));
    if (count == 0) return Status();
    ctx.useHeader("kiln_ref/random.h");
    ctx.call("kiln_ref::bernoulli", fmt::format("kiln_ref::bernoulli({}, {}, {}ull, {});", count,
                                                ctx.input(0), randomSeed(n), ctx.output(0)));
    return Status();
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
  static Expected<std::vector<Tensor>> evaluate(const EvalContext& ctx) {
    const Tensor& x = ctx.in(0);
    const auto& d = x.dims();
    if (d.size() < 2 || d[d.size() - 1] != d[d.size() - 2])
      return ctx.error("input must be [..., M, M]");
    const int64_t m = d.back();
    std::vector<int64_t> outDims(d.begin(), d.end() - 2);
    KILN_ASSIGN_OR_RETURN(Tensor y, Tensor::zeros(x.dtype(), outDims));
    const int64_t batch = y.numElements();
    std::vector<double> scratch(size_t(m * m));
    if (x.dtype() == DType::F32)
      kiln_ref::det(batch, m, x.data<float>(), y.mutableData<float>(), scratch.data());
    else if (x.dtype() == DType::F64)
      kiln_ref::det(batch, m, x.data<double>(), y.mutableData<double>(), scratch.data());
    else
      return ctx.error("no compile-time evaluation for {}", dtypeName(x.dtype()));
    return std::vector<Tensor>{std::move(y)};
  }
  static Status emit(const Node& n, EmitContext& ctx) {
    const DType t = n.input(0)->dtype();
    if (t != DType::F32 && t != DType::F64)
      return ctx.unsupported(fmt::format("Det on {} tensors", dtypeName(t)));
    auto d = staticDims(n.input(0));
    const int64_t m = d.back(), batch = staticNumel(n.output(0));
    if (batch == 0) return Status();
    ctx.useHeader("kiln_ref/linalg.h");
    // m == 0: no scratch; every determinant is the empty product 1.
    const std::string scratch =
        m == 0 ? std::string("nullptr") : ctx.scratch(kiln_ref::det_scratch_bytes(m));
    ctx.call("kiln_ref::det", fmt::format("kiln_ref::det<{}>({}, {}, {}, {}, {});", cTypeOf(t),
                                          batch, m, ctx.input(0), ctx.output(0), scratch));
    return Status();
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

/// The TfIdfVectorizer attributes in kernel form, or the reason they are inconsistent.
struct TfIdfParams {
  int64_t minN = 0, maxN = 0, maxSkip = 0;
  int mode = kiln_ref::kTfIdfTF;
  std::vector<int64_t> pool, counts, indexes;
  std::vector<float> weights;
  int64_t outSize = 0;
};

Expected<TfIdfParams> tfidfParams(const Node& n) {
  TfIdfParams p;
  p.minN = n.attrInt("min_gram_length", 0);
  p.maxN = n.attrInt("max_gram_length", 0);
  p.maxSkip = n.attrInt("max_skip_count", 0);
  if (p.minN < 1 || p.maxN < p.minN || p.maxSkip < 0)
    return makeError("min_gram_length {}, max_gram_length {} or max_skip_count {} is invalid",
                     p.minN, p.maxN, p.maxSkip);
  std::string mode = n.attrString("mode", "");
  if (mode != "TF" && mode != "IDF" && mode != "TFIDF")
    return makeError("mode '{}' is not TF, IDF or TFIDF", mode);
  p.mode = mode == "TF" ? kiln_ref::kTfIdfTF
                        : (mode == "IDF" ? kiln_ref::kTfIdfIDF : kiln_ref::kTfIdfTFIDF);
  if (const Attribute* a = n.attr("pool_strings"); a && !a->strings().empty())
    return makeError("a string pool (pool_strings) is unsupported; use integer tokens");
  p.pool = n.attrInts("pool_int64s");
  p.counts = n.attrInts("ngram_counts");
  p.indexes = n.attrInts("ngram_indexes");
  p.weights = n.attrFloats("weights");
  const int64_t poolSize = int64_t(p.pool.size());
  int64_t grams = 0;
  for (size_t level = 0; level < p.counts.size(); ++level) {
    const int64_t begin = p.counts[level];
    const int64_t end = level + 1 < p.counts.size() ? p.counts[level + 1] : poolSize;
    if (begin < 0 || end < begin || end > poolSize || (end - begin) % int64_t(level + 1) != 0)
      return makeError("ngram_counts {} does not split the {} pool entries into n-grams",
                       fmt::join(p.counts, ","), poolSize);
    grams += (end - begin) / int64_t(level + 1);
  }
  if (int64_t(p.indexes.size()) != grams)
    return makeError("ngram_indexes has {} entries for {} n-grams", p.indexes.size(), grams);
  if (!p.weights.empty() && int64_t(p.weights.size()) != grams)
    return makeError("weights has {} entries for {} n-grams", p.weights.size(), grams);
  for (int64_t i : p.indexes) {
    if (i < 0) return makeError("ngram_indexes contains negative index {}", i);
    p.outSize = std::max(p.outSize, i + 1);
  }
  return p;
}

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
  static Expected<std::vector<Tensor>> evaluate(const EvalContext& ctx) {
    const Tensor& x = ctx.in(0);
    auto p = tfidfParams(ctx.node());
    if (!p) return ctx.error("{}", p.message());
    if (x.rank() < 1 || x.rank() > 2 || (x.dtype() != DType::I32 && x.dtype() != DType::I64))
      return ctx.error("no compile-time evaluation for this input");
    const int64_t cols = x.dims().back(), rows = x.rank() == 2 ? x.dims()[0] : 1;
    std::vector<int64_t> outDims{p->outSize};
    if (x.rank() == 2) outDims.insert(outDims.begin(), rows);
    KILN_ASSIGN_OR_RETURN(Tensor y, Tensor::zeros(DType::F32, outDims));
    auto run = [&](const auto* tokens) {
      kiln_ref::tfidf_vectorizer(
          rows, cols, tokens, p->minN, p->maxN, p->maxSkip, p->mode, p->pool.data(),
          int64_t(p->pool.size()), p->counts.data(), int64_t(p->counts.size()), p->indexes.data(),
          p->weights.empty() ? nullptr : p->weights.data(), p->outSize, y.mutableData<float>());
    };
    if (x.dtype() == DType::I32)
      run(x.data<int32_t>());
    else
      run(x.data<int64_t>());
    return std::vector<Tensor>{std::move(y)};
  }
  static Status emit(const Node& n, EmitContext& ctx) {
    const DType t = n.input(0)->dtype();
    if (t != DType::I32 && t != DType::I64)
      return ctx.unsupported(fmt::format("TfIdfVectorizer on {} tokens", dtypeName(t)));
    auto p = tfidfParams(n);
    if (!p) return ctx.unsupported(p.message());
    auto x = staticDims(n.input(0));
    const int64_t cols = x.back(), rows = x.size() == 2 ? x[0] : 1;
    if (rows * p->outSize == 0) return Status();
    // Empty attribute lists still need a valid pointer.
    auto ints = [&](const std::vector<int64_t>& v) {
      return v.empty() ? std::string("static_cast<const int64_t*>(nullptr)") : ctx.constArray(v);
    };
    ctx.useHeader("kiln_ref/text.h");
    ctx.call(
        "kiln_ref::tfidf_vectorizer",
        fmt::format("kiln_ref::tfidf_vectorizer({}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, "
                    "{}, {}, {}, {});",
                    rows, cols, ctx.input(0), p->minN, p->maxN, p->maxSkip, p->mode, ints(p->pool),
                    p->pool.size(), ints(p->counts), p->counts.size(), ints(p->indexes),
                    p->weights.empty() ? std::string("static_cast<const float*>(nullptr)")
                                       : ctx.constFloatArray(p->weights),
                    p->outSize, ctx.output(0)));
    return Status();
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
  registerTrainingOps(r);
}

}  // namespace kiln
