// Cast and CastLike: dtype conversion with ONNX semantics, evaluated by the kernel the
// generated code calls (kernels/ref/cast.h).

#include "dim_math.h"
#include "dtype_dispatch.h"
#include "family_registration.h"
#include "tensor_copy.h"

namespace kiln {
namespace {

bool isNibble(DType t) {
  return t == DType::I4 || t == DType::U4;
}

// 4-bit tensors go through the kernels as int8/uint8: unpacked before, packed (low bits, as
// integer narrowing does) after.
DType byteTypeOf(DType t) {
  return t == DType::I4 ? DType::I8 : t == DType::U4 ? DType::U8 : t;
}

Expected<Tensor> unpackNibbles(const Tensor& src) {
  KILN_ASSIGN_OR_RETURN(Tensor out, allocateResult(byteTypeOf(src.dtype()), src.dims()));
  uint8_t* o = out.mutableBytes();
  for (int64_t i = 0; i < src.numElements(); ++i) o[i] = uint8_t(src.intAt(i));
  return out;
}

Expected<Tensor> packNibbles(const Tensor& bytes, DType to) {
  KILN_ASSIGN_OR_RETURN(Tensor out, allocateResult(to, bytes.dims()));
  uint8_t* o = out.mutableBytes();
  const uint8_t* in = bytes.bytes();
  for (int64_t i = 0; i < bytes.numElements(); ++i) {
    uint8_t& b = o[i / 2];
    const int shift = int(i % 2) * 4;
    b = uint8_t((b & ~(0xf << shift)) | ((in[i] & 0xf) << shift));
  }
  return out;
}

// round_mode "truncate": casts to bfloat16 round toward zero, as ONNX's reference did before
// opset 19 (the importer sets it); "nearest_even" (the default) is opset 19's rounding.
bool truncatesBf16(const Node& n) {
  return n.attrString("round_mode", "nearest_even") == "truncate";
}

Status checkRoundMode(const InferContext& ctx) {
  std::string mode = ctx.node().attrString("round_mode", "nearest_even");
  if (mode != "nearest_even" && mode != "truncate")
    return ctx.error("attribute 'round_mode' is '{}'; use 'nearest_even' or 'truncate'", mode);
  return Status();
}

struct CastOp {
  static constexpr std::string_view kName = "Cast";
  static OpSchema schema() {
    return {1,
            1,
            1,
            1,
            {{"to", AttrKind::String, true},
             {"saturate", AttrKind::Int},
             {"round_mode", AttrKind::String}}};
  }
  static Expected<std::vector<TensorType>> inferTypes(const InferContext& ctx) {
    KILN_RETURN_IF_ERROR(checkRoundMode(ctx));
    KILN_ASSIGN_OR_RETURN(DType to, dtypeAttr(ctx, "to", DType::Undefined));
    return single(to, ctx.in(0).shape);
  }
  static Expected<std::vector<Tensor>> evaluate(const EvalContext& ctx) {
    KILN_RETURN_IF_ERROR(requireInputs(ctx, 1));
    auto to = parseDType(ctx.node().attrString("to", ""));
    if (!to || *to == DType::Undefined) return ctx.error("attribute 'to' is not a dtype name");
    KILN_ASSIGN_OR_RETURN(Tensor out, castTensor(ctx.in(0), *to, truncatesBf16(ctx.node())));
    return std::vector<Tensor>{std::move(out)};
  }
};

struct CastLikeOp {
  static constexpr std::string_view kName = "CastLike";
  static OpSchema schema() {
    return {2, 2, 1, 1, {{"saturate", AttrKind::Int}, {"round_mode", AttrKind::String}}};
  }
  static Expected<std::vector<TensorType>> inferTypes(const InferContext& ctx) {
    KILN_RETURN_IF_ERROR(checkRoundMode(ctx));
    return single(ctx.in(1).dtype, ctx.in(0).shape);
  }
  static Expected<std::vector<Tensor>> evaluate(const EvalContext& ctx) {
    KILN_RETURN_IF_ERROR(requireInputs(ctx, 2));
    KILN_ASSIGN_OR_RETURN(Tensor out,
                          castTensor(ctx.in(0), ctx.in(1).dtype(), truncatesBf16(ctx.node())));
    return std::vector<Tensor>{std::move(out)};
  }
};

}  // namespace

Expected<Tensor> castTensor(const Tensor& src, DType to, bool truncateBf16) {
  if (src.dtype() == to) return src;
  if (src.dtype() == DType::String || to == DType::String)
    return makeError("Cast between {} and {} is not evaluated at compile time",
                     dtypeName(src.dtype()), dtypeName(to));
  if (to == DType::Undefined || src.dtype() == DType::Undefined)
    return makeError("Cast involves an undefined dtype");
  if (isNibble(src.dtype())) {
    KILN_ASSIGN_OR_RETURN(Tensor bytes, unpackNibbles(src));
    return castTensor(bytes, to, truncateBf16);
  }
  if (isNibble(to)) {
    KILN_ASSIGN_OR_RETURN(Tensor bytes, castTensor(src, byteTypeOf(to), truncateBf16));
    return packNibbles(bytes, to);
  }
  KILN_ASSIGN_OR_RETURN(Tensor out, allocateResult(to, src.dims()));
  const int64_t n = src.numElements();
  auto fail = [&] {
    return Status(makeError("Cast from {} to {} is not evaluated at compile time",
                            dtypeName(src.dtype()), dtypeName(to)));
  };
  // The kernel the generated code calls (generate_emit.cc's emitCast).
  KILN_RETURN_IF_ERROR(dispatchKernelElem(
      src.dtype(),
      [&](auto from) -> Status {
        using From = decltype(from);
        const auto* in = src.data<kiln_ref::storage_t<From>>();
        if (truncateBf16 && to == DType::BF16) {
          kiln_ref::cast_bf16_truncate<From>(n, in, out.mutableData<uint16_t>());
          return Status();
        }
        return dispatchKernelElem(
            to,
            [&](auto target) -> Status {
              using To = decltype(target);
              kiln_ref::cast<From, To>(n, in, out.mutableData<kiln_ref::storage_t<To>>());
              return Status();
            },
            fail);
      },
      fail));
  return out;
}

void registerCastOps(OpRegistry& r) {
  r.add<CastOp>();
  r.add<CastLikeOp>();
}

}  // namespace kiln
