// Reading files, and read-only memory maps that constants can view without copying.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "kiln/support/status.h"

namespace kiln {

/// A whole file mapped read-only; unmapped when the last reference goes.
class MappedFile {
 public:
  static Expected<std::shared_ptr<MappedFile>> open(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  MappedFile() = default;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  std::string path_;
};

/// Reads a whole file into a string (error if missing, unreadable, or over maxBytes).
Expected<std::string> readFile(const std::string& path, uint64_t maxBytes = UINT64_MAX);

/// Writes bytes to a file, replacing it.
Status writeFile(const std::string& path, const void* data, size_t size);

}  // namespace kiln
