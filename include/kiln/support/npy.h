// Reading and writing NumPy .npy files (format versions 1.0, 2.0 and 3.0), for test data.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/support/status.h"

namespace kiln {

/// An array read from, or to be written to, a .npy file. Data is C-order, little-endian.
struct NpyArray {
  std::string descr;           ///< NumPy type string, e.g. "<f4", "|u1", "|b1"
  bool fortranOrder = false;   ///< always false for arrays kiln reads (Fortran order is refused)
  std::vector<int64_t> shape;  ///< empty for a 0-d (scalar) array
  std::string data;            ///< exactly product(shape) * itemsize bytes
};

/// Bytes per element of a supported type string: little-endian ('<', or '|' / '<' / '>' for
/// one-byte types) f2 f4 f8 i1 i2 i4 i8 u1 u2 u4 u8 b1. Fails naming the type otherwise.
Expected<int64_t> npyItemSize(std::string_view descr);

/// Parses a whole .npy file held in memory. The bytes are untrusted: any malformed, truncated
/// or unsupported input (big-endian, object or structured dtypes, Fortran order) is an error.
Expected<NpyArray> parseNpy(std::string_view bytes);

/// Reads and parses a .npy file; messages start with the path.
Expected<NpyArray> readNpyFile(const std::string& path);

/// Encodes a C-order array as NumPy itself does: version 1.0 (2.0 only if the header would not
/// fit), header padded with spaces so the data starts at a multiple of 64 bytes. The caller
/// passes a supported descr and bytes == product(shape) * itemsize; writeNpyFile checks both.
std::string encodeNpy(std::string_view descr, const std::vector<int64_t>& shape, const void* data,
                      size_t bytes);

/// Checks that descr is supported and the size matches the shape, then writes a .npy file.
Status writeNpyFile(const std::string& path, std::string_view descr,
                    const std::vector<int64_t>& shape, const void* data, size_t bytes);

/// Writes `array` (which must not be Fortran-ordered) as a .npy file.
Status writeNpyFile(const std::string& path, const NpyArray& array);

}  // namespace kiln
