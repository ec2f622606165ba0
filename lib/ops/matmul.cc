// Matrix products: MatMul (numpy semantics, folded through kernels/ref/gemm.h), Gemm,
// MatMulInteger, QLinearMatMul and Einsum.
#include "ref/gemm.h"

#include <algorithm>
#include <map>
#include <type_traits>

#include "dtype_dispatch.h"
#include "kiln/ops/registry.h"
#include "kiln/support/checked_math.h"
#include "shape_math.h"
#include "tensor_copy.h"

namespace kiln {
namespace {

constexpr std::initializer_list<DType> kMatMulTypes = {DType::F32, DType::F16, DType::BF16,
                                                       DType::F64, DType::I32, DType::I64,
                                                       DType::U32, DType::U64};
constexpr std::initializer_list<DType> kInt8 = {DType::I8, DType::U8};
constexpr std::initializer_list<DType> kNumeric = {DType::F32, DType::F16, DType::BF16, DType::F64,
                                                   DType::I8,  DType::U8,  DType::I16,  DType::U16,
                                                   DType::I32, DType::U32, DType::I64,  DType::U64};

Status sameDType(const InferContext& ctx, size_t i, std::string_view role, size_t ref,
                 std::string_view refRole) {
  if (!ctx.has(i) || ctx.in(i).dtype == ctx.in(ref).dtype) return Status();
  return ctx.error("input {} ({}) is {} but {} is {}; they must have one element type", i, role,
                   dtypeName(ctx.in(i).dtype), refRole, dtypeName(ctx.in(ref).dtype));
}

// numpy matmul: 1-D operands are promoted to matrices and the added dim dropped again;
// leading (batch) dims broadcast.
Expected<Shape> matmulShape(const InferContext& ctx, size_t ai, size_t bi) {
  const Shape& a = ctx.in(ai).shape;
  const Shape& b = ctx.in(bi).shape;
  if ((a.rankKnown() && a.rank() == 0) || (b.rankKnown() && b.rank() == 0))
    return ctx.error("operands {} and {} must have rank >= 1 (scalars cannot be multiplied)",
                     toString(a), toString(b));
  if (!a.rankKnown() || !b.rankKnown()) return Shape::unknownRank();
  const bool aVec = a.rank() == 1, bVec = b.rank() == 1;
  const Dim& ka = a.dims().back();
  const Dim& kb = bVec ? b[0] : b[size_t(b.rank() - 2)];
  if (ka.isStatic() && kb.isStatic() && ka.value != kb.value)
    return ctx.error("inner dims differ: {} x {} (A's last dim must equal B's {} dim)", toString(a),
                     toString(b), bVec ? "only" : "second-to-last");
  Shape batchA(std::vector<Dim>(a.dims().begin(), a.dims().end() - (aVec ? 1 : 2)));
  Shape batchB(std::vector<Dim>(b.dims().begin(), b.dims().end() - (bVec ? 1 : 2)));
  KILN_ASSIGN_OR_RETURN(Shape out, broadcastShapes(ctx, {batchA, batchB}));
  if (!aVec) out.dims().push_back(a[size_t(a.rank() - 2)]);
  if (!bVec) out.dims().push_back(b.dims().back());
  return out;
}

struct MatMulOp {
  static constexpr std::string_view kName = "MatMul";
  static OpSchema schema() { return {2, 2, 1, 1, {}}; }
  static Expected<std::vector<TensorType>> inferTypes(const InferContext& ctx) {
    KILN_RETURN_IF_ERROR(requirePresent(ctx, 2));
    KILN_RETURN_IF_ERROR(requireDType(ctx, 0, "A", kMatMulTypes));
    KILN_RETURN_IF_ERROR(sameDType(ctx, 1, "B", 0, "A"));
    KILN_ASSIGN_OR_RETURN(Shape s, matmulShape(ctx, 0, 1));
    return single(ctx.in(0).dtype, std::move(s));
  }

  // Reference product; validates shapes itself since folding may call it outside inference.
  static Expected<std::vector<Tensor>> evaluate(const EvalContext& ctx) {
    const Tensor& a = ctx.in(0);
    const Tensor& b = ctx.in(1);
    if (a.dtype() != b.dtype() || a.rank() == 0 || b.rank() == 0)
      return ctx.error("operands must share a dtype and have rank >= 1");
    std::vector<int64_t> ad = a.dims(), bd = b.dims();
    const bool aVec = ad.size() == 1, bVec = bd.size() == 1;
    if (aVec) ad.insert(ad.begin(), 1);
    if (bVec) bd.push_back(1);
    const int64_t m = ad[ad.size() - 2], k = ad.back(), n = bd.back();
    if (bd[bd.size() - 2] != k) return ctx.error("inner dims differ");
    if (!checkedMul(m, n) || !checkedMul(m, k) || !checkedMul(k, n))
      return ctx.error("matrix sizes overflow");
    std::vector<int64_t> batchA(ad.begin(), ad.end() - 2), batchB(bd.begin(), bd.end() - 2);
    auto batch = broadcastDims({batchA, batchB});
    if (!batch) return ctx.error("batch dims do not broadcast");
    std::vector<int64_t> outDims = *batch;
    if (!aVec) outDims.push_back(m);
    if (!bVec) outDims.push_back(n);
    if (batch->size() > size_t(kiln_ref::kMaxRank))
      return ctx.error("{} batch dims are above the kernels' limit of {}", batch->size(),
                       kiln_ref::kMaxRank);
    KILN_ASSIGN_OR_RETURN(Tensor out, allocateResult(a.dtype(), outDims));
    auto sa = broadcastStrides(batchA, *batch), sb = broadcastStrides(batchB, *batch);
    for (auto& s : sa) s *= m * k;  // strides in matrices, scaled to elements
    for (auto& s : sb) s *= k * n;
    auto fail = [&] {
      return Status(ctx.error("no compile-time evaluation for {}", dtypeName(a.dtype())));
    };
    // The kernel nn_emit.cc's emitMatMul calls, with the same batch geometry.
    KILN_RETURN_IF_ERROR(dispatchNumeric(
        a.dtype(),
        [&](auto tag) -> Status {
          using T = decltype(tag);
          if constexpr (std::is_same_v<T, bool>) {
            return fail();
          } else {
            kiln_ref::matmul(int(batch->size()), batch->data(), sa.data(), sb.data(), m, n, k,
                             a.data<T>(), b.data<T>(), out.mutableData<T>());
            return Status();
          }
        },
        fail));
    return std::vector<Tensor>{std::move(out)};
  }
};

// Y = alpha * A' B' + beta * C, with A' = transA ? A^T : A (2-D only) and C broadcast to [M, N].
struct GemmOp {
  static constexpr std::string_view kName = "Gemm";
  static OpSchema schema() {
    return {2,
            3,
            1,
            1,
            {{"alpha", AttrKind::Float},
             {"beta", AttrKind::Float},
             {"transA", AttrKind::Int},
             {"transB", AttrKind::Int}}};
  }
  static Expected<std::vector<TensorType>> inferTypes(const InferContext& ctx) {
    KILN_RETURN_IF_ERROR(requirePresent(ctx, 2));
    KILN_RETURN_IF_ERROR(requireDType(ctx, 0, "A", kMatMulTypes));
    KILN_RETURN_IF_ERROR(sameDType(ctx, 1, "B", 0, "A"));
    KILN_RETURN_IF_ERROR(sameDType(ctx, 2, "C", 0, "A"));
    const Shape& a = ctx.in(0).shape;
    const Shape& b = ctx.in(1).shape;
    if ((a.rankKnown() && a.rank() != 2) || (b.rankKnown() && b.rank() != 2))
      return ctx.error("A {} and B {} must both be 2-D matrices", toString(a), toString(b));
    const bool ta = ctx.node().attrInt("transA", 0) != 0;
    const bool tb = ctx.node().attrInt("transB", 0) != 0;
    Dim m = a.rankKnown() ? a[ta ? 1 : 0] : Dim::unknown();
    Dim ka = a.rankKnown() ? a[ta ? 0 : 1] : Dim::unknown();
    Dim kb = b.rankKnown() ? b[tb ? 1 : 0] : Dim::unknown();
    Dim n = b.rankKnown() ? b[tb ? 0 : 1] : Dim::unknown();
    if (ka.isStatic() && kb.isStatic() && ka.value != kb.value)
      return ctx.error("inner dims differ: A {}{} x B {}{}", toString(a), ta ? "^T" : "",
                       toString(b), tb ? "^T" : "");
    if (ctx.has(2) && ctx.in(2).shape.rankKnown()) {
      const Shape& c = ctx.in(2).shape;
      const Dim* target[2] = {&m, &n};
      bool ok = c.rank() <= 2;
      for (size_t i = 0; ok && i < c.dims().size(); ++i) {
        const Dim& d = c[i];
        const Dim& t = *target[2 - c.dims().size() + i];
        ok = !(d.isStatic() && d.value != 1 && t.isStatic() && d.value != t.value);
      }
      if (!ok)
        return ctx.error("C {} does not broadcast to the product's shape [{},{}]", toString(c),
                         m.isStatic() ? std::to_string(m.value) : "M",
                         n.isStatic() ? std::to_string(n.value) : "N");
    }
    return single(ctx.in(0).dtype, Shape({m, n}));
  }
};

// Integer matmul with optional zero points, i32 result.
struct MatMulIntegerOp {
  static constexpr std::string_view kName = "MatMulInteger";
  static OpSchema schema() { return {2, 4, 1, 1, {}}; }
  static Expected<std::vector<TensorType>> inferTypes(const InferContext& ctx) {
    KILN_RETURN_IF_ERROR(requirePresent(ctx, 2));
    KILN_RETURN_IF_ERROR(requireDType(ctx, 0, "A", kInt8));
    KILN_RETURN_IF_ERROR(requireDType(ctx, 1, "B", kInt8));
    KILN_RETURN_IF_ERROR(sameDType(ctx, 2, "a_zero_point", 0, "A"));
    KILN_RETURN_IF_ERROR(sameDType(ctx, 3, "b_zero_point", 1, "B"));
    KILN_ASSIGN_OR_RETURN(Shape s, matmulShape(ctx, 0, 1));
    return single(DType::I32, std::move(s));
  }
};

// a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point.
struct QLinearMatMulOp {
  static constexpr std::string_view kName = "QLinearMatMul";
  static OpSchema schema() { return {8, 8, 1, 1, {}}; }
  static Expected<std::vector<TensorType>> inferTypes(const InferContext& ctx) {
    KILN_RETURN_IF_ERROR(requirePresent(ctx, 8));
    KILN_RETURN_IF_ERROR(requireDType(ctx, 0, "a", kInt8));
    KILN_RETURN_IF_ERROR(requireDType(ctx, 3, "b", kInt8));
    KILN_RETURN_IF_ERROR(requireDType(ctx, 7, "y_zero_point", kInt8));
    KILN_RETURN_IF_ERROR(sameDType(ctx, 2, "a_zero_point", 0, "a"));
    KILN_RETURN_IF_ERROR(sameDType(ctx, 5, "b_zero_point", 3, "b"));
    for (size_t i : {size_t(1), size_t(4), size_t(6)})
      KILN_RETURN_IF_ERROR(requireDType(ctx, i,
                                        i == 1   ? "a_scale"
                                        : i == 4 ? "b_scale"
                                                 : "y_scale",
                                        {DType::F32, DType::F16, DType::BF16}));
    KILN_ASSIGN_OR_RETURN(Shape s, matmulShape(ctx, 0, 3));
    return single(ctx.in(7).dtype, std::move(s));
  }
};

// ---- Einsum ----

// One operand's subscripts: letters, with "..." standing for `ellipsisAt` leading letters.
struct EinsumTerm {
  std::string labels;
  int ellipsisAt = -1;  ///< index in labels before which "..." stands; -1 without it
};

Expected<EinsumTerm> parseTerm(const InferContext& ctx, std::string_view t) {
  EinsumTerm term;
  for (size_t i = 0; i < t.size(); ++i) {
    char c = t[i];
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
      term.labels += c;
    } else if (c == '.' && t.substr(i, 3) == "..." && term.ellipsisAt < 0) {
      term.ellipsisAt = int(term.labels.size());
      i += 2;
    } else {
      return ctx.error("equation term '{}' is not letters with at most one '...'", t);
    }
  }
  return term;
}

struct EinsumOp {
  static constexpr std::string_view kName = "Einsum";
  static OpSchema schema() { return {1, -1, 1, 1, {{"equation", AttrKind::String, true}}}; }

  // Records label `c` of size `d`; labels of size 1 broadcast, as in numpy.
  static Status bindLabel(const InferContext& ctx, std::map<char, Dim>& dims, char c,
                          const Dim& d) {
    auto [it, fresh] = dims.emplace(c, d);
    if (fresh || it->second == d) return Status();
    Dim& have = it->second;
    if (d.isStatic() && have.isStatic()) {
      if (d.value == 1) return Status();
      if (have.value == 1) {
        have = d;
        return Status();
      }
      return ctx.error("label '{}' has size {} in one operand and {} in another", c, have.value,
                       d.value);
    }
    if (have.isStatic() && have.value == 1)
      have = d;  // size 1 broadcasts to anything
    else if (d.isStatic() && d.value != 1)
      have = d;  // a static size beats a symbol
    else if (!have.isStatic() && !d.isStatic())
      have = Dim::unknown();
    return Status();
  }

  static Expected<std::vector<TensorType>> inferTypes(const InferContext& ctx) {
    KILN_RETURN_IF_ERROR(requirePresent(ctx, ctx.numInputs()));
    KILN_RETURN_IF_ERROR(requireDType(ctx, 0, "Inputs", kNumeric));
    std::string eq;
    for (char c : ctx.node().attrString("equation", ""))
      if (c != ' ') eq += c;
    const size_t arrow = eq.find("->");
    std::string_view lhs = std::string_view(eq).substr(0, arrow);
    std::vector<EinsumTerm> terms;
    for (size_t start = 0;;) {
      size_t comma = lhs.find(',', start);
      KILN_ASSIGN_OR_RETURN(auto term, parseTerm(ctx, lhs.substr(start, comma - start)));
      terms.push_back(std::move(term));
      if (comma == std::string_view::npos) break;
      start = comma + 1;
    }
    if (terms.size() != ctx.numInputs())
      return ctx.error("equation '{}' has {} operand terms but the node has {} inputs", eq,
                       terms.size(), ctx.numInputs());
    std::map<char, Dim> dims;
    std::map<char, int> counts;
    std::vector<Shape> ellipses;
    bool anyEllipsis = false, ellipsisKnown = true, ranksKnown = true;
    for (size_t i = 0; i < terms.size(); ++i) {
      KILN_RETURN_IF_ERROR(sameDType(ctx, i, "Inputs", 0, "input 0"));
      const EinsumTerm& t = terms[i];
      for (char c : t.labels) ++counts[c];
      anyEllipsis |= t.ellipsisAt >= 0;
      const Shape& s = ctx.in(i).shape;
      if (!s.rankKnown()) {
        ranksKnown = false;
        if (t.ellipsisAt >= 0) ellipsisKnown = false;
        continue;
      }
      const int64_t extra = s.rank() - int64_t(t.labels.size());
      if (extra < 0 || (t.ellipsisAt < 0 && extra != 0))
        return ctx.error("input {} has shape {} but its equation term has {} labels{}", i,
                         toString(s), t.labels.size(), t.ellipsisAt < 0 ? "" : " and '...'");
      const size_t e = t.ellipsisAt < 0 ? 0 : size_t(t.ellipsisAt);
      for (size_t j = 0; j < t.labels.size(); ++j)
        KILN_RETURN_IF_ERROR(bindLabel(ctx, dims, t.labels[j], s[j < e ? j : j + size_t(extra)]));
      if (t.ellipsisAt >= 0)
        ellipses.emplace_back(
            std::vector<Dim>(s.dims().begin() + int64_t(e), s.dims().begin() + int64_t(e) + extra));
    }
    EinsumTerm out;
    if (arrow != std::string::npos) {
      KILN_ASSIGN_OR_RETURN(out, parseTerm(ctx, std::string_view(eq).substr(arrow + 2)));
      for (size_t j = 0; j < out.labels.size(); ++j) {
        if (!counts.count(out.labels[j]))
          return ctx.error("output label '{}' appears in no input", out.labels[j]);
        if (out.labels.find(out.labels[j], j + 1) != std::string::npos)
          return ctx.error("output label '{}' is repeated", out.labels[j]);
      }
    } else {
      // Implicit output: broadcast dims first, then labels used once, in ASCII order.
      if (anyEllipsis) out.ellipsisAt = 0;
      for (const auto& [c, n] : counts)
        if (n == 1) out.labels += c;
    }
    Shape ellipsis = Shape::unknownRank();
    if (ellipsisKnown) {
      KILN_ASSIGN_OR_RETURN(ellipsis, broadcastShapes(ctx, ellipses));
    }
    if (out.ellipsisAt < 0 && ellipsis.rankKnown() && ellipsis.rank() > 0)
      return ctx.error("equation '{}' drops the '...' dims from its output; keep '...' there", eq);
    const DType t = ctx.in(0).dtype;
    if (out.ellipsisAt >= 0 && !ellipsis.rankKnown()) return single(t, Shape::unknownRank());
    std::vector<Dim> result;
    for (size_t j = 0; j <= out.labels.size(); ++j) {
      if (int(j) == out.ellipsisAt)
        result.insert(result.end(), ellipsis.dims().begin(), ellipsis.dims().end());
      if (j == out.labels.size()) break;
      auto it = dims.find(out.labels[j]);
      // An operand of unknown rank could still broadcast a size-1 or symbolic label.
      bool settled =
          it != dims.end() && (ranksKnown || (it->second.isStatic() && it->second.value != 1));
      result.push_back(settled ? it->second : Dim::unknown());
    }
    return single(t, Shape(std::move(result)));
  }
};

}  // namespace

void registerMatMulOps(OpRegistry& r) {
  r.add<MatMulOp>();
  r.add<GemmOp>();
  r.add<MatMulIntegerOp>();
  r.add<QLinearMatMulOp>();
  r.add<EinsumOp>();
}

}  // namespace kiln
