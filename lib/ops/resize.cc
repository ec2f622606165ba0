// Image-space tensor ops: Resize, GridSample, AffineGrid, RoiAlign, NonMaxSuppression.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "dim_math.h"
#include "family_registration.h"

namespace kiln {
namespace {

using Types = Expected<std::vector<TensorType>>;

// An optional input that is present and not an empty placeholder tensor.
bool givenNonEmpty(const InferContext& ctx, size_t i) {
  if (!ctx.has(i)) return false;
  auto n = ctx.in(i).shape.numElements();
  return !n || *n != 0;
}

struct ResizeOp {
  static constexpr std::string_view kName = "Resize";
  static OpSchema schema() {
    return {1,
            4,
            1,
            1,
            {{"mode", AttrKind::String},
             {"coordinate_transformation_mode", AttrKind::String},
             {"cubic_coeff_a", AttrKind::Float},
             {"exclude_outside", AttrKind::Int},
             {"extrapolation_value", AttrKind::Float},
             {"nearest_mode", AttrKind::String},
             {"antialias", AttrKind::Int},
             {"axes", AttrKind::Ints},
             {"keep_aspect_ratio_policy", AttrKind::String}}};
  }
  static Status checkAttrs(const InferContext& ctx) {
    const Node& n = ctx.node();
    std::string mode = n.attrString("mode", "nearest");
    if (mode != "nearest" && mode != "linear" && mode != "cubic")
      return ctx.error("mode '{}' is not one of nearest, linear, cubic", mode);
    std::string policy = n.attrString("keep_aspect_ratio_policy", "stretch");
    if (policy != "stretch" && policy != "not_larger" && policy != "not_smaller")
      return ctx.error(
          "keep_aspect_ratio_policy '{}' is not one of stretch, not_larger, "
          "not_smaller",
          policy);
    return Status();
  }
  static Types inferTypes(const InferContext& ctx) {
    KILN_RETURN_IF_ERROR(checkAttrs(ctx));
    KILN_RETURN_IF_ERROR(requireIntegerInput(ctx, 3, "sizes"));
    const TensorType& x = ctx.in(0);
    const bool hasScales = givenNonEmpty(ctx, 2), hasSizes = givenNonEmpty(ctx, 3);
    if (hasScales && hasSizes) return ctx.error("give either scales or sizes, not both");
    if (!hasScales && !hasSizes) return ctx.error("needs a non-empty scales or sizes input");
    if (hasScales && !isFloat(ctx.in(2).dtype))
      return ctx.error("scales must be float, got {}", dtypeName(ctx.in(2).dtype));
    const size_t which = hasScales ? 2 : 3;
    if (!x.shape.rankKnown()) {
      auto len = staticLength(ctx.in(which));
      bool full = !ctx.node().hasAttr("axes");
      return single(x.dtype, full && len ? unknownDims(*len) : Shape::unknownRank());
    }
    const int64_t rank = x.shape.rank();
    std::vector<int64_t> axes(static_cast<size_t>(rank));
    std::iota(axes.begin(), axes.end(), 0);
    if (ctx.node().hasAttr("axes")) {
      KILN_ASSIGN_OR_RETURN(axes, normalizeAxes(ctx, ctx.node().attrInts("axes"), rank));
    }
    Shape out = x.shape;
    const Tensor* v = ctx.value(which);
    if (!v) {
      for (int64_t a : axes) out.dims()[size_t(a)] = Dim::unknown();
      return single(x.dtype, std::move(out));
    }
    if (v->numElements() != int64_t(axes.size()))
      return ctx.error("{} has {} values but {} axes are resized", hasScales ? "scales" : "sizes",
                       v->numElements(), axes.size());
    if (hasScales) {
      KILN_RETURN_IF_ERROR(applyScales(ctx, *v, axes, out));
    } else {
      KILN_RETURN_IF_ERROR(applySizes(ctx, *v, axes, out));
    }
    return single(x.dtype, std::move(out));
  }
  // output_dim = floor(input_dim * scale), computed in double as the ONNX reference does.
  static Status applyScales(const InferContext& ctx, const Tensor& scales,
                            const std::vector<int64_t>& axes, Shape& out) {
    for (size_t i = 0; i < axes.size(); ++i) {
      double s = scales.doubleAt(int64_t(i));
      if (!(s > 0) || !std::isfinite(s)) return ctx.error("scale {} must be positive", s);
      Dim& d = out.dims()[size_t(axes[i])];
      if (!d.isStatic()) {
        if (s != 1) d = Dim::unknown();
        continue;
      }
      double o = std::floor(double(d.value) * s);
      if (o > 4.0e18) return ctx.error("scale {} makes axis {} too large", s, axes[i]);
      d = Dim::known(int64_t(o));
    }
    return Status();
  }
  static Status applySizes(const InferContext& ctx, const Tensor& sizes,
                           const std::vector<int64_t>& axes, Shape& out) {
    for (int64_t i = 0; i < sizes.numElements(); ++i)
      if (sizes.intAt(i) < 0) return ctx.error("sizes[{}] is negative", i);
    std::string policy = ctx.node().attrString("keep_aspect_ratio_policy", "stretch");
    if (policy == "stretch") {
      for (size_t i = 0; i < axes.size(); ++i)
        out.dims()[size_t(axes[i])] = Dim::known(sizes.intAt(int64_t(i)));
      return Status();
    }
    // One scale for all axes: the largest (not_smaller) or smallest (not_larger) ratio.
    double scale = policy == "not_larger" ? INFINITY : 0;
    for (size_t i = 0; i < axes.size(); ++i) {
      const Dim& d = out[size_t(axes[i])];
      if (!d.isStatic() || d.value == 0) {
        for (int64_t a : axes) out.dims()[size_t(a)] = Dim::unknown();
        return Status();
      }
      double r = double(sizes.intAt(int64_t(i))) / double(d.value);
      scale = policy == "not_larger" ? std::min(scale, r) : std::max(scale, r);
    }
    for (int64_t a : axes) {
      Dim& d = out.dims()[size_t(a)];
      d = Dim::known(int64_t(std::floor(scale * double(d.value) + 0.5)));  // round half up
    }
    return Status();
  }
};

struct GridSampleOp {
  static constexpr std::string_view kName = "GridSample";
  static OpSchema schema() {
    return {2,
            2,
            1,
            1,
            {{"align_corners", AttrKind::Int},
             {"mode", AttrKind::String},
             {"padding_mode", AttrKind::String}}};
  }
  static Types inferTypes(const InferContext& ctx) {
    const TensorType& x = ctx.in(0);
    const Shape& grid = ctx.in(1).shape;
    if (!x.shape.rankKnown() || !grid.rankKnown()) return single(x.dtype, Shape::unknownRank());
    const int64_t r = x.shape.rank();
    if (r < 3 || grid.rank() != r)
      return ctx.error("X {} and grid {} must have equal rank >= 3", toString(x.shape),
                       toString(grid));
    const Dim& coords = grid[size_t(r - 1)];
    if (coords.isStatic() && coords.value != r - 2)
      return ctx.error("grid's last dim is {} but X has {} spatial dims", coords.value, r - 2);
    auto n = unifyDim(x.shape[0], grid[0]);
    if (!n) return ctx.error("X and grid have different batch sizes");
    std::vector<Dim> out{*n, x.shape[1]};
    out.insert(out.end(), grid.dims().begin() + 1, grid.dims().end() - 1);
    return single(x.dtype, Shape(std::move(out)));
  }
};

struct AffineGridOp {
  static constexpr std::string_view kName = "AffineGrid";
  static OpSchema schema() { return {2, 2, 1, 1, {{"align_corners", AttrKind::Int}}}; }
  static Types inferTypes(const InferContext& ctx) {
    KILN_RETURN_IF_ERROR(requireIntegerInput(ctx, 1, "size"));
    DType t = ctx.in(0).dtype;
    auto size = knownInts(ctx, 1);
    auto len = size ? std::optional<int64_t>(int64_t(size->size())) : staticLength(ctx.in(1));
    if (!len) return single(t, Shape::unknownRank());
    if (*len != 4 && *len != 5) return ctx.error("size must have 4 or 5 values, got {}", *len);
    // [N, C, H, W] → [N, H, W, 2]; [N, C, D, H, W] → [N, D, H, W, 3].
    std::vector<Dim> out;
    for (int64_t i = 0; i < *len; ++i) {
      if (i == 1) continue;
      if (size && (*size)[size_t(i)] < 0) return ctx.error("size[{}] is negative", i);
      out.push_back(size ? Dim::known((*size)[size_t(i)]) : Dim::unknown());
    }
    out.push_back(Dim::known(*len - 2));
    return single(t, Shape(std::move(out)));
  }
};

struct RoiAlignOp {
  static constexpr std::string_view kName = "RoiAlign";
  static OpSchema schema() {
    return {3,
            3,
            1,
            1,
            {{"coordinate_transformation_mode", AttrKind::String},
             {"mode", AttrKind::String},
             {"output_height", AttrKind::Int},
             {"output_width", AttrKind::Int},
             {"sampling_ratio", AttrKind::Int},
             {"spatial_scale", AttrKind::Float}}};
  }
  static Types inferTypes(const InferContext& ctx) {
    KILN_RETURN_IF_ERROR(requireIntegerInput(ctx, 2, "batch_indices"));
    const TensorType& x = ctx.in(0);
    const Shape &rois = ctx.in(1).shape, &batch = ctx.in(2).shape;
    if (x.shape.rankKnown() && x.shape.rank() != 4)
      return ctx.error("X must be 4-D, got {}", toString(x.shape));
    if (rois.rankKnown() && rois.rank() != 2)
      return ctx.error("rois must be 2-D [num_rois, 4], got {}", toString(rois));
    int64_t oh = ctx.node().attrInt("output_height", 1), ow = ctx.node().attrInt("output_width", 1);
    if (oh < 1 || ow < 1) return ctx.error("output_height and output_width must be >= 1");
    Dim numRois = rois.rankKnown() ? rois[0] : Dim::unknown();
    if (batch.rankKnown() && batch.rank() == 1) {
      auto u = unifyDim(numRois, batch[0]);
      if (!u) return ctx.error("rois and batch_indices disagree on the number of rois");
      numRois = *u;
    }
    Dim channels = x.shape.rankKnown() ? x.shape[1] : Dim::unknown();
    return single(x.dtype, Shape({numRois, channels, Dim::known(oh), Dim::known(ow)}));
  }
};

struct NonMaxSuppressionOp {
  static constexpr std::string_view kName = "NonMaxSuppression";
  static OpSchema schema() { return {2, 5, 1, 1, {{"center_point_box", AttrKind::Int}}}; }
  // [selected, 3]: the count is decided by the data, at most batches * classes * the boxes
  // kept per class (max_output_boxes_per_class when known, else every box).
  static Types inferTypes(const InferContext& ctx) {
    const Shape &boxes = ctx.in(0).shape, &scores = ctx.in(1).shape;
    if (boxes.rankKnown() && (boxes.rank() != 3 || (boxes[2].isStatic() && boxes[2].value != 4)))
      return ctx.error("boxes must be [batches, boxes, 4], got {}", toString(boxes));
    if (scores.rankKnown() && scores.rank() != 3)
      return ctx.error("scores must be [batches, classes, boxes], got {}", toString(scores));
    Dim selected = Dim::unknown();
    if (boxes.rankKnown() && scores.rankKnown() && boxes[0].isStatic() && boxes[1].isStatic() &&
        scores[1].isStatic()) {
      int64_t perClass = boxes[1].value;
      if (!ctx.has(2)) {
        perClass = 0;  // max_output_boxes_per_class defaults to 0
      } else if (auto m = knownScalar(ctx, 2)) {
        perClass = std::clamp<int64_t>(*m, 0, perClass);
      }
      int64_t b = 0;
      if (!__builtin_mul_overflow(boxes[0].value, scores[1].value, &b) &&
          !__builtin_mul_overflow(b, perClass, &b))
        selected = Dim::bounded(b);
    }
    return single(DType::I64, Shape({selected, Dim::known(3)}));
  }
};

}  // namespace

void registerImageOps(OpRegistry& r) {
  r.add<ResizeOp>();
  r.add<GridSampleOp>();
  r.add<AffineGridOp>();
  r.add<RoiAlignOp>();
  r.add<NonMaxSuppressionOp>();
}

}  // namespace kiln
