// Calls a generic lambda with a value of the C++ type that stores a dtype's elements, or with
// the kernels' element type (kernels/ref/cast.h) for evaluation through the ref kernels.
#pragma once

#include <cstdint>

#include "kiln/ir/dtype.h"
#include "ref/cast.h"

namespace kiln {

/// body(T{}) for the numeric dtypes kernels compute on (not f16/bf16/4-bit/string);
/// returns onOther() for the rest.
template <typename Body, typename Other>
auto dispatchNumeric(DType t, Body body, Other onOther) {
  switch (t) {
    case DType::F32:
      return body(float{});
    case DType::F64:
      return body(double{});
    case DType::I8:
      return body(int8_t{});
    case DType::I16:
      return body(int16_t{});
    case DType::I32:
      return body(int32_t{});
    case DType::I64:
      return body(int64_t{});
    case DType::U8:
      return body(uint8_t{});
    case DType::U16:
      return body(uint16_t{});
    case DType::U32:
      return body(uint32_t{});
    case DType::U64:
      return body(uint64_t{});
    case DType::Bool:
      return body(bool{});
    default:
      return onOther();
  }
}

/// body(E{}) with the ref kernels' element type E of every dtype they compute on: those of
/// dispatchNumeric plus kiln_ref::f16_tag and kiln_ref::bf16_tag (tensors of E are stored as
/// kiln_ref::storage_t<E>); returns onOther() for the rest (4-bit, string).
template <typename Body, typename Other>
auto dispatchKernelElem(DType t, Body body, Other onOther) {
  switch (t) {
    case DType::F16:
      return body(kiln_ref::f16_tag{});
    case DType::BF16:
      return body(kiln_ref::bf16_tag{});
    default:
      return dispatchNumeric(t, body, onOther);
  }
}

}  // namespace kiln
