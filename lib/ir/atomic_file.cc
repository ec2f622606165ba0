// Temporary-file-and-rename writing for .kiln and safetensors files.
#include "atomic_file.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace kiln::kilnfmt {

AtomicFileWriter::AtomicFileWriter(std::string path)
    : path_(std::move(path)), tmp_(path_ + ".tmp." + std::to_string(::getpid())) {
  file_ = std::fopen(tmp_.c_str(), "wb");
  if (!file_) errno_ = errno;
}

AtomicFileWriter::~AtomicFileWriter() {
  if (file_) std::fclose(file_);
  if (!committed_) std::remove(tmp_.c_str());
}

void AtomicFileWriter::write(const void* data, size_t size) {
  pos_ += size;  // even after a failure, so padTo always terminates
  if (!file_ || errno_ || size == 0) return;
  if (std::fwrite(data, 1, size, file_) != size) errno_ = errno ? errno : EIO;
}

void AtomicFileWriter::padTo(uint64_t offset, char fill) {
  char buf[4096];
  std::memset(buf, fill, sizeof buf);
  while (pos_ < offset) write(buf, size_t(std::min<uint64_t>(sizeof buf, offset - pos_)));
}

Status AtomicFileWriter::commit() {
  if (!file_) return makeError("{}: cannot create file: {}", tmp_, std::strerror(errno_));
  if (!errno_ && std::fflush(file_) != 0) errno_ = errno;
  if (!errno_ && ::fsync(::fileno(file_)) != 0) errno_ = errno;
  if (std::fclose(file_) != 0 && !errno_) errno_ = errno;
  file_ = nullptr;
  if (errno_) return makeError("{}: write failed: {}", path_, std::strerror(errno_));
  if (std::rename(tmp_.c_str(), path_.c_str()) != 0)
    return makeError("{}: cannot move the written file into place: {}", path_,
                     std::strerror(errno));
  committed_ = true;
  return Status();
}

}  // namespace kiln::kilnfmt
