// Broadcasting and axis arithmetic.
#include "shape_math.h"

#include <algorithm>
#include <set>

namespace kiln {

Expected<Shape> broadcastShapes(const InferContext& ctx, const std::vector<Shape>& shapes) {
  size_t rank = 0;
  for (const Shape& s : shapes) {
    if (!s.rankKnown()) return Shape::unknownRank();
    rank = std::max(rank, s.dims().size());
  }
  std::vector<Dim> out(rank, Dim::known(1));
  for (const Shape& s : shapes) {
    size_t off = rank - s.dims().size();
    for (size_t i = 0; i < s.dims().size(); ++i) {
      const Dim& d = s[i];
      Dim& o = out[off + i];
      if (d.isStatic() && d.value == 1) continue;
      if (o.isStatic() && o.value == 1) {
        o = d;
        continue;
      }
      if (d.isStatic() && o.isStatic()) {
        if (d.value != o.value) {
          std::string all;
          for (const Shape& x : shapes) all += (all.empty() ? "" : " and ") + toString(x);
          return ctx.error("cannot broadcast shapes {} (dim {} is {} vs {})", all, off + i,
                           o.value, d.value);
        }
        continue;
      }
      if (d == o) continue;
      // One side static (>1) wins over symbolic; two different symbols stay unknown.
      if (d.isStatic()) o = d;
      else if (!o.isStatic()) o = Dim::unknown();
    }
  }
  return Shape(std::move(out));
}

std::optional<std::vector<int64_t>> broadcastDims(const std::vector<std::vector<int64_t>>& dims) {
  size_t rank = 0;
  for (const auto& d : dims) rank = std::max(rank, d.size());
  std::vector<int64_t> out(rank, 1);
  for (const auto& d : dims) {
    size_t off = rank - d.size();
    for (size_t i = 0; i < d.size(); ++i) {
      if (d[i] == 1) continue;
      if (out[off + i] == 1) out[off + i] = d[i];
      else if (out[off + i] != d[i]) return std::nullopt;
    }
  }
  return out;
}

Expected<int64_t> normalizeAxis(const InferContext& ctx, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    return ctx.error("axis {} is out of range for rank {}", axis, rank);
  return axis < 0 ? axis + rank : axis;
}

Expected<std::vector<int64_t>> normalizeAxes(const InferContext& ctx,
                                             const std::vector<int64_t>& axes, int64_t rank) {
  std::vector<int64_t> out;
  std::set<int64_t> seen;
  for (int64_t a : axes) {
    KILN_ASSIGN_OR_RETURN(int64_t n, normalizeAxis(ctx, a, rank));
    if (!seen.insert(n).second) return ctx.error("axis {} is repeated", a);
    out.push_back(n);
  }
  return out;
}

std::vector<int64_t> stridesOf(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) s[i - 1] = s[i] * dims[i];
  return s;
}

std::vector<int64_t> broadcastStrides(const std::vector<int64_t>& from,
                                      const std::vector<int64_t>& to) {
  std::vector<int64_t> s(to.size(), 0);
  auto fs = stridesOf(from);
  size_t off = to.size() - from.size();
  for (size_t i = 0; i < from.size(); ++i) s[off + i] = from[i] == 1 ? 0 : fs[i];
  return s;
}

std::optional<int64_t> staticProduct(const Shape& s, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i) {
    if (!s[i].isStatic()) return std::nullopt;
    if (__builtin_mul_overflow(p, s[i].value, &p)) return std::nullopt;
  }
  return p;
}

}  // namespace kiln
