// Dim arithmetic and compile-time-known inputs for the shape, tensor and control-flow ops.
#pragma once

#include <optional>
#include <span>
#include <vector>

#include "kiln/ops/registry.h"

namespace kiln {

/// The elements of input i as integers when its value is known at compile time.
std::optional<std::vector<int64_t>> knownInts(const InferContext& ctx, size_t i);
/// The single element of input i when known (a scalar or a one-element tensor).
std::optional<int64_t> knownScalar(const InferContext& ctx, size_t i);
/// The number of elements of a 1-D (or scalar: 1) input when its shape is static.
std::optional<int64_t> staticLength(const TensorType& t);

/// Product of dims: static when all are static (or one is 0); the single non-static dim when
/// the others multiply to 1; otherwise unknown. Overflow gives unknown.
Dim dimProduct(std::span<const Dim> dims);
/// d * k for a static factor k: symbolic d survives k == 1, k == 0 gives 0.
Dim dimTimes(const Dim& d, int64_t k);
/// Two dims that must be equal (Concat's non-axis dims): the static or shared one wins.
/// Returns nullopt when both are static and differ.
std::optional<Dim> unifyDim(const Dim& a, const Dim& b);
/// Two possible values of one dim (If branches, loop iterations): equal stays, else unknown.
Dim joinDim(const Dim& a, const Dim& b);
/// Join of two shapes: differing ranks give unknown rank.
Shape joinShape(const Shape& a, const Shape& b);
/// A shape of known rank with every dim unknown.
Shape unknownDims(int64_t rank);

/// Requires input i to be an integer tensor (index, shape, axes inputs).
Status requireIntegerInput(const InferContext& ctx, size_t i, const char* what);
/// Parses a string attribute holding a kiln dtype name ("f32"); `dflt` when absent.
Expected<DType> dtypeAttr(const InferContext& ctx, const char* name, DType dflt);

}  // namespace kiln
