// libFuzzer target: .npy bytes → parse (the input files of kiln run).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "kiln/support/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)kiln::parseNpy(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
