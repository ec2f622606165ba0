// safetensors files for weights kept beside a .kiln file (external weights).
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/ir/tensor.h"
#include "kiln/support/file.h"
#include "kiln/support/status.h"

namespace kiln::kilnfmt {

/// The safetensors dtype name ("F32", "BF16", "BOOL", ...), or "" when safetensors has none
/// (int4, uint4, string).
std::string_view safetensorsDType(DType d);

struct SafetensorsEntry {
  std::string key;
  Tensor tensor;
};

/// Writes `entries` to `path` as safetensors: an 8-byte little-endian header length N, N
/// bytes of JSON padded with spaces so the data starts 64-byte aligned, then the data.
/// The format forbids gaps between tensors, so tensors whose size is a multiple of 64 come
/// first (each stays 64-byte aligned), then the rest by decreasing element size (each stays
/// aligned to its element). Returns the SHA-256 of the first 8 + N bytes, which the .kiln
/// file records to detect a companion that was replaced.
Expected<std::string> writeSafetensors(const std::string& path,
                                       const std::vector<SafetensorsEntry>& entries,
                                       const std::map<std::string, std::string>& metadata);

/// A mapped safetensors file whose tensors are handed out as views.
class SafetensorsReader {
 public:
  static Expected<SafetensorsReader> open(const std::string& path);
  /// SHA-256 of the length prefix and JSON header.
  const std::string& headerSha256() const { return headerSha256_; }
  /// The tensor `key`, which must have the given dtype and dims; no copy is made.
  Expected<Tensor> tensor(const std::string& key, DType dtype,
                          const std::vector<int64_t>& dims) const;

 private:
  std::shared_ptr<MappedFile> file_;
  uint64_t dataStart_ = 0;
  nlohmann::json header_;
  std::string headerSha256_;
};

}  // namespace kiln::kilnfmt
