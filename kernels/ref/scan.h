// kiln reference kernels: one slice of a sequence tensor in or out of a Scan or Loop body.
#pragma once

#include <cstdint>
#include <cstring>

// A sequence tensor is viewed as [outer, len, inner] where `len` is the scanned axis, `outer`
// the product of the dims before it and `inner_bytes` the bytes of one element times the
// product of the dims after it. A slice is the [outer, inner] tensor at one position of the
// axis. The caller (generated code) guarantees 0 <= index < len.

namespace kiln_ref {

/// Copies slice `index` of seq ([outer, len, inner_bytes]) into slice ([outer, inner_bytes]).
inline void scan_slice_read(const void* seq, void* slice, int64_t outer, int64_t len,
                            int64_t inner_bytes, int64_t index) {
  if (inner_bytes <= 0) return;
  const unsigned char* s = static_cast<const unsigned char*>(seq);
  unsigned char* d = static_cast<unsigned char*>(slice);
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(d + o * inner_bytes, s + (o * len + index) * inner_bytes, size_t(inner_bytes));
}

/// Copies slice ([outer, inner_bytes]) into slice `index` of seq ([outer, len, inner_bytes]).
inline void scan_slice_write(const void* slice, void* seq, int64_t outer, int64_t len,
                             int64_t inner_bytes, int64_t index) {
  if (inner_bytes <= 0) return;
  const unsigned char* s = static_cast<const unsigned char*>(slice);
  unsigned char* d = static_cast<unsigned char*>(seq);
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(d + (o * len + index) * inner_bytes, s + o * inner_bytes, size_t(inner_bytes));
}

}  // namespace kiln_ref
