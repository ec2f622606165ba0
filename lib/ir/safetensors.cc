// Writing and mapping safetensors files for external weights.
#include "safetensors.h"

#include <fmt/format.h>

#include <algorithm>

#include "atomic_file.h"
#include "kiln/support/checked_math.h"
#include "kiln/support/sha256.h"
#include "text_syntax.h"

namespace kiln::kilnfmt {
namespace {

using nlohmann::json;

// Headers past this are not plausible for any real model (the format's own limit is 100 MB).
constexpr uint64_t kMaxHeaderBytes = 100ull << 20;

}  // namespace

std::string_view safetensorsDType(DType d) {
  switch (d) {
    case DType::F32:
      return "F32";
    case DType::F16:
      return "F16";
    case DType::BF16:
      return "BF16";
    case DType::F64:
      return "F64";
    case DType::I8:
      return "I8";
    case DType::U8:
      return "U8";
    case DType::I16:
      return "I16";
    case DType::U16:
      return "U16";
    case DType::I32:
      return "I32";
    case DType::U32:
      return "U32";
    case DType::I64:
      return "I64";
    case DType::U64:
      return "U64";
    case DType::Bool:
      return "BOOL";
    default:
      return "";
  }
}

Expected<std::string> writeSafetensors(const std::string& path,
                                       const std::vector<SafetensorsEntry>& entries,
                                       const std::map<std::string, std::string>& metadata) {
  std::vector<size_t> order(entries.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  auto rank = [&](size_t i) {
    const Tensor& t = entries[i].tensor;
    return std::pair<bool, int>(t.byteSize() % 64 != 0, -dtypeBits(t.dtype()));
  };
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return rank(a) < rank(b); });
  json header = json::object();
  uint64_t offset = 0;
  for (size_t i : order) {
    const SafetensorsEntry& e = entries[i];
    if (safetensorsDType(e.tensor.dtype()).empty())
      return makeError("{}: safetensors cannot hold {} tensor '{}'", path,
                       dtypeName(e.tensor.dtype()), e.key);
    uint64_t end = offset + e.tensor.byteSize();
    header[e.key] = {{"dtype", safetensorsDType(e.tensor.dtype())},
                     {"shape", e.tensor.dims()},
                     {"data_offsets", {offset, end}}};
    offset = end;
  }
  header["__metadata__"] = metadata;
  std::string text = header.dump();
  text.append((64 - (8 + text.size()) % 64) % 64, ' ');
  uint8_t len[8];
  for (int i = 0; i < 8; ++i) len[i] = uint8_t(uint64_t(text.size()) >> (8 * i));
  Sha256 sha;
  sha.update(len, 8);
  sha.update(text.data(), text.size());
  AtomicFileWriter out(path);
  out.write(len, 8);
  out.write(text.data(), text.size());
  for (size_t i : order) out.write(entries[i].tensor.bytes(), entries[i].tensor.byteSize());
  KILN_RETURN_IF_ERROR(out.commit());
  return sha.hexDigest();
}

Expected<SafetensorsReader> SafetensorsReader::open(const std::string& path) {
  SafetensorsReader r;
  KILN_ASSIGN_OR_RETURN(r.file_, MappedFile::open(path));
  const uint8_t* p = r.file_->data();
  uint64_t size = r.file_->size();
  if (size < 8) return makeError("{}: truncated safetensors file ({} bytes)", path, size);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = n << 8 | p[i];
  if (n > size - 8 || n > kMaxHeaderBytes)
    return makeError(
        "{}: truncated or corrupted safetensors file: header length {} does not fit "
        "the file ({} bytes)",
        path, n, size);
  r.header_ = json::parse(p + 8, p + 8 + n, nullptr, false);
  if (r.header_.is_discarded() || !r.header_.is_object())
    return makeError("{}: corrupted safetensors file: the header is not a JSON object", path);
  r.dataStart_ = 8 + n;
  r.headerSha256_ = sha256Hex(std::string_view(reinterpret_cast<const char*>(p), 8 + n));
  return r;
}

Expected<Tensor> SafetensorsReader::tensor(const std::string& key, DType dtype,
                                           const std::vector<int64_t>& dims) const {
  const std::string& path = file_->path();
  std::string name = textir::quoteForMessage(key);
  auto it = header_.find(key);
  if (it == header_.end() || key == "__metadata__")
    return makeError("{}: no tensor {} (the .kiln file expects it here)", path, name);
  const json& e = *it;
  try {
    if (e.at("dtype").get<std::string>() != safetensorsDType(dtype) ||
        e.at("shape").get<std::vector<int64_t>>() != dims)
      return makeError("{}: tensor {} is {}{} but the .kiln file expects {}{}", path, name,
                       e.at("dtype").get<std::string>(), e.at("shape").dump(),
                       safetensorsDType(dtype), json(dims).dump());
    uint64_t begin = e.at("data_offsets").at(0).get<uint64_t>();
    uint64_t end = e.at("data_offsets").at(1).get<uint64_t>();
    uint64_t dataSize = file_->size() - dataStart_;
    if (begin > end || end > dataSize)
      return makeError(
          "{}: truncated or corrupted: tensor {} at data bytes {}..{} lies outside "
          "the {} data bytes",
          path, name, begin, end, dataSize);
    return Tensor::fromMapped(dtype, dims, file_, dataStart_ + begin, end - begin);
  } catch (const json::exception&) {
    return makeError("{}: corrupted safetensors header entry for tensor {}", path, name);
  }
}

}  // namespace kiln::kilnfmt
