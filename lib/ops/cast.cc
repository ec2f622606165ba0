// Cast and CastLike: dtype conversion with ONNX semantics, and the numeric stores they share.
#include <cmath>
#include <cstring>

#include "dim_math.h"
#include "family_registration.h"
#include "tensor_copy.h"

namespace kiln {
namespace {

// float → IEEE half, round to nearest even; NaN stays NaN, overflow becomes infinity.
uint16_t floatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint16_t sign = uint16_t((x >> 16) & 0x8000);
  uint32_t a = x & 0x7fffffff;
  if (a >= 0x7f800000) return sign | 0x7c00 | (a > 0x7f800000 ? 0x200 : 0);
  if (a >= 0x477ff000) return sign | 0x7c00;  // at or above 65520 rounds to infinity
  if (a < 0x38800000) {                       // below 2^-14: a half subnormal (or zero)
    float m;
    std::memcpy(&m, &a, 4);
    return sign | uint16_t(std::nearbyint(m * 16777216.0f));  // units of 2^-24, RNE
  }
  uint32_t h = ((((a >> 23) - 127 + 15)) << 10) | ((a & 0x7fffff) >> 13);
  uint32_t rest = a & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) ++h;  // a carry into the exponent is right
  return uint16_t(sign | h);
}

// float → bfloat16, round to nearest even; NaN stays a quiet NaN.
uint16_t floatToBFloat16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffff) > 0x7f800000) return uint16_t((x >> 16) | 0x40);
  x += 0x7fff + ((x >> 16) & 1);
  return uint16_t(x >> 16);
}

// Truncates toward zero; values outside int64 (and NaN) have no defined result in ONNX, so
// pick a deterministic one instead of invoking undefined behaviour.
int64_t truncToInt64(double d) {
  if (std::isnan(d)) return 0;
  if (d >= 9223372036854775807.0) return INT64_MAX;
  if (d <= -9223372036854775808.0) return INT64_MIN;
  return int64_t(d);
}

template <typename T>
void put(uint8_t* data, int64_t i, T v) {
  std::memcpy(data + i * int64_t(sizeof(T)), &v, sizeof(T));
}

struct CastOp {
  static constexpr std::string_view kName = "Cast";
  static OpSchema schema() {
    return {1, 1, 1, 1, {{"to", AttrKind::String, true}, {"saturate", AttrKind::Int}}};
  }
  static Expected<std::vector<TensorType>> inferTypes(const InferContext& ctx) {
    KILN_ASSIGN_OR_RETURN(DType to, dtypeAttr(ctx, "to", DType::Undefined));
    return single(to, ctx.in(0).shape);
  }
  static Expected<std::vector<Tensor>> evaluate(const EvalContext& ctx) {
    KILN_RETURN_IF_ERROR(requireInputs(ctx, 1));
    auto to = parseDType(ctx.node().attrString("to", ""));
    if (!to || *to == DType::Undefined) return ctx.error("attribute 'to' is not a dtype name");
    KILN_ASSIGN_OR_RETURN(Tensor out, castTensor(ctx.in(0), *to));
    return std::vector<Tensor>{std::move(out)};
  }
};

struct CastLikeOp {
  static constexpr std::string_view kName = "CastLike";
  static OpSchema schema() { return {2, 2, 1, 1, {{"saturate", AttrKind::Int}}}; }
  static Expected<std::vector<TensorType>> inferTypes(const InferContext& ctx) {
    return single(ctx.in(1).dtype, ctx.in(0).shape);
  }
  static Expected<std::vector<Tensor>> evaluate(const EvalContext& ctx) {
    KILN_RETURN_IF_ERROR(requireInputs(ctx, 2));
    KILN_ASSIGN_OR_RETURN(Tensor out, castTensor(ctx.in(0), ctx.in(1).dtype()));
    return std::vector<Tensor>{std::move(out)};
  }
};

}  // namespace

void storeInt(DType t, uint8_t* data, int64_t i, int64_t v) {
  switch (t) {
    case DType::I8:
      put(data, i, int8_t(v));
      break;
    case DType::U8:
      put(data, i, uint8_t(v));
      break;
    case DType::I16:
      put(data, i, int16_t(v));
      break;
    case DType::U16:
      put(data, i, uint16_t(v));
      break;
    case DType::I32:
      put(data, i, int32_t(v));
      break;
    case DType::U32:
      put(data, i, uint32_t(v));
      break;
    case DType::I64:
      put(data, i, v);
      break;
    case DType::U64:
      put(data, i, uint64_t(v));
      break;
    case DType::Bool:
      data[i] = v != 0;
      break;
    case DType::I4:
    case DType::U4: {
      uint8_t& b = data[i / 2];
      int shift = int(i % 2) * 4;
      b = uint8_t((b & ~(0xf << shift)) | ((uint8_t(v) & 0xf) << shift));
      break;
    }
    default:
      storeDouble(t, data, i, double(v));
      break;
  }
}

void storeDouble(DType t, uint8_t* data, int64_t i, double v) {
  switch (t) {
    case DType::F32:
      put(data, i, float(v));
      break;
    case DType::F64:
      put(data, i, v);
      break;
    case DType::F16:
      put(data, i, floatToHalf(float(v)));
      break;
    case DType::BF16:
      put(data, i, floatToBFloat16(float(v)));
      break;
    case DType::Bool:
      data[i] = v != 0 || std::isnan(v);
      break;
    case DType::U64:
      if (v >= 9223372036854775808.0 && v < 18446744073709551616.0) {
        put(data, i, uint64_t(v));
        break;
      }
      [[fallthrough]];
    default:
      if (isInteger(t)) storeInt(t, data, i, truncToInt64(v));
      break;
  }
}

Expected<Tensor> castTensor(const Tensor& src, DType to) {
  if (src.dtype() == to) return src;
  if (src.dtype() == DType::String || to == DType::String)
    return makeError("Cast between {} and {} is not evaluated at compile time",
                     dtypeName(src.dtype()), dtypeName(to));
  if (to == DType::Undefined || src.dtype() == DType::Undefined)
    return makeError("Cast involves an undefined dtype");
  KILN_ASSIGN_OR_RETURN(Tensor out, allocateResult(to, src.dims()));
  uint8_t* o = out.mutableBytes();
  const DType from = src.dtype();
  for (int64_t i = 0; i < src.numElements(); ++i) {
    if (isFloat(from)) {
      storeDouble(to, o, i, src.doubleAt(i));
    } else if (from == DType::U64) {
      uint64_t u = uint64_t(src.intAt(i));
      if (isFloat(to))
        storeDouble(to, o, i, double(u));
      else
        storeInt(to, o, i, int64_t(u));
    } else {
      int64_t v = src.intAt(i);
      if (isFloat(to))
        storeDouble(to, o, i, double(v));
      else
        storeInt(to, o, i, v);
    }
  }
  return out;
}

void registerCastOps(OpRegistry& r) {
  r.add<CastOp>();
  r.add<CastLikeOp>();
}

}  // namespace kiln
