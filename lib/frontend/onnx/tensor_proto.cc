// ONNX TensorProto and declared value types → kiln Tensor and TensorType.
#include <fmt/ranges.h>
#include <google/protobuf/io/coded_stream.h>

#include <bit>
#include <climits>
#include <cstring>

#include "kiln/support/checked_math.h"
#include "onnx_import.h"

namespace kiln::onnx_import {

// raw_data and external data are little-endian; kiln stores tensors the same way.
static_assert(std::endian::native == std::endian::little, "kiln assumes a little-endian host");

namespace {

struct OnnxTypeInfo {
  int32_t code;
  std::string_view name;
  DType dtype;  ///< Undefined: kiln has no such type
};

// TensorProto.DataType numbers, including the ones added after ONNX 1.12 (17..23).
constexpr OnnxTypeInfo kOnnxTypes[] = {
    {0, "UNDEFINED", DType::Undefined},
    {1, "FLOAT", DType::F32},
    {2, "UINT8", DType::U8},
    {3, "INT8", DType::I8},
    {4, "UINT16", DType::U16},
    {5, "INT16", DType::I16},
    {6, "INT32", DType::I32},
    {7, "INT64", DType::I64},
    {8, "STRING", DType::String},
    {9, "BOOL", DType::Bool},
    {10, "FLOAT16", DType::F16},
    {11, "DOUBLE", DType::F64},
    {12, "UINT32", DType::U32},
    {13, "UINT64", DType::U64},
    {14, "COMPLEX64", DType::Undefined},
    {15, "COMPLEX128", DType::Undefined},
    {16, "BFLOAT16", DType::BF16},
    {17, "FLOAT8E4M3FN", DType::Undefined},
    {18, "FLOAT8E4M3FNUZ", DType::Undefined},
    {19, "FLOAT8E5M2", DType::Undefined},
    {20, "FLOAT8E5M2FNUZ", DType::Undefined},
    {21, "UINT4", DType::U4},
    {22, "INT4", DType::I4},
    {23, "FLOAT4E2M1", DType::Undefined},
};

std::string dimsString(const std::vector<int64_t>& dims) {
  return fmt::format("[{}]", fmt::join(dims, ","));
}

// The bytes of `count` values produced by `get(i)` as type Dst.
template <typename Dst, typename Get>
std::vector<uint8_t> packValues(int64_t count, Get get) {
  std::vector<uint8_t> bytes(size_t(count) * sizeof(Dst));
  for (int64_t i = 0; i < count; ++i) {
    Dst v = get(i);
    std::memcpy(bytes.data() + size_t(i) * sizeof(Dst), &v, sizeof(Dst));
  }
  return bytes;
}

// Values stored in the typed *_data fields, following onnx.proto's packing rules.
Expected<Tensor> typedTensor(const onnx::TensorProto& t, DType dt, std::vector<int64_t> dims,
                             int64_t n, ImportContext& ctx, std::string_view what) {
  std::string_view field;
  int64_t have = 0, need = n;
  switch (dt) {
    case DType::F32:
      field = "float_data", have = t.float_data_size();
      break;
    case DType::F64:
      field = "double_data", have = t.double_data_size();
      break;
    case DType::I64:
      field = "int64_data", have = t.int64_data_size();
      break;
    case DType::U32:
    case DType::U64:
      field = "uint64_data", have = t.uint64_data_size();
      break;
    case DType::String:
      field = "string_data", have = t.string_data_size();
      break;
    case DType::I4:
    case DType::U4:  // two 4-bit values per int32_data entry, low nibble first
      field = "int32_data", have = t.int32_data_size(), need = n / 2 + n % 2;
      break;
    default:
      field = "int32_data", have = t.int32_data_size();
      break;
  }
  if (have != need)
    return ctx.fail(fmt::format("{}: has {} values in {} but its type {}{} needs {}", what, have,
                                field, dtypeName(dt), dimsString(dims), need),
                    "the tensor is corrupt; re-export the model");
  std::vector<uint8_t> bytes;
  switch (dt) {
    case DType::String: {
      std::vector<std::string> values(t.string_data().begin(), t.string_data().end());
      auto r = Tensor::fromStrings(std::move(dims), std::move(values));
      if (!r) return ctx.fail(fmt::format("{}: {}", what, r.message()));
      return r;
    }
    case DType::F32:
      bytes = packValues<float>(n, [&](int64_t i) { return t.float_data(int(i)); });
      break;
    case DType::F64:
      bytes = packValues<double>(n, [&](int64_t i) { return t.double_data(int(i)); });
      break;
    case DType::I64:
      bytes = packValues<int64_t>(n, [&](int64_t i) { return t.int64_data(int(i)); });
      break;
    case DType::U64:
      bytes = packValues<uint64_t>(n, [&](int64_t i) { return t.uint64_data(int(i)); });
      break;
    case DType::U32:
      bytes = packValues<uint32_t>(n, [&](int64_t i) { return uint32_t(t.uint64_data(int(i))); });
      break;
    case DType::I32:
      bytes = packValues<int32_t>(n, [&](int64_t i) { return t.int32_data(int(i)); });
      break;
    case DType::I16:
      bytes = packValues<int16_t>(n, [&](int64_t i) { return int16_t(t.int32_data(int(i))); });
      break;
    case DType::U16:
    case DType::F16:  // 16-bit floats travel as their bit patterns
    case DType::BF16:
      bytes = packValues<uint16_t>(n, [&](int64_t i) { return uint16_t(t.int32_data(int(i))); });
      break;
    case DType::I8:
      bytes = packValues<int8_t>(n, [&](int64_t i) { return int8_t(t.int32_data(int(i))); });
      break;
    case DType::U8:
      bytes = packValues<uint8_t>(n, [&](int64_t i) { return uint8_t(t.int32_data(int(i))); });
      break;
    case DType::Bool:
      bytes = packValues<uint8_t>(n, [&](int64_t i) { return uint8_t(t.int32_data(int(i)) != 0); });
      break;
    case DType::I4:
    case DType::U4:
      bytes = packValues<uint8_t>(need, [&](int64_t i) { return uint8_t(t.int32_data(int(i))); });
      if (n % 2) bytes.back() &= 0x0F;  // the unused high nibble of an odd count
      break;
    default:
      return ctx.fail(fmt::format("{}: unsupported data type {}", what, dtypeName(dt)));
  }
  auto r = Tensor::fromBytes(dt, std::move(dims), bytes.data(), bytes.size());
  if (!r) return ctx.fail(fmt::format("{}: {}", what, r.message()));
  return r;
}

// Parses a non-negative decimal external-data field ("offset", "length").
std::optional<uint64_t> parseUnsigned(const std::string& s) {
  if (s.empty() || s.size() > 20) return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    if (__builtin_mul_overflow(v, 10u, &v) || __builtin_add_overflow(v, uint64_t(c - '0'), &v))
      return std::nullopt;
  }
  return v;
}

// A tensor whose bytes live in a file next to the model: a view of the mapped file.
Expected<Tensor> externalTensor(const onnx::TensorProto& t, DType dt, std::vector<int64_t> dims,
                                uint64_t needBytes, ImportContext& ctx, std::string_view what) {
  const char* kTodo = "fix the external data reference or re-save the model with its data";
  if (dt == DType::String)
    return ctx.fail(fmt::format("{}: string tensors cannot use external data", what), kTodo);
  std::optional<std::string> location;
  std::optional<uint64_t> offset, length;
  for (const auto& e : t.external_data()) {
    if (e.key() == "location") {
      location = e.value();
    } else if (e.key() == "offset" || e.key() == "length") {
      auto v = parseUnsigned(e.value());
      if (!v)
        return ctx.fail(fmt::format("{}: external data {} '{}' is not a non-negative integer", what,
                                    e.key(), printableName(e.value())),
                        kTodo);
      (e.key() == "offset" ? offset : length) = *v;
    }
  }
  if (!location) return ctx.fail(fmt::format("{}: external data has no location", what), kTodo);
  KILN_ASSIGN_OR_RETURN(auto file, ctx.mapExternal(*location, what));
  uint64_t size = file->size(), off = offset.value_or(0);
  if (off > size)
    return ctx.fail(fmt::format("{}: external data offset {} is past the end of '{}' ({} bytes)",
                                what, off, printableName(*location), size),
                    kTodo);
  uint64_t len = length.value_or(size - off);
  if (len > size - off)
    return ctx.fail(fmt::format("{}: external data at offset {} length {} runs past the end of "
                                "'{}' ({} bytes)",
                                what, off, len, printableName(*location), size),
                    kTodo);
  if (len != needBytes)
    return ctx.fail(fmt::format("{}: external data is {} bytes but its type {}{} needs {} bytes",
                                what, len, dtypeName(dt), dimsString(dims), needBytes),
                    kTodo);
  // Kernels read elements in place, so a view must be aligned to its element size; a file
  // that packs tensors without alignment gets a copy instead.
  uintptr_t align = uintptr_t(std::max(1, dtypeBits(dt) / 8));
  Expected<Tensor> r =
      (reinterpret_cast<uintptr_t>(file->data() + off) % align == 0)
          ? Tensor::fromMapped(dt, std::move(dims), file, off, len)
          : Tensor::fromBytes(dt, std::move(dims), file->data() + off, size_t(len));
  if (!r) return ctx.fail(fmt::format("{}: {}", what, r.message()), kTodo);
  return r;
}

}  // namespace

std::optional<DType> dtypeFromOnnx(int32_t onnxType) {
  for (const auto& info : kOnnxTypes)
    if (info.code == onnxType && info.dtype != DType::Undefined) return info.dtype;
  return std::nullopt;
}

std::string onnxTypeName(int32_t onnxType) {
  for (const auto& info : kOnnxTypes)
    if (info.code == onnxType) return std::string(info.name);
  return fmt::format("type {}", onnxType);
}

Expected<Tensor> convertTensor(const onnx::TensorProto& t, ImportContext& ctx,
                               std::string_view what) {
  const char* kCorrupt = "the tensor is corrupt; re-export the model";
  if (t.has_segment())
    return ctx.fail(fmt::format("{}: is stored in segments, which kiln does not support", what),
                    "re-save the model without segmented tensors");
  std::optional<DType> dt = dtypeFromOnnx(t.data_type());
  if (!dt)
    return ctx.fail(fmt::format("{}: has data type {}, which kiln does not support", what,
                                onnxTypeName(t.data_type())),
                    "convert the tensor to a supported type before compiling");
  if (t.dims_size() > ctx.options.maxRank)
    return ctx.fail(fmt::format("{}: has rank {}, over the limit of {}", what, t.dims_size(),
                                ctx.options.maxRank),
                    "raise --max-rank if the model is trusted (docs/limits.md)");
  std::vector<int64_t> dims(t.dims().begin(), t.dims().end());
  for (int64_t d : dims)
    if (d < 0) return ctx.fail(fmt::format("{}: has a negative dimension ({})", what, d), kCorrupt);
  std::optional<int64_t> n = checkedProduct(dims);
  if (!n)
    return ctx.fail(
        fmt::format("{}: element count of {} overflows 64 bits", what, dimsString(dims)), kCorrupt);
  std::optional<int64_t> bytes = dtypeStorageBytes(*dt, *n);
  if (!bytes)
    return ctx.fail(fmt::format("{}: byte size of {}{} overflows 64 bits", what, dtypeName(*dt),
                                dimsString(dims)),
                    kCorrupt);
  if (uint64_t(*bytes) > ctx.options.maxTensorBytes)
    return ctx.fail(fmt::format("{}: is {} bytes, over the limit of {} bytes", what, *bytes,
                                ctx.options.maxTensorBytes),
                    "raise --max-tensor-bytes if the model is trusted (docs/limits.md)");
  if (t.data_location() == onnx::TensorProto_DataLocation_EXTERNAL)
    return externalTensor(t, *dt, std::move(dims), uint64_t(*bytes), ctx, what);
  if (t.has_raw_data()) {
    if (*dt == DType::String)
      return ctx.fail(fmt::format("{}: string tensors cannot use raw_data", what), kCorrupt);
    if (t.raw_data().size() != uint64_t(*bytes))
      return ctx.fail(fmt::format("{}: raw_data is {} bytes but its type {}{} needs {} bytes", what,
                                  t.raw_data().size(), dtypeName(*dt), dimsString(dims), *bytes),
                      kCorrupt);
    auto r = Tensor::fromBytes(*dt, std::move(dims), t.raw_data().data(), t.raw_data().size());
    if (!r) return ctx.fail(fmt::format("{}: {}", what, r.message()), kCorrupt);
    return r;
  }
  return typedTensor(t, *dt, std::move(dims), *n, ctx, what);
}

Expected<TensorType> convertValueType(const onnx::ValueInfoProto& v, const ImportContext& ctx,
                                      std::string_view what) {
  const char* kTodo = "kiln compiles tensors only; rewrite the model without it";
  if (!v.has_type()) return TensorType{};
  const onnx::TypeProto& tp = v.type();
  switch (tp.value_case()) {
    case onnx::TypeProto::VALUE_NOT_SET:
      return TensorType{};
    case onnx::TypeProto::kTensorType:
      break;
    case onnx::TypeProto::kSequenceType:
      return ctx.fail(fmt::format("{}: has a sequence type", what), kTodo);
    case onnx::TypeProto::kMapType:
      return ctx.fail(fmt::format("{}: has a map type", what), kTodo);
    case onnx::TypeProto::kOptionalType:
      return ctx.fail(fmt::format("{}: has an optional type", what), kTodo);
    case onnx::TypeProto::kSparseTensorType:
      return ctx.fail(fmt::format("{}: is a sparse tensor", what), kTodo);
    default:
      return ctx.fail(fmt::format("{}: has an opaque type", what), kTodo);
  }
  const auto& tt = tp.tensor_type();
  TensorType out;
  if (tt.elem_type() != 0) {
    std::optional<DType> dt = dtypeFromOnnx(tt.elem_type());
    if (!dt)
      return ctx.fail(fmt::format("{}: has element type {}, which kiln does not support", what,
                                  onnxTypeName(tt.elem_type())),
                      "convert it to a supported type before compiling");
    out.dtype = *dt;
  }
  if (!tt.has_shape()) return out;  // unknown rank
  if (tt.shape().dim_size() > ctx.options.maxRank)
    return ctx.fail(fmt::format("{}: has rank {}, over the limit of {}", what,
                                tt.shape().dim_size(), ctx.options.maxRank),
                    "raise --max-rank if the model is trusted (docs/limits.md)");
  std::vector<Dim> dims;
  for (const auto& d : tt.shape().dim()) {
    if (d.value_case() == onnx::TensorShapeProto_Dimension::kDimValue) {
      if (d.dim_value() < 0)
        return ctx.fail(fmt::format("{}: declares a negative dimension ({})", what, d.dim_value()),
                        "fix the declared shape");
      dims.push_back(Dim::known(d.dim_value()));
    } else if (d.value_case() == onnx::TensorShapeProto_Dimension::kDimParam &&
               !d.dim_param().empty()) {
      dims.push_back(Dim::named(d.dim_param()));
    } else {
      dims.push_back(Dim::unknown());
    }
  }
  out.shape = Shape(std::move(dims));
  return out;
}

}  // namespace kiln::onnx_import

namespace kiln {

Expected<Tensor> readTensorProtoFile(const std::string& path) {
  OnnxImportOptions options;
  KILN_ASSIGN_OR_RETURN(std::string bytes, readFile(path, options.maxModelBytes));
  onnx_import::ImportContext ctx(options, path, /*baseDir=*/"");
  if (bytes.size() > size_t(INT_MAX))
    return ctx.fail("file is over 2 GiB, the protobuf limit", "store the tensor as .npy instead");
  onnx::TensorProto proto;
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data()),
                                            int(bytes.size()));
  in.SetRecursionLimit(16);  // a TensorProto nests only a few messages
  if (!proto.ParseFromCodedStream(&in) || !in.ConsumedEntireMessage())
    return ctx.fail("not a valid serialized onnx.TensorProto (truncated or corrupt)",
                    "check that the file is a TensorProto .pb");
  std::string what = proto.name().empty() ? std::string("tensor")
                                          : fmt::format("tensor '{}'", printableName(proto.name()));
  return onnx_import::convertTensor(proto, ctx, what);
}

}  // namespace kiln
