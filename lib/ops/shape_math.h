// Shape arithmetic shared by op definitions: broadcasting, axes, dims from attributes.
#pragma once

#include <optional>
#include <vector>

#include "kiln/ops/registry.h"

namespace kiln {

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
/// One output type with the given dtype and shape.
inline std::vector<TensorType> single(DType t, Shape s) {
  return {TensorType{t, std::move(s)}};
}
/// A dim from arithmetic on another dim: static stays static, otherwise unknown.
inline Dim dimOrUnknown(std::optional<int64_t> v) {
  return v && *v >= 0 ? Dim::known(*v) : Dim::unknown();
}

}  // namespace kiln
