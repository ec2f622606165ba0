// Emit facet for Resize: per-axis scales and roi resolved at compile time where possible,
// then one call of kernels/ref/resize.h.
#include <cmath>
#include <numeric>

#include "cpu_emit_support.h"
#include "emit_support.h"

namespace kiln {
namespace {

struct NamedEnum {
  const char* name;
  const char* spelling;
};
constexpr NamedEnum kModes[] = {{"nearest", "kiln_ref::kResizeNearest"},
                                {"linear", "kiln_ref::kResizeLinear"},
                                {"cubic", "kiln_ref::kResizeCubic"}};
constexpr NamedEnum kCoordModes[] = {{"half_pixel", "kiln_ref::kCoordHalfPixel"},
                                     {"half_pixel_symmetric", "kiln_ref::kCoordHalfPixelSymmetric"},
                                     {"pytorch_half_pixel", "kiln_ref::kCoordPytorchHalfPixel"},
                                     {"align_corners", "kiln_ref::kCoordAlignCorners"},
                                     {"asymmetric", "kiln_ref::kCoordAsymmetric"},
                                     {"tf_crop_and_resize", "kiln_ref::kCoordTfCropAndResize"}};
constexpr NamedEnum kNearestModes[] = {{"round_prefer_floor", "kiln_ref::kNearestRoundPreferFloor"},
                                       {"round_prefer_ceil", "kiln_ref::kNearestRoundPreferCeil"},
                                       {"floor", "kiln_ref::kNearestFloor"},
                                       {"ceil", "kiln_ref::kNearestCeil"}};

template <size_t N>
Expected<std::string> enumOf(const Node& n, EmitContext& ctx, const char* attr, const char* dflt,
                             const NamedEnum (&table)[N]) {
  std::string v = n.attrString(attr, dflt);
  for (const auto& row : table)
    if (v == row.name) return std::string(row.spelling);
  return ctx.unsupported(fmt::format("Resize {} '{}'", attr, v));
}

/// An optional input that is present and not an empty placeholder.
bool given(const Node& n, size_t i) {
  return n.numInputs() > i && n.input(i) && staticNumel(n.input(i)) > 0;
}

/// Floats of a compile-time float input.
std::optional<std::vector<float>> constFloats(EmitContext& ctx, size_t i) {
  const Tensor* t = ctx.value(i);
  if (!t || !isFloat(t->dtype())) return std::nullopt;
  std::vector<float> v;
  for (int64_t k = 0; k < t->numElements(); ++k) v.push_back(float(t->doubleAt(k)));
  return v;
}

/// Scales for every axis: from `scales`, or from `sizes` as the output/input ratio (one ratio
/// for all resized axes under keep_aspect_ratio_policy, as shape inference computes it).
/// Returns the scales (empty when they are read at run time) and the kernel argument.
/// Nearest, asymmetric, floor with integer factors on H and W of an f32 NCHW tensor: in[o / f]
/// exactly (o / f is exact in float for these sizes), so the kiln_cpu copy kernel serves.
bool emitUpsampleNearest(const Node& n, EmitContext& ctx, const std::vector<int64_t>& in,
                         const std::vector<int64_t>& out, const std::vector<float>& scales) {
  if (!ctx.target().optimizedKernels() || n.input(0)->dtype() != DType::F32 || in.size() != 4 ||
      scales.size() != 4 || out[0] != in[0] || out[1] != in[1] || scales[0] != 1.0f ||
      scales[1] != 1.0f)
    return false;
  int64_t f[2] = {0, 0};
  for (size_t d = 2; d < 4; ++d) {
    if (in[d] <= 0 || out[d] % in[d] != 0 || out[d] / in[d] > 64) return false;
    f[d - 2] = out[d] / in[d];
    if (scales[d] != float(f[d - 2])) return false;
  }
  if (in[0] * in[1] <= 0) return false;
  ctx.useHeader("kiln_cpu/resize.h");
  ctx.call(cpu_detail::cpuKernel(cpu_kernels::Kernel::upsample_nearest2d_f32, ctx.target()),
           fmt::format("kiln_cpu::upsample_nearest2d_f32({}, {}, {}, {}, {}, {}, {}, {});",
                       in[0] * in[1], in[2], in[3], f[0], f[1], ctx.input(0), ctx.output(0),
                       ctx.threadPool()));
  return true;
}

struct Scales {
  std::vector<float> values;
  std::string arg;
};

Expected<Scales> scalesArg(const Node& n, EmitContext& ctx, const std::vector<int64_t>& axes,
                           const std::vector<int64_t>& in, const std::vector<int64_t>& out,
                           bool antialias, bool fullAxes) {
  std::vector<float> scales(in.size(), 1.0f);
  if (given(n, 2)) {
    auto s = constFloats(ctx, 2);
    if (!s) {
      // Run-time scales drive the coordinate mapping; without antialias the tap counts (and
      // so the scratch size) do not depend on them.
      if (antialias || !fullAxes || n.input(2)->dtype() != DType::F32)
        return ctx.unsupported("Resize with scales known only at run time");
      return Scales{{}, ctx.input(2)};
    }
    if (s->size() != axes.size()) return ctx.unsupported("Resize with a bad scales length");
    for (size_t k = 0; k < axes.size(); ++k) scales[size_t(axes[k])] = (*s)[k];
    return Scales{scales, ctx.constFloatArray(scales)};
  }
  std::string policy = n.attrString("keep_aspect_ratio_policy", "stretch");
  if (policy == "stretch") {
    for (int64_t a : axes) {
      size_t d = size_t(a);
      if (in[d] > 0) scales[d] = float(double(out[d]) / double(in[d]));
    }
    return Scales{scales, ctx.constFloatArray(scales)};
  }
  auto sizes = constInts(ctx, n, 3);
  if (!sizes || sizes->size() != axes.size())
    return ctx.unsupported("Resize with keep_aspect_ratio_policy and run-time sizes");
  double scale = policy == "not_larger" ? INFINITY : 0;
  for (size_t k = 0; k < axes.size(); ++k) {
    double in_d = double(in[size_t(axes[k])]);
    if (in_d == 0) return ctx.unsupported("Resize of an empty axis");
    double r = double((*sizes)[k]) / in_d;
    scale = policy == "not_larger" ? std::min(scale, r) : std::max(scale, r);
  }
  for (int64_t a : axes) scales[size_t(a)] = float(scale);
  return Scales{scales, ctx.constFloatArray(scales)};
}

Status emitResize(const Node& n, EmitContext& ctx) {
  KILN_ASSIGN_OR_RETURN(std::string e, valueKernelType(n, n.input(0), ctx));
  KILN_ASSIGN_OR_RETURN(std::string mode, enumOf(n, ctx, "mode", "nearest", kModes));
  KILN_ASSIGN_OR_RETURN(std::string coord, enumOf(n, ctx, "coordinate_transformation_mode",
                                                  "half_pixel", kCoordModes));
  KILN_ASSIGN_OR_RETURN(std::string nearest,
                        enumOf(n, ctx, "nearest_mode", "round_prefer_floor", kNearestModes));
  auto in = staticDims(n.input(0)), out = staticDims(n.output(0));
  const int64_t rank = int64_t(in.size());
  if (rank == 0 || int64_t(out.size()) != rank) return ctx.unsupported("Resize of a scalar");
  std::vector<int64_t> axes(in.size());
  std::iota(axes.begin(), axes.end(), 0);
  const bool fullAxes = !n.hasAttr("axes");
  if (!fullAxes) {
    axes.clear();
    for (int64_t a : n.attrInts("axes")) {
      auto na = axisIn(a, rank);
      if (!na) return ctx.unsupported("Resize axis out of range");
      axes.push_back(*na);
    }
  }
  const bool antialias = n.attrInt("antialias", 0) != 0 && mode != "kiln_ref::kResizeNearest";
  KILN_ASSIGN_OR_RETURN(Scales scales, scalesArg(n, ctx, axes, in, out, antialias, fullAxes));
  if (mode == "kiln_ref::kResizeNearest" && coord == "kiln_ref::kCoordAsymmetric" &&
      nearest == "kiln_ref::kNearestFloor" && emitUpsampleNearest(n, ctx, in, out, scales.values))
    return Status();
  // roi matters only to tf_crop_and_resize: [starts..., ends...] over the resized axes.
  std::string roi = "static_cast<const float*>(nullptr)";
  if (coord == "kiln_ref::kCoordTfCropAndResize") {
    if (!given(n, 1)) return ctx.unsupported("tf_crop_and_resize without roi");
    if (auto r = constFloats(ctx, 1)) {
      if (r->size() != 2 * axes.size()) return ctx.unsupported("Resize with a bad roi length");
      std::vector<float> full(size_t(2 * rank), 0.0f);
      for (size_t d = 0; d < size_t(rank); ++d) full[d + size_t(rank)] = 1.0f;
      for (size_t k = 0; k < axes.size(); ++k) {
        full[size_t(axes[k])] = (*r)[k];
        full[size_t(axes[k] + rank)] = (*r)[k + axes.size()];
      }
      roi = ctx.constFloatArray(full);
    } else if (fullAxes && n.input(1)->dtype() == DType::F32) {
      roi = ctx.input(1);
    } else {
      return ctx.unsupported("Resize with a run-time roi of this type");
    }
  }
  // Scratch: per axis, one count and `taps` (index, weight) pairs per output coordinate.
  int64_t scratch = 0;
  for (size_t d = 0; d < size_t(rank); ++d) {
    int64_t taps = mode == "kiln_ref::kResizeNearest"  ? 1
                   : mode == "kiln_ref::kResizeLinear" ? 2
                                                       : 4;
    if (antialias && scales.values[d] < 1.0f) {  // the kernel's widened filter
      double support = mode == "kiln_ref::kResizeLinear" ? 1.0 : 2.0;
      taps = 2 - 2 * (int64_t(std::floor(-support / double(scales.values[d]))) + 1);
    }
    scratch += out[d] * 8 + out[d] * taps * 16;
  }
  ctx.useHeader("kiln_ref/resize.h");
  ctx.call("kiln_ref::resize",
           fmt::format("kiln_ref::resize<{}>({}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, "
                       "{}, {});",
                       e, rank, ctx.constArray(in), ctx.constArray(out), scales.arg, roi, mode,
                       coord, nearest, floatLiteral(n.attrFloat("cubic_coeff_a", -0.75f)),
                       n.attrInt("exclude_outside", 0) != 0 ? 1 : 0,
                       floatLiteral(n.attrFloat("extrapolation_value", 0.0f)), antialias ? 1 : 0,
                       ctx.input(0), ctx.output(0), ctx.scratch(scratch)));
  return Status();
}

}  // namespace

void attachResizeEmitters(OpRegistry& r) {
  r.setEmit("", "Resize", emitResize);
}

}  // namespace kiln
