// Shape arithmetic shared by op definitions: broadcasting, axes, dims from attributes.
#pragma once

#include <initializer_list>
#include <optional>
#include <vector>

#include "kiln/ops/registry.h"

namespace kiln {

/// The floating-point element types: what most float-only ops accept.
inline constexpr std::initializer_list<DType> kFloatTypes = {DType::F32, DType::F16, DType::BF16,
                                                             DType::F64};

/// Multidirectional (numpy) broadcast of several shapes; error names the node.
Expected<Shape> broadcastShapes(const InferContext& ctx, const std::vector<Shape>& shapes);
/// Broadcast of static dims (for evaluation); nullopt if incompatible.
std::optional<std::vector<int64_t>> broadcastDims(const std::vector<std::vector<int64_t>>& dims);
/// Normalizes a possibly negative axis against rank; error if out of [-rank, rank).
Expected<int64_t> normalizeAxis(const InferContext& ctx, int64_t axis, int64_t rank);
/// Normalizes a list of axes; error on duplicates or out of range.
Expected<std::vector<int64_t>> normalizeAxes(const InferContext& ctx,
                                             const std::vector<int64_t>& axes, int64_t rank);
/// Row-major strides of dims.
std::vector<int64_t> stridesOf(const std::vector<int64_t>& dims);
/// Strides for reading `from` broadcast to `to` (0 on broadcast dims, right-aligned).
std::vector<int64_t> broadcastStrides(const std::vector<int64_t>& from,
                                      const std::vector<int64_t>& to);
/// Product of a dim range [begin, end) or nullopt if unknown.
std::optional<int64_t> staticProduct(const Shape& s, size_t begin, size_t end);
/// One axis of a Slice after ONNX's clamping: first element read and element count.
struct SliceRange {
  int64_t start = 0, count = 0;
};
/// Clamps a Slice's start/end on an axis of d elements (step != 0), as ONNX specifies.
SliceRange clampSlice(int64_t d, int64_t start, int64_t end, int64_t step);
/// One output type with the given dtype and shape.
inline std::vector<TensorType> single(DType t, Shape s) {
  return {TensorType{t, std::move(s)}};
}
/// A dim from arithmetic on another dim: static stays static, otherwise unknown.
inline Dim dimOrUnknown(std::optional<int64_t> v) {
  return v && *v >= 0 ? Dim::known(*v) : Dim::unknown();
}

}  // namespace kiln

namespace kiln {

/// Output dims and per-operand strides for a broadcasting loop, with adjacent dims merged
/// where every operand either broadcasts both or reads both contiguously (fewer loop levels).
struct BroadcastLoop {
  std::vector<int64_t> dims;
  std::vector<std::vector<int64_t>> strides;  ///< one per operand, 0 on broadcast dims
};
BroadcastLoop collapseBroadcast(const std::vector<int64_t>& outDims,
                                const std::vector<std::vector<int64_t>>& operandDims);

}  // namespace kiln

namespace kiln {

/// Fails unless input i's dtype is one of `allowed`, naming the input by its ONNX role:
/// "input 0 (X) is i64, but Conv accepts f32, f16, bf16, f64".
Status requireDType(const InferContext& ctx, size_t i, std::string_view role,
                    std::initializer_list<DType> allowed);
/// Fails naming the first of inputs [0, count) that is omitted (all are required).
Status requirePresent(const InferContext& ctx, size_t count);

/// Kernel, strides, dilations and padding of a sliding-window op (Conv, pooling) over its
/// spatial dims, read from the ONNX attributes with their defaults applied.
struct WindowGeometry {
  std::vector<int64_t> kernel;  ///< -1 where the size is not known at compile time
  std::vector<int64_t> strides;
  std::vector<int64_t> dilations;
  std::vector<int64_t> pads;  ///< explicit pads: all begins, then all ends
  std::string autoPad = "NOTSET";
  bool ceilMode = false;
};
/// Reads strides, dilations (all 1 unless `useDilations`), pads, auto_pad and (when
/// `useCeilMode`) ceil_mode for kernel.size() spatial dims; errors name the bad attribute.
Expected<WindowGeometry> readWindowGeometry(const InferContext& ctx, std::vector<int64_t> kernel,
                                            bool useDilations, bool useCeilMode);
/// Output extents of the window sliding over `input` (the spatial dims only), per the ONNX
/// Conv/pool formulas: explicit pads, SAME_UPPER/SAME_LOWER (ceil(in/stride)), VALID, and
/// ceil_mode where a last window starting past the input and its left padding is dropped.
/// A symbolic input dim carries through when the window maps it onto itself.
Expected<std::vector<Dim>> slidingWindowDims(const InferContext& ctx, const WindowGeometry& g,
                                             const std::vector<Dim>& input);
/// "7x7" / "3x?" rendering of spatial sizes for messages (negative: "?").
std::string formatExtents(const std::vector<int64_t>& v);

}  // namespace kiln
