// ONNX frontend: ModelProto → kiln IR. The only code that sees ONNX's protobuf classes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "kiln/ir/graph.h"
#include "kiln/support/status.h"

namespace kiln {

class OpRegistry;

/// Limits on untrusted models (see docs/limits.md).
struct OnnxImportOptions {
  uint64_t maxModelBytes = uint64_t(4) << 30;    ///< protobuf file size
  uint64_t maxTensorBytes = uint64_t(16) << 30;  ///< one initializer / external tensor
  int maxSubgraphDepth = 64;                     ///< nested If/Loop/Scan bodies
  int64_t maxRank = 64;
  /// Nodes in the model, every subgraph counted (checked before the IR is built).
  int64_t maxNodes = kDefaultMaxNodes;
  /// The ops the importer accepts; null means OpRegistry::builtin().
  const OpRegistry* registry = nullptr;
};

/// Reads an .onnx file (and its external data, which must stay inside the model's folder)
/// into a Model: main graph, initializers (external data memory-mapped, not copied), nodes
/// normalized to kiln's core op forms, metadata with the file's SHA-256.
/// Errors are one line: "model.onnx: node 'n' (Op, domain, opset N): what — what to do".
Expected<Model> importOnnxFile(const std::string& path, const OnnxImportOptions& options = {});

/// Same, from bytes in memory; external data resolves against `baseDir` ("" forbids it).
Expected<Model> importOnnxBytes(std::string_view bytes, const std::string& displayName,
                                const std::string& baseDir, const OnnxImportOptions& options = {});

/// Reads a serialized onnx.TensorProto (.pb, as in the ONNX backend tests).
Expected<Tensor> readTensorProtoFile(const std::string& path);

/// Where a node of a source model sits, for messages.
struct SourceNodeRef {
  std::string file;    ///< the model as the user named it
  std::string node;    ///< node name (raw bytes; escaped when formatted)
  std::string opType;  ///< op type as written in the model
  std::string domain;  ///< "" or "ai.onnx" for the default domain
  int64_t opset = 0;   ///< the opset version imported for the domain (0: none)
};

/// The importer's one-line message format, for reuse by later stages:
/// "model.onnx: node 'n' (Op, ai.onnx, opset 13): <what> — <todo>" (" — <todo>" only when
/// `todo` is non-empty). Names are passed through printableName.
std::string formatNodeMessage(const SourceNodeRef& where, std::string_view what,
                              std::string_view todo = {});

/// Makes untrusted text safe for a one-line message: control characters, quotes, backslashes
/// and bytes that are not UTF-8 become escapes (\n, \', \\, \xNN, \u{NNNN}), and text past
/// `maxBytes` is cut with "...".
std::string printableName(std::string_view text, size_t maxBytes = 200);

}  // namespace kiln
