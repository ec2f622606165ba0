// kiln's textual IR: a readable, deterministic rendering of a Model that parses back exactly.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "kiln/ir/graph.h"
#include "kiln/support/status.h"

namespace kiln {

/// Controls how tensor data is rendered. The syntax is described in docs/ir.md.
struct PrintOptions {
  /// Tensors whose data is larger than this many bytes print as
  /// `<elided N bytes sha256:...>` instead of their data. Such text is for reading only:
  /// parseModel rejects it. The default prints every byte.
  uint64_t elideDataAbove = UINT64_MAX;
  /// Tensors with at most this many elements print as a list of values (`[1.0, 2.5]`);
  /// larger ones print their raw little-endian bytes as `hex"..."`.
  uint64_t maxListElements = 64;
};

/// Renders a model (metadata block and main graph). Deterministic: the same model always
/// gives the same text, and parseModel(printModel(m)) prints back byte-identically.
std::string printModel(const Model& model, const PrintOptions& options = {});

/// Renders one graph (with its nested subgraphs) as `graph @name(...) { ... }`.
std::string printGraph(const Graph& graph, const PrintOptions& options = {});

/// Parses textual IR. `sourceName` prefixes error messages ("model.kir:12:7: expected ...").
/// The text may omit the `model { ... }` block; the metadata is then left default.
/// More than `maxNodes` nodes (subgraphs included) is an error.
Expected<Model> parseModel(std::string_view text, const std::string& sourceName,
                           int64_t maxNodes = kDefaultMaxNodes);

}  // namespace kiln
