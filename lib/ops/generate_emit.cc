// Emit facets for conversion and generator ops (Cast, CastLike, ConstantOfShape, Range,
// EyeLike, Shape, Size): calls of kernels/ref/cast.h and misc.h, or constants.
#include <algorithm>

#include "emit_support.h"

namespace kiln {
namespace {

/// Cast and CastLike: the output's dtype is the target. round_mode "truncate" (Cast before
/// opset 19) makes casts to bf16 round toward zero; evaluate (cast.cc) runs the same kernels.
Status emitCast(const Node& n, EmitContext& ctx) {
  KILN_ASSIGN_OR_RETURN(std::string from, valueKernelType(n, n.input(0), ctx));
  KILN_ASSIGN_OR_RETURN(std::string to, valueKernelType(n, n.output(0), ctx));
  ctx.useHeader("kiln_ref/cast.h");
  if (n.output(0)->dtype() == DType::BF16 && n.input(0)->dtype() != DType::BF16 &&
      n.attrString("round_mode", "nearest_even") == "truncate") {
    ctx.call("kiln_ref::cast_bf16_truncate",
             fmt::format("kiln_ref::cast_bf16_truncate<{}>({}, {}, {});", from,
                         staticNumel(n.output(0)), ctx.input(0), ctx.output(0)));
    return Status();
  }
  ctx.call("kiln_ref::cast", fmt::format("kiln_ref::cast<{}, {}>({}, {}, {});", from, to,
                                         staticNumel(n.output(0)), ctx.input(0), ctx.output(0)));
  return Status();
}

/// `{0x00, 0x00, 0x80, 0x3f}`: the bytes of a tensor's first element.
std::string firstElementBytes(const Tensor& t, int64_t bytes) {
  std::string s = "{";
  for (int64_t i = 0; i < bytes; ++i) s += fmt::format("{}0x{:02x}", i ? ", " : "", t.bytes()[i]);
  return s + "}";
}

Status emitConstantOfShape(const Node& n, EmitContext& ctx) {
  KILN_ASSIGN_OR_RETURN(int64_t es, elementBytes(n, n.output(0), ctx));
  const int64_t count = staticNumel(n.output(0));
  const Attribute* a = n.attr("value");
  bool zero = true;
  if (a) {
    const Tensor& t = a->t();
    if (t.dtype() != n.output(0)->dtype() || t.numElements() != 1 || int64_t(t.byteSize()) < es)
      return ctx.unsupported("ConstantOfShape with a malformed value");
    for (int64_t i = 0; i < es; ++i) zero = zero && t.bytes()[i] == 0;
  }
  if (zero) {
    ctx.call("memset", fmt::format("std::memset({}, 0, {});", ctx.output(0), count * es));
    return Status();
  }
  ctx.useHeader("kiln_ref/misc.h");
  ctx.call("kiln_ref::fill",
           fmt::format("{{ static const unsigned char value[] = {}; kiln_ref::fill({}, {}, value, "
                       "static_cast<void*>({})); }}",
                       firstElementBytes(a->t(), es), count, es, ctx.output(0)));
  return Status();
}

Status emitRange(const Node& n, EmitContext& ctx) {
  KILN_ASSIGN_OR_RETURN(std::string e, valueKernelType(n, n.output(0), ctx));
  DType t = n.output(0)->dtype();
  if (t == DType::Bool || (isInteger(t) && !isSignedInteger(t)))
    return ctx.unsupported(fmt::format("Range on {} tensors", dtypeName(t)));
  for (size_t i = 0; i < 3; ++i)
    if (n.input(i)->dtype() != t || staticNumel(n.input(i)) != 1)
      return ctx.unsupported("Range with non-scalar or mixed-type inputs");
  const int64_t count = staticNumel(n.output(0));
  ctx.useHeader("kiln_ref/misc.h");
  if (n.output(0)->shape()[0].isBounded()) {
    // A --max-dim bound (docs/dynamic-shapes.md): the count is decided at run time.
    std::string slot = ctx.runtimeDim(0, 0);
    if (slot.empty()) return ctx.unsupported("Range with a data-dependent size");
    ctx.call("kiln_ref::range",
             fmt::format("{{ const int64_t c = kiln_ref::range_count<{0}>(*{1}, *{2}, *{3}); if "
                         "(c < 0 || c > {4}) return KILN_ERR_DATA; kiln_ref::range<{0}>(*{1}, "
                         "*{3}, c, {5}); std::memset(static_cast<void*>({5} + c), 0, size_t({4} "
                         "- c) * sizeof(*{5})); {6} = c; }}",
                         e, ctx.input(0), ctx.input(1), ctx.input(2), count, ctx.output(0), slot));
    return Status();
  }
  // The element count was fixed when the code was generated; other inputs are bad data.
  ctx.call("kiln_ref::range_count",
           fmt::format("if (kiln_ref::range_count<{}>(*{}, *{}, *{}) != {}) return KILN_ERR_DATA;",
                       e, ctx.input(0), ctx.input(1), ctx.input(2), count));
  ctx.call("kiln_ref::range", fmt::format("kiln_ref::range<{}>(*{}, *{}, {}, {});", e, ctx.input(0),
                                          ctx.input(2), count, ctx.output(0)));
  return Status();
}

Status emitEyeLike(const Node& n, EmitContext& ctx) {
  KILN_ASSIGN_OR_RETURN(std::string e, valueKernelType(n, n.output(0), ctx));
  auto y = staticDims(n.output(0));
  if (y.size() != 2) return ctx.unsupported("EyeLike of a non-2-D input");
  ctx.useHeader("kiln_ref/misc.h");
  ctx.call("kiln_ref::eye_like",
           fmt::format("kiln_ref::eye_like<{}>({}, {}, {}[0], {});", e, y[0], y[1],
                       ctx.constArray({n.attrInt("k", 0)}), ctx.output(0)));
  return Status();
}

/// Shape and Size depend only on static dims, so they are normally folded; when one is not
/// (its result is a graph output, say), its value is a constant.
Status emitShape(const Node& n, EmitContext& ctx) {
  auto dims = staticDims(n.input(0));
  const int64_t rank = int64_t(dims.size());
  auto clampIdx = [rank](int64_t v) { return std::clamp(v < 0 ? v + rank : v, int64_t(0), rank); };
  int64_t start = clampIdx(n.attrInt("start", 0));
  int64_t end = n.hasAttr("end") ? clampIdx(n.attrInt("end", rank)) : rank;
  std::vector<int64_t> out(dims.begin() + start, dims.begin() + std::max(start, end));
  if (int64_t(out.size()) != staticNumel(n.output(0)))
    return ctx.unsupported("Shape whose output disagrees with its input");
  ctx.call("memcpy", fmt::format("std::memcpy({}, {}, {});", ctx.output(0), ctx.constArray(out),
                                 out.size() * 8));
  return Status();
}

Status emitSize(const Node& n, EmitContext& ctx) {
  ctx.call("store",
           fmt::format("*{} = {}[0];", ctx.output(0), ctx.constArray({staticNumel(n.input(0))})));
  return Status();
}

constexpr EmitterRow kGenerateEmitters[] = {
    {"Cast", emitCast},   {"CastLike", emitCast},   {"ConstantOfShape", emitConstantOfShape},
    {"Range", emitRange}, {"EyeLike", emitEyeLike}, {"Shape", emitShape},
    {"Size", emitSize},
};

}  // namespace

void attachGenerateEmitters(OpRegistry& r) {
  setEmitters(r, kGenerateEmitters);
}

}  // namespace kiln
