// Shape queries and rendering.
#include "kiln/ir/shape.h"

#include "kiln/support/checked_math.h"

namespace kiln {

Shape Shape::ofStatic(const std::vector<int64_t>& dims) {
  std::vector<Dim> d;
  d.reserve(dims.size());
  for (int64_t v : dims) d.push_back(Dim::known(v));
  return Shape(std::move(d));
}

bool Shape::isStatic() const {
  if (!rankKnown_) return false;
  for (const auto& d : dims_)
    if (!d.isStatic()) return false;
  return true;
}

std::vector<int64_t> Shape::staticDims() const {
  std::vector<int64_t> out;
  out.reserve(dims_.size());
  for (const auto& d : dims_) out.push_back(d.value);
  return out;
}

std::optional<int64_t> Shape::numElements() const {
  if (!isStatic()) return std::nullopt;
  auto dims = staticDims();
  return checkedProduct(dims);
}

bool Shape::hasDataDependentDims() const {
  if (!rankKnown_) return false;
  bool any = false;
  for (const auto& d : dims_) {
    if (d.isBounded())
      any = true;
    else if (!d.isStatic())
      return false;
  }
  return any;
}

std::vector<int64_t> Shape::upperBoundDims() const {
  std::vector<int64_t> out;
  out.reserve(dims_.size());
  for (const auto& d : dims_) out.push_back(d.upperBound());
  return out;
}

std::optional<int64_t> Shape::upperBoundElements() const {
  if (!isBoundedOrStatic()) return std::nullopt;
  return checkedProduct(upperBoundDims());
}

std::string toString(const Shape& s) {
  if (!s.rankKnown()) return "[*]";
  std::string out = "[";
  for (size_t i = 0; i < s.dims().size(); ++i) {
    if (i) out += ",";
    const Dim& d = s.dims()[i];
    if (d.isStatic())
      out += std::to_string(d.value);
    else if (d.isSymbolic())
      out += d.symbol;
    else if (d.isBounded())
      out += "<=" + std::to_string(d.bound);
    else
      out += "?";
  }
  return out + "]";
}

std::string toString(const TensorType& t) {
  return std::string(dtypeName(t.dtype)) + toString(t.shape);
}

}  // namespace kiln
