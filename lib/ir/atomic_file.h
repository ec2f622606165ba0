// Writes a file under a temporary name and renames it into place when complete.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include "kiln/support/status.h"

namespace kiln::kilnfmt {

/// A file being written. Readers that have the old file mapped keep their bytes (the rename
/// replaces the directory entry, not the inode), and a failed write leaves no partial file.
class AtomicFileWriter {
 public:
  explicit AtomicFileWriter(std::string path);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  void write(const void* data, size_t size);
  /// Writes `fill` bytes until the file is `offset` bytes long.
  void padTo(uint64_t offset, char fill = '\0');
  uint64_t position() const { return pos_; }
  /// Flushes, syncs and renames the file into place; reports any earlier write failure.
  Status commit();

 private:
  std::string path_, tmp_;
  std::FILE* file_ = nullptr;
  uint64_t pos_ = 0;
  int errno_ = 0;
  bool committed_ = false;
};

}  // namespace kiln::kilnfmt
