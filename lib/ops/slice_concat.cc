// Concat, Split, Slice, Tile, Pad and CenterCropPad: ops that cut and join tensors.
#include <algorithm>
#include <numeric>

#include "dim_math.h"
#include "family_registration.h"
#include "kiln/support/checked_math.h"
#include "tensor_copy.h"

namespace kiln {
namespace {

using Types = Expected<std::vector<TensorType>>;
using Tensors = Expected<std::vector<Tensor>>;

// Static sum of dims; a single dynamic dim survives when the others are all 0.
Dim dimSum(const std::vector<Dim>& dims) {
  int64_t sum = 0;
  const Dim* dynamic = nullptr;
  int numDynamic = 0;
  for (const Dim& d : dims) {
    if (!d.isStatic()) {
      dynamic = &d;
      ++numDynamic;
    } else if (__builtin_add_overflow(sum, d.value, &sum)) {
      return Dim::unknown();
    }
  }
  if (numDynamic == 0) return Dim::known(sum);
  return numDynamic == 1 && sum == 0 ? *dynamic : Dim::unknown();
}

Status sameDTypes(const InferContext& ctx, size_t first, size_t last) {
  for (size_t i = first + 1; i <= last && i < ctx.numInputs(); ++i)
    if (ctx.has(i) && ctx.in(i).dtype != ctx.in(first).dtype)
      return ctx.error("input {} is {} but input {} is {}; all must have one element type", i,
                       dtypeName(ctx.in(i).dtype), first, dtypeName(ctx.in(first).dtype));
  return Status();
}

struct ConcatOp {
  static constexpr std::string_view kName = "Concat";
  static OpSchema schema() { return {1, -1, 1, 1, {{"axis", AttrKind::Int, true}}}; }
  static Types inferTypes(const InferContext& ctx) {
    KILN_RETURN_IF_ERROR(sameDTypes(ctx, 0, ctx.numInputs() - 1));
    DType t = ctx.in(0).dtype;
    const Shape* ref = nullptr;
    bool allRanked = true;
    for (size_t i = 0; i < ctx.numInputs(); ++i) {
      if (!ctx.has(i)) continue;
      const Shape& s = ctx.in(i).shape;
      if (!s.rankKnown()) {
        allRanked = false;
      } else if (!ref) {
        ref = &s;
      } else if (s.rank() != ref->rank()) {
        return ctx.error("inputs have ranks {} and {}; Concat needs equal ranks", ref->rank(),
                         s.rank());
      }
    }
    if (!ref) return single(t, Shape::unknownRank());
    if (ref->rank() == 0) return ctx.error("cannot concatenate scalars (rank 0)");
    KILN_ASSIGN_OR_RETURN(int64_t axis,
                          normalizeAxis(ctx, ctx.node().attrInt("axis", 0), ref->rank()));
    std::vector<Dim> out = ref->dims();
    std::vector<Dim> axisDims;
    for (size_t i = 0; i < ctx.numInputs(); ++i) {
      if (!ctx.has(i) || !ctx.in(i).shape.rankKnown()) continue;
      const Shape& s = ctx.in(i).shape;
      axisDims.push_back(s[size_t(axis)]);
      for (size_t d = 0; d < out.size(); ++d) {
        if (int64_t(d) == axis) continue;
        auto u = unifyDim(out[d], s[d]);
        if (!u)
          return ctx.error(
              "input {} has dim {} = {} but another input has {}; only axis {} may "
              "differ",
              i, d, s[d].value, out[d].value, axis);
        out[d] = *u;
      }
    }
    out[size_t(axis)] = allRanked ? dimSum(axisDims) : Dim::unknown();
    return single(t, Shape(std::move(out)));
  }
  static Tensors evaluate(const EvalContext& ctx) {
    KILN_RETURN_IF_ERROR(requireInputs(ctx, ctx.numInputs()));
    const Tensor& first = ctx.in(0);
    if (first.rank() == 0) return ctx.error("cannot concatenate scalars");
    int64_t r = first.rank(), axis = ctx.node().attrInt("axis", 0);
    if (axis < -r || axis >= r) return ctx.error("axis {} is out of range for rank {}", axis, r);
    if (axis < 0) axis += r;
    std::vector<int64_t> dims = first.dims();
    dims[size_t(axis)] = 0;
    for (size_t i = 0; i < ctx.numInputs(); ++i) {
      const Tensor& x = ctx.in(i);
      if (x.rank() != r || x.dtype() != first.dtype()) return ctx.error("inputs do not match");
      for (int64_t d = 0; d < r; ++d)
        if (d != axis && x.dims()[size_t(d)] != first.dims()[size_t(d)])
          return ctx.error("inputs differ outside the concatenation axis");
      dims[size_t(axis)] += x.dims()[size_t(axis)];
    }
    KILN_ASSIGN_OR_RETURN(TensorBuilder b, TensorBuilder::create(first.dtype(), dims));
    int64_t outer = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= dims[size_t(d)];
    int64_t dst = 0;
    for (int64_t o = 0; o < outer; ++o)
      for (size_t i = 0; i < ctx.numInputs(); ++i) {
        const Tensor& x = ctx.in(i);
        int64_t chunk = outer == 0 ? 0 : x.numElements() / outer;
        b.copy(dst, x, o * chunk, chunk);
        dst += chunk;
      }
    KILN_ASSIGN_OR_RETURN(Tensor out, std::move(b).finish());
    return std::vector<Tensor>{std::move(out)};
  }
};

// Output sizes along the split axis (unknown Dims where they cannot be known yet).
template <typename Ctx>
Expected<std::vector<Dim>> splitSizes(const Ctx& ctx, const Dim& d, int64_t n, bool hasSplit,
                                      const std::vector<int64_t>* split) {
  if (hasSplit) {
    if (!split) return std::vector<Dim>(size_t(n), Dim::unknown());
    if (int64_t(split->size()) != n)
      return ctx.error("split has {} sizes for {} outputs", split->size(), n);
    std::vector<Dim> out;
    int64_t sum = 0;
    for (int64_t v : *split) {
      if (v < 0) return ctx.error("split size {} is negative", v);
      if (__builtin_add_overflow(sum, v, &sum)) return ctx.error("split sizes overflow");
      out.push_back(Dim::known(v));
    }
    if (d.isStatic() && sum != d.value)
      return ctx.error("split sizes add up to {} but the axis has {} elements", sum, d.value);
    return out;
  }
  if (!d.isStatic()) return std::vector<Dim>(size_t(n), n == 1 ? d : Dim::unknown());
  const Node& node = ctx.node();
  if (node.hasAttr("num_outputs")) {
    // Opset 18: chunks of ceil(d / n), the last one smaller.
    int64_t chunk = d.value / n + (d.value % n != 0);
    int64_t last = d.value - chunk * (n - 1);
    if (last < 0)
      return ctx.error("cannot split {} elements into {} chunks of {}; give split sizes", d.value,
                       n, chunk);
    std::vector<Dim> out(size_t(n), Dim::known(chunk));
    out.back() = Dim::known(last);
    return out;
  }
  if (d.value % n != 0)
    return ctx.error("axis of {} elements does not split evenly into {} outputs; give split sizes",
                     d.value, n);
  return std::vector<Dim>(size_t(n), Dim::known(d.value / n));
}

struct SplitOp {
  static constexpr std::string_view kName = "Split";
  static OpSchema schema() {
    return {1, 2, 1, -1, {{"axis", AttrKind::Int}, {"num_outputs", AttrKind::Int}}};
  }
  static Status checkNumOutputs(const Node& n, auto& ctx) {
    int64_t k = n.attrInt("num_outputs", int64_t(n.numOutputs()));
    if (k != int64_t(n.numOutputs()))
      return ctx.error("num_outputs is {} but the node has {} outputs", k, n.numOutputs());
    return Status();
  }
  static Types inferTypes(const InferContext& ctx) {
    KILN_RETURN_IF_ERROR(requireIntegerInput(ctx, 1, "split"));
    KILN_RETURN_IF_ERROR(checkNumOutputs(ctx.node(), ctx));
    const int64_t n = int64_t(ctx.node().numOutputs());
    const TensorType& in = ctx.in(0);
    if (!in.shape.rankKnown()) return std::vector<TensorType>(size_t(n), {in.dtype, Shape()});
    KILN_ASSIGN_OR_RETURN(int64_t axis,
                          normalizeAxis(ctx, ctx.node().attrInt("axis", 0), in.shape.rank()));
    auto split = knownInts(ctx, 1);
    KILN_ASSIGN_OR_RETURN(auto sizes, splitSizes(ctx, in.shape[size_t(axis)], n, ctx.has(1),
                                                 split ? &*split : nullptr));
    std::vector<TensorType> out;
    for (const Dim& d : sizes) {
      TensorType t = in;
      t.shape.dims()[size_t(axis)] = d;
      out.push_back(std::move(t));
    }
    return out;
  }
  static Tensors evaluate(const EvalContext& ctx) {
    KILN_RETURN_IF_ERROR(requireInputs(ctx, 1));
    KILN_RETURN_IF_ERROR(checkNumOutputs(ctx.node(), ctx));
    const Tensor& x = ctx.in(0);
    const int64_t n = int64_t(ctx.node().numOutputs());
    int64_t r = x.rank(), axis = ctx.node().attrInt("axis", 0);
    if (axis < -r || axis >= r) return ctx.error("axis {} is out of range for rank {}", axis, r);
    if (axis < 0) axis += r;
    std::vector<int64_t> split;
    if (ctx.has(1)) split = ctx.in(1).toInts();
    KILN_ASSIGN_OR_RETURN(
        auto sizes, splitSizes(ctx, Dim::known(x.dims()[size_t(axis)]), n, ctx.has(1), &split));
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= x.dims()[size_t(d)];
    for (int64_t d = axis + 1; d < r; ++d) inner *= x.dims()[size_t(d)];
    std::vector<Tensor> outs;
    int64_t offset = 0, axisLen = x.dims()[size_t(axis)];
    for (const Dim& s : sizes) {
      std::vector<int64_t> dims = x.dims();
      dims[size_t(axis)] = s.value;
      KILN_ASSIGN_OR_RETURN(TensorBuilder b, TensorBuilder::create(x.dtype(), dims));
      for (int64_t o = 0; o < outer; ++o)
        b.copy(o * s.value * inner, x, (o * axisLen + offset) * inner, s.value * inner);
      KILN_ASSIGN_OR_RETURN(Tensor t, std::move(b).finish());
      outs.push_back(std::move(t));
      offset += s.value;
    }
    return outs;
  }
};

// A dynamic dim survives only a slice that provably takes all of it.
Dim sliceDim(const Dim& d, int64_t start, int64_t end, int64_t step) {
  if (d.isStatic()) return Dim::known(clampSlice(d.value, start, end, step).count);
  constexpr int64_t kToEnd = 2147483647;  // INT32_MAX and beyond: exporters' "to the end"
  if (step == 1 && start == 0 && end >= kToEnd) return d;
  if (step == -1 && (start == -1 || start >= kToEnd) && end <= -kToEnd) return d;
  return Dim::unknown();
}

struct SliceParams {
  std::vector<int64_t> starts, ends, axes, steps;
};

template <typename Ctx>
Status checkSliceParams(const Ctx& ctx, SliceParams& p, int64_t rank) {
  size_t n = p.starts.size();
  if (p.ends.size() != n || p.axes.size() != n || p.steps.size() != n)
    return ctx.error("starts, ends, axes and steps must have equal lengths ({}, {}, {}, {})", n,
                     p.ends.size(), p.axes.size(), p.steps.size());
  std::vector<bool> seen(size_t(rank), false);
  for (size_t i = 0; i < n; ++i) {
    int64_t a = p.axes[i];
    if (a < -rank || a >= rank) return ctx.error("axis {} is out of range for rank {}", a, rank);
    if (a < 0) a += rank;
    if (seen[size_t(a)]) return ctx.error("axis {} is repeated", p.axes[i]);
    seen[size_t(a)] = true;
    p.axes[i] = a;
    if (p.steps[i] == 0) return ctx.error("steps[{}] is 0", i);
  }
  return Status();
}

struct SliceOp {
  static constexpr std::string_view kName = "Slice";
  static OpSchema schema() { return {3, 5, 1, 1, {}}; }
  static Types inferTypes(const InferContext& ctx) {
    for (size_t i = 1; i < 5; ++i)
      KILN_RETURN_IF_ERROR(requireIntegerInput(ctx, i, "starts/ends/axes/steps"));
    const TensorType& in = ctx.in(0);
    if (!in.shape.rankKnown()) return single(in.dtype, Shape::unknownRank());
    const int64_t rank = in.shape.rank();
    auto starts = knownInts(ctx, 1), ends = knownInts(ctx, 2);
    std::optional<std::vector<int64_t>> axes, steps;
    if (ctx.has(3)) {
      axes = knownInts(ctx, 3);
      if (!axes) return single(in.dtype, unknownDims(rank));  // any dim may be sliced
    }
    if (ctx.has(4)) steps = knownInts(ctx, 4);
    if (!axes) {
      auto len = starts ? std::optional<int64_t>(int64_t(starts->size())) : staticLength(ctx.in(1));
      if (!len) return single(in.dtype, unknownDims(rank));
      axes = std::vector<int64_t>(size_t(*len));
      std::iota(axes->begin(), axes->end(), 0);
    }
    Shape out = in.shape;
    if (!starts || !ends || (ctx.has(4) && !steps)) {
      for (int64_t a : *axes) {
        if (a < -rank || a >= rank)
          return ctx.error("axis {} is out of range for rank {}", a, rank);
        out.dims()[size_t(a < 0 ? a + rank : a)] = Dim::unknown();
      }
      return single(in.dtype, std::move(out));
    }
    SliceParams p{*starts, *ends, *axes, steps ? *steps : std::vector<int64_t>(starts->size(), 1)};
    KILN_RETURN_IF_ERROR(checkSliceParams(ctx, p, rank));
    for (size_t i = 0; i < p.axes.size(); ++i) {
      Dim& d = out.dims()[size_t(p.axes[i])];
      d = sliceDim(d, p.starts[i], p.ends[i], p.steps[i]);
    }
    return single(in.dtype, std::move(out));
  }
  static Tensors evaluate(const EvalContext& ctx) {
    KILN_RETURN_IF_ERROR(requireInputs(ctx, 3));
    const Tensor& x = ctx.in(0);
    SliceParams p{ctx.in(1).toInts(), ctx.in(2).toInts(), {}, {}};
    if (ctx.has(3)) {
      p.axes = ctx.in(3).toInts();
    } else {
      p.axes.resize(p.starts.size());
      std::iota(p.axes.begin(), p.axes.end(), 0);
    }
    p.steps = ctx.has(4) ? ctx.in(4).toInts() : std::vector<int64_t>(p.starts.size(), 1);
    KILN_RETURN_IF_ERROR(checkSliceParams(ctx, p, x.rank()));
    std::vector<int64_t> dims = x.dims(), strides = stridesOf(x.dims());
    int64_t base = 0;
    for (size_t i = 0; i < p.axes.size(); ++i) {
      size_t a = size_t(p.axes[i]);
      SliceRange r = clampSlice(dims[a], p.starts[i], p.ends[i], p.steps[i]);
      base += r.start * strides[a];
      dims[a] = r.count;
      strides[a] = r.count > 1 ? strides[a] * p.steps[i] : 0;  // |step| < dim when count > 1
    }
    KILN_ASSIGN_OR_RETURN(Tensor out, takeStrided(x, dims, strides, base));
    return std::vector<Tensor>{std::move(out)};
  }
};

struct TileOp {
  static constexpr std::string_view kName = "Tile";
  static OpSchema schema() { return {2, 2, 1, 1, {}}; }
  template <typename Ctx>
  static Status checkRepeats(const Ctx& ctx, const std::vector<int64_t>& reps, int64_t rank) {
    if (int64_t(reps.size()) != rank)
      return ctx.error("repeats has {} entries but the input has rank {}", reps.size(), rank);
    for (int64_t v : reps)
      if (v < 0) return ctx.error("repeats contains negative value {}", v);
    return Status();
  }
  static Types inferTypes(const InferContext& ctx) {
    KILN_RETURN_IF_ERROR(requireIntegerInput(ctx, 1, "repeats"));
    const TensorType& in = ctx.in(0);
    if (!in.shape.rankKnown()) {
      auto len = staticLength(ctx.in(1));
      return single(in.dtype, len ? unknownDims(*len) : Shape::unknownRank());
    }
    auto reps = knownInts(ctx, 1);
    if (!reps) return single(in.dtype, unknownDims(in.shape.rank()));
    KILN_RETURN_IF_ERROR(checkRepeats(ctx, *reps, in.shape.rank()));
    std::vector<Dim> out;
    for (size_t i = 0; i < reps->size(); ++i) out.push_back(dimTimes(in.shape[i], (*reps)[i]));
    return single(in.dtype, Shape(std::move(out)));
  }
  static Tensors evaluate(const EvalContext& ctx) {
    KILN_RETURN_IF_ERROR(requireInputs(ctx, 2));
    const Tensor& x = ctx.in(0);
    auto reps = ctx.in(1).toInts();
    KILN_RETURN_IF_ERROR(checkRepeats(ctx, reps, x.rank()));
    std::vector<int64_t> dims;
    for (size_t i = 0; i < reps.size(); ++i) {
      auto d = checkedMul(x.dims()[i], reps[i]);
      if (!d) return ctx.error("tiled dim overflows");
      dims.push_back(*d);
    }
    KILN_ASSIGN_OR_RETURN(TensorBuilder b, TensorBuilder::create(x.dtype(), dims));
    auto strides = stridesOf(x.dims());
    std::vector<int64_t> idx(dims.size(), 0);
    for (int64_t e = 0; e < b.numElements(); ++e) {
      int64_t src = 0;
      for (size_t d = 0; d < dims.size(); ++d) src += (idx[d] % x.dims()[d]) * strides[d];
      b.copy(e, x, src);
      for (size_t d = dims.size(); d-- > 0;) {
        if (++idx[d] < dims[d]) break;
        idx[d] = 0;
      }
    }
    KILN_ASSIGN_OR_RETURN(Tensor out, std::move(b).finish());
    return std::vector<Tensor>{std::move(out)};
  }
};

}  // namespace

void registerSliceConcatOps(OpRegistry& r) {
  r.add<ConcatOp>();
  r.add<SplitOp>();
  r.add<SliceOp>();
  r.add<TileOp>();
}

}  // namespace kiln
