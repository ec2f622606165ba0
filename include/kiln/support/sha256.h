// SHA-256 (FIPS 180-4) for model provenance hashes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace kiln {

/// Incremental SHA-256.
class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t size);
  /// Lower-case hex digest; the object must not be updated afterwards.
  std::string hexDigest();

 private:
  void block(const uint8_t* p);
  uint32_t h_[8];
  uint8_t buf_[64];
  size_t bufLen_ = 0;
  uint64_t totalBytes_ = 0;
};

/// Hex SHA-256 of a byte string.
std::string sha256Hex(std::string_view bytes);

}  // namespace kiln
