// Kernel and runtime headers embedded at build time, written into artifacts.
#pragma once

#include <string_view>
#include <vector>

namespace kiln {

struct EmbeddedFile {
  std::string_view path;  ///< relative path inside the artifact, e.g. "kiln_ref/conv.h"
  std::string_view content;
};

const std::vector<EmbeddedFile>& embeddedFiles();

}  // namespace kiln
