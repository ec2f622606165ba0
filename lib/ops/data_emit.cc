// Emit facets for the data-movement ops (Slice, Split, Expand, Tile, Pad, DepthToSpace,
// SpaceToDepth, Trilu, ReverseSequence): calls of the byte-moving kernels in
// kernels/ref/copy.h, one instantiation for every element type.
#include <numeric>
#include <optional>

#include "emit_support.h"
#include "shape_math.h"

namespace kiln {
namespace {

std::string voidIn(EmitContext& ctx, size_t i) {
  return "static_cast<const void*>(" + ctx.input(i) + ")";
}
std::string voidOut(EmitContext& ctx, size_t i) {
  return "static_cast<void*>(" + ctx.output(i) + ")";
}
/// A typed null pointer of input `like`'s C type (template deduction needs the type).
std::string nullLike(const Value* like) {
  return fmt::format("static_cast<const {}*>(nullptr)", cTypeOf(like->dtype()));
}

// ---- Slice ----

/// Starts and steps per axis from compile-time parameters, checked against the output dims.
Expected<std::pair<std::vector<int64_t>, std::vector<int64_t>>> constantSlice(
    const Node& n, EmitContext& ctx, const std::vector<int64_t>& in,
    const std::vector<int64_t>& out) {
  auto starts = constInts(ctx, n, 1), ends = constInts(ctx, n, 2);
  std::vector<int64_t> axes(starts->size()), steps(starts->size(), 1);
  std::iota(axes.begin(), axes.end(), 0);
  if (n.input(3)) axes = *constInts(ctx, n, 3);
  if (n.input(4)) steps = *constInts(ctx, n, 4);
  const int64_t rank = int64_t(in.size());
  if (ends->size() != starts->size() || axes.size() != starts->size() ||
      steps.size() != starts->size())
    return ctx.unsupported("Slice with starts/ends/axes/steps of different lengths");
  std::vector<int64_t> first(in.size(), 0), step(in.size(), 1);
  std::vector<bool> seen(in.size(), false);
  for (size_t k = 0; k < starts->size(); ++k) {
    auto a = axisIn(axes[k], rank);
    if (!a || seen[size_t(*a)] || steps[k] == 0)
      return ctx.unsupported("Slice with a bad axis or a zero step");
    seen[size_t(*a)] = true;
    SliceRange r = clampSlice(in[size_t(*a)], (*starts)[k], (*ends)[k], steps[k]);
    if (r.count != out[size_t(*a)])
      return ctx.unsupported("Slice whose parameters disagree with its output shape");
    first[size_t(*a)] = r.count > 0 ? r.start : 0;
    step[size_t(*a)] = r.count > 1 ? steps[k] : 1;
  }
  for (size_t d = 0; d < in.size(); ++d)
    if (!seen[d] && in[d] != out[d])
      return ctx.unsupported("Slice whose parameters disagree with its output shape");
  return std::make_pair(first, step);
}

/// The element offset of a slice that is one contiguous range of its input (unit steps, at most
/// one axis cut, every dim before it 1), else nullopt.
std::optional<int64_t> contiguousSliceOffset(const std::vector<int64_t>& in,
                                             const std::vector<int64_t>& out,
                                             const std::vector<int64_t>& first,
                                             const std::vector<int64_t>& step) {
  std::optional<size_t> cut;
  for (size_t d = 0; d < in.size(); ++d) {
    if (out[d] == 0) return std::nullopt;
    if (step[d] != 1 && out[d] > 1) return std::nullopt;
    if (out[d] == in[d] && first[d] == 0) continue;
    if (cut) return std::nullopt;
    cut = d;
  }
  if (!cut) return int64_t(0);
  for (size_t d = 0; d < *cut; ++d)
    if (in[d] != 1) return std::nullopt;
  int64_t inner = 1;
  for (size_t d = *cut + 1; d < in.size(); ++d) inner *= in[d];
  return first[*cut] * inner;
}

Status emitSlice(const Node& n, EmitContext& ctx) {
  KILN_ASSIGN_OR_RETURN(int64_t es, elementBytes(n, n.input(0), ctx));
  auto in = staticDims(n.input(0)), out = staticDims(n.output(0));
  if (in.empty()) return ctx.unsupported("Slice of a scalar");
  ctx.useHeader("kiln_ref/copy.h");
  bool allKnown = true;
  for (size_t i = 1; i < n.numInputs(); ++i)
    allKnown = allKnown && (!n.input(i) || constInts(ctx, n, i));
  std::string dims = ctx.constArray(in), outDims = ctx.constArray(out);
  if (allKnown) {
    KILN_ASSIGN_OR_RETURN(auto plan, constantSlice(n, ctx, in, out));
    if (auto offset = contiguousSliceOffset(in, out, plan.first, plan.second);
        offset && ctx.aliasOutput(0, 0, *offset * es))
      return Status();  // one contiguous range of the input: a view
    ctx.call("kiln_ref::slice",
             fmt::format("kiln_ref::slice({}, {}, {}, {}, {}, {}, {}, {});", in.size(), dims,
                         ctx.constArray(plan.first), ctx.constArray(plan.second), outDims, es,
                         voidIn(ctx, 0), voidOut(ctx, 0)));
    return Status();
  }
  // Parameters known only at run time: resolve them there, checked against the output shape.
  DType it = n.input(1)->dtype();
  for (size_t i = 1; i < n.numInputs(); ++i)
    if (n.input(i) && n.input(i)->dtype() != it)
      return ctx.unsupported("Slice with starts/ends/axes/steps of different types");
  const int64_t count = staticNumel(n.input(1));
  if (staticNumel(n.input(2)) != count || (n.input(3) && staticNumel(n.input(3)) != count) ||
      (n.input(4) && staticNumel(n.input(4)) != count))
    return ctx.unsupported("Slice with starts/ends/axes/steps of different lengths");
  auto opt = [&](size_t i) { return n.input(i) ? ctx.input(i) : nullLike(n.input(1)); };
  ctx.call("kiln_ref::slice",
           fmt::format("{{ int64_t st[kiln_ref::kMaxRank], sp[kiln_ref::kMaxRank]; "
                       "if (kiln_ref::slice_resolve({0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}, st, "
                       "sp) != 0) return KILN_ERR_DATA; "
                       "kiln_ref::slice({0}, {1}, st, sp, {2}, {8}, {9}, {10}); }}",
                       in.size(), dims, outDims, count, ctx.input(1), ctx.input(2), opt(3), opt(4),
                       es, voidIn(ctx, 0), voidOut(ctx, 0)));
  return Status();
}

// ---- Split ----

Status emitSplit(const Node& n, EmitContext& ctx) {
  KILN_ASSIGN_OR_RETURN(int64_t es, elementBytes(n, n.input(0), ctx));
  auto in = staticDims(n.input(0));
  auto axis = axisIn(n.attrInt("axis", 0), int64_t(in.size()));
  if (!axis) return ctx.unsupported("Split axis out of range");
  std::vector<int64_t> axisDims;
  for (size_t k = 0; k < n.numOutputs(); ++k) {
    const Value* o = n.output(k);
    if (!o) return ctx.unsupported("Split with an omitted output");
    axisDims.push_back(staticDims(o)[size_t(*axis)]);
  }
  int64_t total = std::accumulate(axisDims.begin(), axisDims.end(), int64_t(0));
  if (total != in[size_t(*axis)])
    return ctx.unsupported("Split whose outputs do not add up to the input");
  const int64_t outer = dimsProduct(in, 0, size_t(*axis));
  const int64_t inner = dimsProduct(in, size_t(*axis) + 1, in.size());
  if (outer == 1) {
    // Each output is one contiguous range of the input: a view where allowed, else a copy.
    int64_t offset = 0;
    for (size_t k = 0; k < n.numOutputs(); ++k) {
      int64_t bytes = axisDims[k] * inner * es;
      if (!ctx.aliasOutput(k, 0, offset) && bytes > 0)
        ctx.call("memcpy",
                 fmt::format("std::memcpy({}, static_cast<const unsigned char*>({}) + {}, {});",
                             voidOut(ctx, k), voidIn(ctx, 0), offset, bytes));
      offset += bytes;
    }
    return Status();
  }
  std::string outs;
  for (size_t k = 0; k < n.numOutputs(); ++k) outs += (k ? ", " : "") + voidOut(ctx, k);
  ctx.useHeader("kiln_ref/copy.h");
  ctx.call("kiln_ref::split",
           fmt::format("{{ void* const outs[] = {{{}}}; kiln_ref::split({}, {}, outs, {}, {}, {}, "
                       "{}); }}",
                       outs, voidIn(ctx, 0), n.numOutputs(), ctx.constArray(axisDims), outer, inner,
                       es));
  return Status();
}

// ---- Expand and Tile ----

Status emitExpand(const Node& n, EmitContext& ctx) {
  KILN_ASSIGN_OR_RETURN(int64_t es, elementBytes(n, n.input(0), ctx));
  auto in = staticDims(n.input(0)), out = staticDims(n.output(0));
  if (in.size() > out.size()) return ctx.unsupported("Expand to a lower rank");
  for (size_t k = 0; k < in.size(); ++k) {
    int64_t o = out[out.size() - in.size() + k];
    if (in[k] != o && in[k] != 1) return ctx.unsupported("Expand with mismatched dims");
  }
  ctx.useHeader("kiln_ref/copy.h");
  ctx.call(
      "kiln_ref::expand",
      fmt::format("kiln_ref::expand({}, {}, {}, {}, {}, {}, {});", in.size(), ctx.constArray(in),
                  out.size(), ctx.constArray(out), es, voidIn(ctx, 0), voidOut(ctx, 0)));
  return Status();
}

Status emitTile(const Node& n, EmitContext& ctx) {
  KILN_ASSIGN_OR_RETURN(int64_t es, elementBytes(n, n.input(0), ctx));
  auto in = staticDims(n.input(0)), out = staticDims(n.output(0));
  if (in.size() != out.size()) return ctx.unsupported("Tile with mismatched ranks");
  // The repeats follow from the static shapes (an empty input gives an empty output).
  std::vector<int64_t> repeats(in.size(), 1);
  for (size_t d = 0; d < in.size(); ++d) {
    if (in[d] == 0) continue;
    if (out[d] % in[d] != 0) return ctx.unsupported("Tile with mismatched dims");
    repeats[d] = out[d] / in[d];
  }
  if (auto given = constInts(ctx, n, 1); given && in.size() == given->size())
    for (size_t d = 0; d < in.size(); ++d)
      if (in[d] != 0) repeats[d] = (*given)[d];
  ctx.useHeader("kiln_ref/copy.h");
  ctx.call("kiln_ref::tile",
           fmt::format("kiln_ref::tile({}, {}, {}, {}, {}, {});", in.size(), ctx.constArray(in),
                       ctx.constArray(repeats), es, voidIn(ctx, 0), voidOut(ctx, 0)));
  return Status();
}

// ---- Pad ----

struct PadModeRow {
  const char* name;
  const char* spelling;
};
constexpr PadModeRow kPadModes[] = {{"constant", "kiln_ref::kPadConstant"},
                                    {"reflect", "kiln_ref::kPadReflect"},
                                    {"edge", "kiln_ref::kPadEdge"},
                                    {"wrap", "kiln_ref::kPadWrap"}};

Status emitPad(const Node& n, EmitContext& ctx) {
  KILN_ASSIGN_OR_RETURN(int64_t es, elementBytes(n, n.input(0), ctx));
  auto in = staticDims(n.input(0)), out = staticDims(n.output(0));
  const int64_t rank = int64_t(in.size());
  std::string modeName = n.attrString("mode", "constant");
  const char* mode = nullptr;
  for (const auto& row : kPadModes)
    if (modeName == row.name) mode = row.spelling;
  if (!mode) return ctx.unsupported(fmt::format("Pad mode '{}'", modeName));
  bool hasAxes = n.numInputs() > 3 && n.input(3);
  auto axesGiven = hasAxes ? constInts(ctx, n, 3) : std::nullopt;
  if (hasAxes && !axesGiven) return ctx.unsupported("Pad with axes known only at run time");
  std::vector<int64_t> axes(static_cast<size_t>(rank));
  std::iota(axes.begin(), axes.end(), 0);
  if (axesGiven) {
    axes.clear();
    for (int64_t a : *axesGiven) {
      auto na = axisIn(a, rank);
      if (!na) return ctx.unsupported("Pad axis out of range");
      axes.push_back(*na);
    }
  }
  std::string value = "static_cast<const void*>(nullptr)";
  if (n.numInputs() > 2 && n.input(2) && staticNumel(n.input(2)) > 0) {
    if (n.input(2)->dtype() != n.input(0)->dtype())
      return ctx.unsupported("Pad with a constant_value of another type");
    value = voidIn(ctx, 2);
  }
  ctx.useHeader("kiln_ref/copy.h");
  std::string dims = ctx.constArray(in);
  std::string pads;
  if (auto given = constInts(ctx, n, 1)) {
    if (given->size() != 2 * axes.size()) return ctx.unsupported("Pad with a bad pads length");
    std::vector<int64_t> full(size_t(2 * rank), 0);
    for (size_t k = 0; k < axes.size(); ++k) {
      full[size_t(axes[k])] = (*given)[k];
      full[size_t(axes[k] + rank)] = (*given)[k + axes.size()];
    }
    for (int64_t d = 0; d < rank; ++d)
      if (in[size_t(d)] + full[size_t(d)] + full[size_t(d + rank)] != out[size_t(d)])
        return ctx.unsupported("Pad whose pads disagree with its output shape");
    pads = ctx.constArray(full);
  } else {
    if (hasAxes || n.input(1)->dtype() != DType::I64 || staticNumel(n.input(1)) != 2 * rank)
      return ctx.unsupported("Pad with pads known only at run time and an axes input");
    pads = ctx.input(1);
    callChecked(
        ctx, "kiln_ref::pads_match",
        fmt::format("kiln_ref::pads_match({}, {}, {}, {})", rank, dims, pads, ctx.constArray(out)));
  }
  callChecked(ctx, "kiln_ref::pad",
              fmt::format("kiln_ref::pad({}, {}, {}, {}, {}, {}, {}, {})", rank, dims, pads, mode,
                          value, es, voidIn(ctx, 0), voidOut(ctx, 0)));
  return Status();
}

// ---- NCHW block rearrangement, Trilu, ReverseSequence ----

/// [N, C, H, W] and the block size of DepthToSpace/SpaceToDepth, as kernel arguments.
Expected<std::string> blockArgs(const Node& n, EmitContext& ctx) {
  auto x = staticDims(n.input(0));
  int64_t b = n.attrInt("blocksize", 0);
  if (x.size() != 4 || b < 1) return ctx.unsupported("block rearrangement of a non-4-D input");
  ctx.useHeader("kiln_ref/copy.h");
  return fmt::format("{}, {}, {}, {}, {}", x[0], x[1], x[2], x[3], b);
}

Status emitDepthToSpace(const Node& n, EmitContext& ctx) {
  KILN_ASSIGN_OR_RETURN(int64_t es, elementBytes(n, n.input(0), ctx));
  KILN_ASSIGN_OR_RETURN(std::string dims, blockArgs(n, ctx));
  int crd = n.attrString("mode", "DCR") == "CRD" ? 1 : 0;
  ctx.call("kiln_ref::depth_to_space", fmt::format("kiln_ref::depth_to_space({}, {}, {}, {}, {});",
                                                   dims, crd, es, voidIn(ctx, 0), voidOut(ctx, 0)));
  return Status();
}

Status emitSpaceToDepth(const Node& n, EmitContext& ctx) {
  KILN_ASSIGN_OR_RETURN(int64_t es, elementBytes(n, n.input(0), ctx));
  KILN_ASSIGN_OR_RETURN(std::string dims, blockArgs(n, ctx));
  ctx.call("kiln_ref::space_to_depth", fmt::format("kiln_ref::space_to_depth({}, {}, {}, {});",
                                                   dims, es, voidIn(ctx, 0), voidOut(ctx, 0)));
  return Status();
}

Status emitTrilu(const Node& n, EmitContext& ctx) {
  KILN_ASSIGN_OR_RETURN(int64_t es, elementBytes(n, n.input(0), ctx));
  auto x = staticDims(n.input(0));
  if (x.size() < 2) return ctx.unsupported("Trilu of rank < 2");
  std::string k = "0";
  if (n.numInputs() > 1 && n.input(1)) {
    if (auto given = constInts(ctx, n, 1); given && given->size() == 1)
      k = ctx.constArray(*given) + "[0]";
    else
      k = "int64_t(*" + ctx.input(1) + ")";
  }
  ctx.useHeader("kiln_ref/copy.h");
  ctx.call("kiln_ref::trilu",
           fmt::format("kiln_ref::trilu({}, {}, {}, {}, {}, {}, {}, {});",
                       dimsProduct(x, 0, x.size() - 2), x[x.size() - 2], x.back(), k,
                       n.attrInt("upper", 1) != 0 ? 1 : 0, es, voidIn(ctx, 0), voidOut(ctx, 0)));
  return Status();
}

Status emitReverseSequence(const Node& n, EmitContext& ctx) {
  KILN_ASSIGN_OR_RETURN(int64_t es, elementBytes(n, n.input(0), ctx));
  auto x = staticDims(n.input(0));
  int64_t timeAxis = n.attrInt("time_axis", 0);
  if (x.size() < 2 || (timeAxis != 0 && timeAxis != 1))
    return ctx.unsupported("ReverseSequence with these axes");
  if (n.input(1)->dtype() != DType::I64)
    return ctx.unsupported("ReverseSequence with non-int64 sequence_lens");
  ctx.useHeader("kiln_ref/copy.h");
  callChecked(ctx, "kiln_ref::reverse_sequence",
              fmt::format("kiln_ref::reverse_sequence({}, {}, {}, {}, {}, {}, {}, {})", x[0], x[1],
                          dimsProduct(x, 2, x.size()), timeAxis, ctx.input(1), es, voidIn(ctx, 0),
                          voidOut(ctx, 0)));
  return Status();
}

constexpr EmitterRow kDataEmitters[] = {
    {"Slice", emitSlice},
    {"Split", emitSplit},
    {"Expand", emitExpand},
    {"Tile", emitTile},
    {"Pad", emitPad},
    {"DepthToSpace", emitDepthToSpace},
    {"SpaceToDepth", emitSpaceToDepth},
    {"Trilu", emitTrilu},
    {"ReverseSequence", emitReverseSequence},
};

}  // namespace

void attachDataEmitters(OpRegistry& r) {
  setEmitters(r, kDataEmitters);
}

}  // namespace kiln
