// ONNX frontend: ModelProto → kiln IR. The only code that sees ONNX's protobuf classes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "kiln/ir/graph.h"
#include "kiln/support/status.h"

namespace kiln {

/// Limits on untrusted models (see docs/limits.md).
struct OnnxImportOptions {
  uint64_t maxModelBytes = uint64_t(4) << 30;    ///< protobuf file size
  uint64_t maxTensorBytes = uint64_t(16) << 30;  ///< one initializer / external tensor
  int maxSubgraphDepth = 64;                     ///< nested If/Loop/Scan bodies
  int64_t maxRank = 64;
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

}  // namespace kiln
