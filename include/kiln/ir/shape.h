// Tensor shapes: static dims, named symbolic dims, unknown dims, and unknown rank.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kiln/ir/dtype.h"

namespace kiln {

/// One dimension: a known size, a named symbol ("batch"), a data-dependent size with a
/// compile-time upper bound (NonZero's count: at most numel), or unknown.
struct Dim {
  int64_t value = -1;  ///< >= 0 when static
  std::string symbol;  ///< non-empty when symbolic
  int64_t bound = -1;  ///< >= 0 when data-dependent with this upper bound (value < 0)

  static Dim known(int64_t v) { return Dim{v, {}}; }
  static Dim named(std::string s) { return Dim{-1, std::move(s)}; }
  static Dim unknown() { return Dim{}; }
  /// A size decided by the data at run time, never above `maxSize` (see docs/dynamic-shapes.md).
  static Dim bounded(int64_t maxSize) { return Dim{-1, {}, maxSize < 0 ? 0 : maxSize}; }
  bool isStatic() const { return value >= 0; }
  bool isSymbolic() const { return value < 0 && !symbol.empty(); }
  bool isBounded() const { return value < 0 && symbol.empty() && bound >= 0; }
  /// The static size, or the bound of a data-dependent dim; -1 when neither is known.
  int64_t upperBound() const { return isStatic() ? value : isBounded() ? bound : -1; }
  bool operator==(const Dim&) const = default;
};

/// A shape whose rank may itself be unknown (before inference).
class Shape {
 public:
  Shape() = default;  ///< unknown rank
  explicit Shape(std::vector<Dim> dims) : rankKnown_(true), dims_(std::move(dims)) {}
  static Shape ofStatic(const std::vector<int64_t>& dims);
  static Shape unknownRank() { return Shape(); }
  static Shape scalar() { return Shape(std::vector<Dim>{}); }

  bool rankKnown() const { return rankKnown_; }
  int64_t rank() const { return rankKnown_ ? int64_t(dims_.size()) : -1; }
  const std::vector<Dim>& dims() const { return dims_; }
  std::vector<Dim>& dims() { return dims_; }
  const Dim& operator[](size_t i) const { return dims_[i]; }
  /// True when the rank and every dim are known.
  bool isStatic() const;
  /// The dims as integers; only valid when isStatic().
  std::vector<int64_t> staticDims() const;
  /// Element count, or nullopt if not static or the product overflows int64.
  std::optional<int64_t> numElements() const;
  /// True when the rank is known, every dim is static or bounded, and at least one is bounded.
  bool hasDataDependentDims() const;
  /// Every dim static or bounded: the storage a buffer of this shape needs is known.
  bool isBoundedOrStatic() const { return isStatic() || hasDataDependentDims(); }
  /// Dims with bounded ones at their bound (valid when isBoundedOrStatic()).
  std::vector<int64_t> upperBoundDims() const;
  /// Element count at the bounds, or nullopt when some dim has no bound or it overflows.
  std::optional<int64_t> upperBoundElements() const;
  bool operator==(const Shape&) const = default;

 private:
  bool rankKnown_ = false;
  std::vector<Dim> dims_;
};

/// Element type plus shape: the type of a Value.
struct TensorType {
  DType dtype = DType::Undefined;
  Shape shape;
  bool operator==(const TensorType&) const = default;
};

/// "f32[1,3,?,W]" style rendering used in messages and the textual IR.
std::string toString(const Shape& s);
std::string toString(const TensorType& t);

}  // namespace kiln
