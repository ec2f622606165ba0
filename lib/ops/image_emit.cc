// Emit facets for GridSample, RoiAlign (kernels/ref/misc.h), MaxUnpool and MaxRoiPool
// (kernels/ref/pool.h): one kernel call each with the geometry as constants.
#include "emit_support.h"

namespace kiln {
namespace {

Status requireFloatType(const Node& n, const Value* v, EmitContext& ctx) {
  DType t = v->dtype();
  if (t != DType::F32 && t != DType::F64)
    return ctx.unsupported(fmt::format("{} on {} tensors", n.opType(), dtypeName(t)));
  return Status();
}

Status emitGridSample(const Node& n, EmitContext& ctx) {
  KILN_ASSIGN_OR_RETURN(std::string e, valueKernelType(n, n.input(0), ctx));
  KILN_ASSIGN_OR_RETURN(std::string g, valueKernelType(n, n.input(1), ctx));
  if (!isFloat(n.input(1)->dtype())) return ctx.unsupported("GridSample with a non-float grid");
  auto x = staticDims(n.input(0)), y = staticDims(n.output(0));
  if (x.size() < 3 || y.size() != x.size()) return ctx.unsupported("GridSample of rank < 3");
  const std::string mode = n.attrString("mode", "linear");
  const std::string padding = n.attrString("padding_mode", "zeros");
  const char* modeConst = mode == "nearest"  ? "kiln_ref::kGridNearest"
                          : mode == "linear" ? "kiln_ref::kGridLinear"
                          : mode == "cubic"  ? "kiln_ref::kGridCubic"
                                             : nullptr;
  const char* padConst = padding == "zeros"        ? "kiln_ref::kGridZeros"
                         : padding == "border"     ? "kiln_ref::kGridBorder"
                         : padding == "reflection" ? "kiln_ref::kGridReflection"
                                                   : nullptr;
  if (!modeConst || !padConst)
    return ctx.unsupported(fmt::format("GridSample mode '{}' padding '{}'", mode, padding));
  ctx.useHeader("kiln_ref/misc.h");
  ctx.call("kiln_ref::grid_sample",
           fmt::format("kiln_ref::grid_sample<{}, {}>({}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {});",
                       e, g, x.size() - 2, x[0], x[1],
                       ctx.constArray(std::vector<int64_t>(x.begin() + 2, x.end())),
                       ctx.constArray(std::vector<int64_t>(y.begin() + 2, y.end())), ctx.input(1),
                       modeConst, padConst, n.attrInt("align_corners", 0) != 0 ? 1 : 0,
                       ctx.input(0), ctx.output(0)));
  return Status();
}

Status emitRoiAlign(const Node& n, EmitContext& ctx) {
  KILN_ASSIGN_OR_RETURN(std::string e, valueKernelType(n, n.input(0), ctx));
  if (!isFloat(n.input(0)->dtype()) || n.input(1)->dtype() != n.input(0)->dtype())
    return ctx.unsupported("RoiAlign with non-float or mixed-type X and rois");
  if (n.input(2)->dtype() != DType::I64)
    return ctx.unsupported("RoiAlign with batch_indices that are not int64");
  auto x = staticDims(n.input(0)), y = staticDims(n.output(0));
  if (x.size() != 4 || y.size() != 4) return ctx.unsupported("RoiAlign of rank other than 4");
  const std::string mode = n.attrString("mode", "avg");
  const std::string ctm = n.attrString("coordinate_transformation_mode", "half_pixel");
  if ((mode != "avg" && mode != "max") || (ctm != "half_pixel" && ctm != "output_half_pixel"))
    return ctx.unsupported(fmt::format("RoiAlign mode '{}' with '{}'", mode, ctm));
  ctx.useHeader("kiln_ref/misc.h");
  callChecked(
      ctx, "kiln_ref::roi_align",
      fmt::format("kiln_ref::roi_align<{}>({}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, "
                  "{}, {}, {}, {})",
                  e, x[0], x[1], x[2], x[3], y[0], ctx.input(1), ctx.input(2), y[2], y[3],
                  n.attrInt("sampling_ratio", 0), floatLiteral(n.attrFloat("spatial_scale", 1.0f)),
                  mode == "max" ? 1 : 0, ctm == "half_pixel" ? 1 : 0, ctx.input(0), ctx.output(0)));
  return Status();
}

// X [N, C, in...] and Indices (MaxPool's) scatter into Y [N, C, out...].
Status emitMaxUnpool(const Node& n, EmitContext& ctx) {
  KILN_RETURN_IF_ERROR(requireFloatType(n, n.input(0), ctx));
  if (n.input(1)->dtype() != DType::I64) return ctx.unsupported("MaxUnpool with non-int64 indices");
  auto x = staticDims(n.input(0)), y = staticDims(n.output(0));
  auto kernel = n.attrInts("kernel_shape");
  const size_t rank = kernel.size();
  if (x.size() != rank + 2 || y.size() != rank + 2 ||
      staticNumel(n.input(1)) != staticNumel(n.input(0)))
    return ctx.unsupported("MaxUnpool with inconsistent ranks");
  auto strides = n.attrInts("strides", std::vector<int64_t>(rank, 1));
  auto pads = n.attrInts("pads", std::vector<int64_t>(2 * rank, 0));
  if (strides.size() != rank || pads.size() != 2 * rank)
    return ctx.unsupported("inconsistent MaxUnpool attributes");
  // The indices address MaxPool's input: the default unpooled size.
  std::vector<int64_t> idxDims(rank), outDims(y.begin() + 2, y.end());
  for (size_t d = 0; d < rank; ++d)
    idxDims[d] =
        x[d + 2] == 0 ? 0 : (x[d + 2] - 1) * strides[d] + kernel[d] - pads[d] - pads[d + rank];
  if (y[0] != x[0] || y[1] != x[1]) return ctx.unsupported("MaxUnpool changing N or C");
  ctx.useHeader("kiln_ref/pool.h");
  ctx.call("kiln_ref::max_unpool",
           fmt::format("kiln_ref::max_unpool({}, {}, {}, {}, {}, {}, {}, {});", rank, x[0] * x[1],
                       staticNumel(n.input(0)), ctx.constArray(idxDims), ctx.constArray(outDims),
                       ctx.input(0), ctx.input(1), ctx.output(0)));
  return Status();
}

Status emitMaxRoiPool(const Node& n, EmitContext& ctx) {
  KILN_RETURN_IF_ERROR(requireFloatType(n, n.input(0), ctx));
  if (n.input(1)->dtype() != n.input(0)->dtype())
    return ctx.unsupported("MaxRoiPool with rois of another type");
  auto x = staticDims(n.input(0)), y = staticDims(n.output(0)), rois = staticDims(n.input(1));
  if (x.size() != 4 || y.size() != 4 || rois.size() != 2 || rois[1] != 5)
    return ctx.unsupported("MaxRoiPool shapes other than X [N, C, H, W], rois [R, 5]");
  ctx.useHeader("kiln_ref/pool.h");
  ctx.call(
      "kiln_ref::max_roi_pool",
      fmt::format("kiln_ref::max_roi_pool({}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {});", x[0], x[1],
                  x[2], x[3], rois[0], ctx.input(1), y[2], y[3],
                  floatLiteral(n.attrFloat("spatial_scale", 1.0f)), ctx.input(0), ctx.output(0)));
  return Status();
}

}  // namespace

void attachImageEmitters(OpRegistry& r) {
  r.setEmit("", "GridSample", emitGridSample);
  r.setEmit("", "RoiAlign", emitRoiAlign);
  r.setEmit("", "MaxUnpool", emitMaxUnpool);
  r.setEmit("", "MaxRoiPool", emitMaxRoiPool);
}

}  // namespace kiln
