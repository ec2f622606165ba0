// The .kiln file: a serialized Model whose weights can be memory-mapped in place.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "kiln/ir/graph.h"
#include "kiln/support/status.h"

namespace kiln {

/// The first 8 bytes of every .kiln file. The CR-LF and ^Z bytes catch text-mode mangling.
inline constexpr std::string_view kKilnMagic{"KILN\r\n\x1a\n", 8};
/// The newest .kiln format version this kiln writes and reads; older versions stay readable.
inline constexpr uint32_t kKilnFormatVersion = 1;

/// Options for writeKilnFile.
struct KilnWriteOptions {
  /// Tensors with more bytes than this are written to `<stem>.safetensors` beside the .kiln
  /// file instead of its weights section (int4/uint4 and string tensors always stay inside,
  /// since safetensors has no such dtypes). The default keeps every tensor inside.
  uint64_t externalWeightsAbove = UINT64_MAX;
};

/// Writes `model` to `path` (and, if some tensor is external, `<stem>.safetensors` beside
/// it). Files are written under a temporary name and renamed, so a reader that has the old
/// file mapped keeps seeing consistent bytes.
Status writeKilnFile(const Model& model, const std::string& path,
                     const KilnWriteOptions& options = {});

/// Reads a .kiln file. Tensor data is not copied: initializers and tensor attributes view
/// the memory-mapped file (and its safetensors companion), which stays mapped as long as
/// any of those tensors lives. A graph with more than `maxNodes` nodes (subgraphs included)
/// is refused before the rest of it is built.
Expected<Model> readKilnFile(const std::string& path, int64_t maxNodes = kDefaultMaxNodes);

/// True when `firstBytes` starts with kKilnMagic (pass at least 8 bytes).
bool looksLikeKilnFile(std::string_view firstBytes);

}  // namespace kiln
