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
          return ctx.error("cannot broadcast shapes {} (dim {} is {} vs {})", all, off + i, o.value,
                           d.value);
        }
        continue;
      }
      if (d == o) continue;
      // One side static (>1) wins over symbolic; two different symbols stay unknown.
      if (d.isStatic())
        o = d;
      else if (!o.isStatic())
        o = Dim::unknown();
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
      if (out[off + i] == 1)
        out[off + i] = d[i];
      else if (out[off + i] != d[i])
        return std::nullopt;
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

namespace kiln {

BroadcastLoop collapseBroadcast(const std::vector<int64_t>& outDims,
                                const std::vector<std::vector<int64_t>>& operandDims) {
  const size_t rank = outDims.size();
  const size_t n = operandDims.size();
  // Right-align each operand's dims to the output rank.
  std::vector<std::vector<int64_t>> aligned(n, std::vector<int64_t>(rank, 1));
  for (size_t k = 0; k < n; ++k) {
    size_t off = rank - operandDims[k].size();
    for (size_t i = 0; i < operandDims[k].size(); ++i) aligned[k][off + i] = operandDims[k][i];
  }
  BroadcastLoop loop;
  std::vector<std::vector<int64_t>> mergedIn(n);
  for (size_t d = 0; d < rank; ++d) {
    if (outDims[d] == 1) continue;  // size-1 dims never advance
    bool merge = !loop.dims.empty();
    for (size_t k = 0; k < n && merge; ++k) {
      bool prevBroadcast = mergedIn[k].back() == 1 && loop.dims.back() != 1;
      bool curBroadcast = aligned[k][d] == 1;
      if (prevBroadcast != curBroadcast) merge = false;
    }
    if (merge) {
      loop.dims.back() *= outDims[d];
      for (size_t k = 0; k < n; ++k) mergedIn[k].back() *= aligned[k][d];
    } else {
      loop.dims.push_back(outDims[d]);
      for (size_t k = 0; k < n; ++k) mergedIn[k].push_back(aligned[k][d]);
    }
  }
  if (loop.dims.empty()) {
    loop.dims.push_back(1);
    for (size_t k = 0; k < n; ++k) mergedIn[k].push_back(1);
  }
  for (size_t k = 0; k < n; ++k) loop.strides.push_back(broadcastStrides(mergedIn[k], loop.dims));
  return loop;
}

}  // namespace kiln

#include "kiln/support/checked_math.h"

namespace kiln {

Status requireDType(const InferContext& ctx, size_t i, std::string_view role,
                    std::initializer_list<DType> allowed) {
  if (!ctx.has(i)) return ctx.error("input {} ({}) is required but omitted", i, role);
  DType t = ctx.in(i).dtype;
  for (DType a : allowed)
    if (a == t) return Status();
  std::string names;
  for (DType a : allowed) names += (names.empty() ? "" : ", ") + std::string(dtypeName(a));
  return ctx.error("input {} ({}) is {}, but {} accepts {}", i, role, dtypeName(t),
                   ctx.node().opType(), names);
}

Status requirePresent(const InferContext& ctx, size_t count) {
  for (size_t i = 0; i < count; ++i)
    if (!ctx.has(i)) return ctx.error("input {} is required but omitted", i);
  return Status();
}

std::string formatExtents(const std::vector<int64_t>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? "x" : "") + (v[i] < 0 ? std::string("?") : std::to_string(v[i]));
  return s;
}

Expected<WindowGeometry> readWindowGeometry(const InferContext& ctx, std::vector<int64_t> kernel,
                                            bool useDilations, bool useCeilMode) {
  const Node& n = ctx.node();
  const size_t k = kernel.size();
  WindowGeometry g;
  auto readList = [&](const char* name, int64_t dflt, size_t count,
                      std::vector<int64_t>& out) -> Status {
    out = n.attrInts(name, std::vector<int64_t>(count, dflt));
    if (out.size() != count)
      return ctx.error("attribute '{}' has {} values, expected {} for {} spatial dims", name,
                       out.size(), count, k);
    return Status();
  };
  for (int64_t v : kernel)
    if (v == 0 || v < -1) return ctx.error("kernel size {} must be positive", v);
  g.kernel = std::move(kernel);
  KILN_RETURN_IF_ERROR(readList("strides", 1, k, g.strides));
  for (int64_t s : g.strides)
    if (s <= 0) return ctx.error("attribute 'strides' has {}; strides must be positive", s);
  if (useDilations) {
    KILN_RETURN_IF_ERROR(readList("dilations", 1, k, g.dilations));
    for (int64_t d : g.dilations)
      if (d <= 0) return ctx.error("attribute 'dilations' has {}; dilations must be positive", d);
  } else {
    g.dilations.assign(k, 1);
  }
  KILN_RETURN_IF_ERROR(readList("pads", 0, 2 * k, g.pads));
  for (int64_t p : g.pads)
    if (p < 0) return ctx.error("attribute 'pads' has {}; pads must not be negative", p);
  for (size_t i = 0; i < k; ++i)  // later sums of begin and end pads cannot overflow
    if (!checkedAdd(g.pads[i], g.pads[i + k])) return ctx.error("attribute 'pads' overflows");
  g.autoPad = n.attrString("auto_pad", "NOTSET");
  if (g.autoPad != "NOTSET" && g.autoPad != "SAME_UPPER" && g.autoPad != "SAME_LOWER" &&
      g.autoPad != "VALID")
    return ctx.error("attribute 'auto_pad' is '{}'; use NOTSET, SAME_UPPER, SAME_LOWER or VALID",
                     g.autoPad);
  if (g.autoPad != "NOTSET")
    for (int64_t p : g.pads)
      if (p != 0)
        return ctx.error("attribute 'pads' cannot be combined with auto_pad={}; drop one of them",
                         g.autoPad);
  if (useCeilMode) {
    int64_t c = n.attrInt("ceil_mode", 0);
    if (c != 0 && c != 1) return ctx.error("attribute 'ceil_mode' is {}; use 0 or 1", c);
    g.ceilMode = c == 1;
  }
  return g;
}

Expected<std::vector<Dim>> slidingWindowDims(const InferContext& ctx, const WindowGeometry& g,
                                             const std::vector<Dim>& input) {
  const size_t k = g.kernel.size();
  if (input.size() != k)
    return ctx.error("input has {} spatial dims but the kernel has {}", input.size(), k);
  std::vector<Dim> out;
  for (size_t i = 0; i < k; ++i) {
    const int64_t s = g.strides[i];
    if (g.kernel[i] < 0) {
      out.push_back(g.autoPad.starts_with("SAME") && s == 1 ? input[i] : Dim::unknown());
      continue;
    }
    auto span = checkedMul(g.kernel[i] - 1, g.dilations[i]);
    if (!span || !checkedAdd(*span, 1)) return ctx.error("dilated kernel size overflows");
    const int64_t keff = *span + 1;
    const bool same = g.autoPad == "SAME_UPPER" || g.autoPad == "SAME_LOWER";
    const int64_t padTotal = g.autoPad == "NOTSET" ? g.pads[i] + g.pads[i + k] : 0;
    if (!input[i].isStatic()) {
      // The window maps a dim onto itself only with stride 1 and exactly enough padding.
      bool identity = s == 1 && (same || padTotal == keff - 1);
      out.push_back(identity ? input[i] : Dim::unknown());
      continue;
    }
    const int64_t in = input[i].value;
    if (same) {
      out.push_back(Dim::known(in / s + (in % s != 0)));
      continue;
    }
    auto padded = checkedAdd(in, padTotal);
    if (!padded) return ctx.error("padded input size overflows");
    if (*padded < keff) {
      std::vector<int64_t> ins, effs;
      for (size_t j = 0; j < k; ++j) ins.push_back(input[j].isStatic() ? input[j].value : -1);
      for (size_t j = 0; j < k; ++j) {
        auto e = g.kernel[j] < 0 ? std::nullopt : checkedMul(g.kernel[j] - 1, g.dilations[j]);
        effs.push_back(e && checkedAdd(*e, 1) ? *e + 1 : -1);
      }
      return ctx.error("kernel {}{} with pads [{}] does not fit input {}", formatExtents(g.kernel),
                       effs == g.kernel ? "" : " (dilated " + formatExtents(effs) + ")",
                       fmt::join(g.pads, ","), formatExtents(ins));
    }
    int64_t steps = (*padded - keff) / s;
    if (g.ceilMode && (*padded - keff) % s != 0) {
      ++steps;
      // A window may not start in the right padding (it would see no input at all).
      if (steps * s >= in + g.pads[i]) --steps;
    }
    out.push_back(Dim::known(steps + 1));
  }
  return out;
}

SliceRange clampSlice(int64_t d, int64_t start, int64_t end, int64_t step) {
  if (start < 0) start += d;
  if (end < 0) end += d;
  if (step > 0) {
    start = std::clamp(start, int64_t(0), d);
    end = std::clamp(end, int64_t(0), d);
    return {start, end > start ? (end - start - 1) / step + 1 : 0};
  }
  if (d == 0) return {0, 0};
  start = std::clamp(start, int64_t(0), d - 1);
  end = std::clamp(end, int64_t(-1), d - 1);
  uint64_t stepAbs = uint64_t(0) - uint64_t(step);
  return {start, start > end ? int64_t(uint64_t(start - end - 1) / stepAbs) + 1 : 0};
}

}  // namespace kiln
