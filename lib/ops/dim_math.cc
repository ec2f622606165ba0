// Dim arithmetic and compile-time-known inputs for the shape, tensor and control-flow ops.
#include "dim_math.h"

#include "kiln/support/checked_math.h"

namespace kiln {

std::optional<std::vector<int64_t>> knownInts(const InferContext& ctx, size_t i) {
  const Tensor* t = ctx.value(i);
  if (!t || t->dtype() == DType::String) return std::nullopt;
  return t->toInts();
}

std::optional<int64_t> knownScalar(const InferContext& ctx, size_t i) {
  const Tensor* t = ctx.value(i);
  if (!t || t->dtype() == DType::String || t->numElements() != 1) return std::nullopt;
  return t->intAt(0);
}

std::optional<int64_t> staticLength(const TensorType& t) {
  if (!t.shape.rankKnown()) return std::nullopt;
  if (t.shape.rank() == 0) return 1;
  if (t.shape.rank() != 1 || !t.shape[0].isStatic()) return std::nullopt;
  return t.shape[0].value;
}

Dim dimProduct(std::span<const Dim> dims) {
  int64_t product = 1;
  const Dim* dynamic = nullptr;
  int numDynamic = 0;
  for (const Dim& d : dims) {
    if (d.isStatic()) {
      if (d.value == 0) return Dim::known(0);
      auto p = checkedMul(product, d.value);
      if (!p) return Dim::unknown();
      product = *p;
    } else {
      dynamic = &d;
      ++numDynamic;
    }
  }
  if (numDynamic == 0) return Dim::known(product);
  if (numDynamic == 1 && product == 1) return *dynamic;
  return Dim::unknown();
}

Dim dimTimes(const Dim& d, int64_t k) {
  if (k == 0) return Dim::known(0);
  if (k == 1) return d;
  if (!d.isStatic()) return Dim::unknown();
  auto p = checkedMul(d.value, k);
  return p ? Dim::known(*p) : Dim::unknown();
}

std::optional<Dim> unifyDim(const Dim& a, const Dim& b) {
  if (a.isStatic() && b.isStatic()) {
    if (a.value != b.value) return std::nullopt;
    return a;
  }
  if (a.isStatic()) return a;
  if (b.isStatic()) return b;
  if (a.isSymbolic()) return a;
  return b;
}

Dim joinDim(const Dim& a, const Dim& b) {
  return a == b ? a : Dim::unknown();
}

Shape joinShape(const Shape& a, const Shape& b) {
  if (!a.rankKnown() || !b.rankKnown() || a.rank() != b.rank()) return Shape::unknownRank();
  std::vector<Dim> dims;
  for (size_t i = 0; i < a.dims().size(); ++i) dims.push_back(joinDim(a[i], b[i]));
  return Shape(std::move(dims));
}

Shape unknownDims(int64_t rank) {
  return Shape(std::vector<Dim>(size_t(rank < 0 ? 0 : rank), Dim::unknown()));
}

Status requireIntegerInput(const InferContext& ctx, size_t i, const char* what) {
  if (ctx.has(i) && !isInteger(ctx.in(i).dtype))
    return ctx.error("input {} ({}) must be an integer tensor, got {}", i, what,
                     dtypeName(ctx.in(i).dtype));
  return Status();
}

Expected<DType> dtypeAttr(const InferContext& ctx, const char* name, DType dflt) {
  const Attribute* a = ctx.node().attr(name);
  if (!a) return dflt;
  if (a->kind() != AttrKind::String)
    return ctx.error("attribute '{}' must be a dtype name string such as \"f32\"", name);
  auto t = parseDType(a->s());
  if (!t || *t == DType::Undefined)
    return ctx.error("attribute '{}' names an unknown dtype '{}' (expected e.g. f32, i64, bool)",
                     name, a->s());
  return *t;
}

}  // namespace kiln
