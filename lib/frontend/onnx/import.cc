// ONNX import entry points: parsing with limits, model metadata and opsets.
#include <google/protobuf/io/coded_stream.h>

#include <algorithm>
#include <climits>
#include <exception>
#include <filesystem>
#include <new>

#include "kiln/support/sha256.h"
#include "onnx_import.h"

namespace kiln::onnx_import {

ImportContext::ImportContext(const OnnxImportOptions& opts, std::string fileName, std::string base)
    : options(opts),
      registry(opts.registry ? *opts.registry : OpRegistry::builtin()),
      file(std::move(fileName)),
      baseDir(std::move(base)) {}

Error ImportContext::fail(std::string_view what, std::string_view todo) const {
  std::string msg = fmt::format("{}: {}", printableName(file), what);
  if (!todo.empty()) msg += fmt::format(" \u2014 {}", todo);
  return Error(std::move(msg));
}

std::string ImportContext::freshName(const Graph& g, const std::string& base) {
  for (;;) {
    std::string name = g.uniqueName(base);
    if (reservedNames.insert(name).second) return name;
  }
}

int64_t ImportContext::opsetFor(const std::string& domain) const {
  auto it = opsets.find(domain == "ai.onnx" ? std::string() : domain);
  return it == opsets.end() ? 0 : it->second;
}

namespace {

Status readOpsets(const onnx::ModelProto& m, ImportContext& ctx, ModelMetadata& meta) {
  for (const auto& o : m.opset_import()) {
    meta.opsets.push_back(OpsetImport{o.domain(), o.version()});
    std::string domain = o.domain() == "ai.onnx" ? std::string() : o.domain();
    auto [it, inserted] = ctx.opsets.emplace(domain, o.version());
    if (!inserted && it->second != o.version())
      return ctx.fail(
          fmt::format("imports domain '{}' twice, at opsets {} and {}",
                      printableName(domain.empty() ? "ai.onnx" : domain), it->second, o.version()),
          "keep one opset_import entry per domain");
  }
  ctx.defaultOpset = ctx.opsetFor("");
  if (ctx.opsets.count("") && (ctx.defaultOpset < kMinOpset || ctx.defaultOpset > kMaxOpset)) {
    // Name the first node so the message says which op the unsupported opset affects.
    std::string first;
    if (m.graph().node_size() > 0)
      first = fmt::format(
          "node '{}' ({}, ai.onnx, opset {}): ", printableName(m.graph().node(0).name()),
          printableName(m.graph().node(0).op_type()), ctx.defaultOpset);
    return ctx.fail(fmt::format("{}unsupported opset: the model imports ai.onnx opset {}; kiln "
                                "supports opsets {} to {}",
                                first, ctx.defaultOpset, kMinOpset, kMaxOpset),
                    "convert the model with onnx.version_converter.convert_version(model, 17)");
  }
  for (const auto& f : m.functions())
    if (!ctx.functions.emplace(std::make_pair(f.domain(), f.name()), &f).second)
      return ctx.fail(fmt::format("defines function '{}' (domain '{}') twice",
                                  printableName(f.name()), printableName(f.domain())),
                      "fix the model");
  return Status();
}

void readMetadata(const onnx::ModelProto& m, ModelMetadata& meta) {
  meta.producerName = m.producer_name();
  meta.producerVersion = m.producer_version();
  meta.domain = m.domain();
  meta.docString = m.doc_string();
  meta.irVersion = m.ir_version();
  meta.modelVersion = m.model_version();
  for (const auto& p : m.metadata_props()) meta.props.emplace_back(p.key(), p.value());
  meta.sourceFormat = "onnx";
  meta.kilnVersion = KILN_VERSION;
}

Expected<Model> importModel(std::string_view bytes, const std::string& displayName,
                            const std::string& baseDir, const OnnxImportOptions& options) {
  ImportContext ctx(options, displayName, baseDir);
  if (bytes.size() > options.maxModelBytes)
    return ctx.fail(fmt::format("model is {} bytes, over the limit of {} bytes", bytes.size(),
                                options.maxModelBytes),
                    "raise --max-model-bytes if the model is trusted (docs/limits.md)");
  if (bytes.size() > size_t(INT_MAX))
    return ctx.fail("model is over 2 GiB, the protobuf size limit",
                    "save the weights as external data (onnx.save_model(..., "
                    "save_as_external_data=True))");
  if (countNodesOnWire(bytes, options.maxNodes, options.maxSubgraphDepth) > options.maxNodes)
    return tooManyNodes(ctx);
  onnx::ModelProto proto;
  {
    google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data()),
                                              int(bytes.size()));
    // Each subgraph level nests three messages (Graph → Node → Attribute); leave room for
    // types and tensors, and bound the parser's recursion on hostile input.
    int depth = std::clamp(options.maxSubgraphDepth, 0, 1000);
    in.SetRecursionLimit(3 * depth + 32);
    if (!proto.ParseFromCodedStream(&in) || !in.ConsumedEntireMessage())
      return ctx.fail(
          fmt::format("is not a valid ONNX model (the protobuf is truncated, corrupt, or nests "
                      "subgraphs more than {} deep)",
                      depth),
          "check that the file is an .onnx ModelProto and was copied completely; for a trusted "
          "model with deeper subgraphs raise --max-nesting (docs/limits.md)");
  }
  if (!proto.has_graph())
    return ctx.fail("is not an ONNX model: it has no graph",
                    "check that the file is an .onnx model");
  Model model;
  readMetadata(proto, model.meta);
  model.meta.sourceSha256 = sha256Hex(bytes);
  KILN_RETURN_IF_ERROR(readOpsets(proto, ctx, model.meta));
  KILN_RETURN_IF_ERROR(collectNames(proto.graph(), ctx, 0));
  model.graph->setName(proto.graph().name().empty() ? "main" : proto.graph().name());
  KILN_RETURN_IF_ERROR(buildGraph(*proto.mutable_graph(), *model.graph, ctx, nullptr, 0));
  return model;
}

}  // namespace
}  // namespace kiln::onnx_import

namespace kiln {

Expected<Model> importOnnxBytes(std::string_view bytes, const std::string& displayName,
                                const std::string& baseDir, const OnnxImportOptions& options) {
  // Nothing below throws on bad input; this only turns allocation failure into an error.
  try {
    return onnx_import::importModel(bytes, displayName, baseDir, options);
  } catch (const std::bad_alloc&) {
    return makeError("{}: out of memory while importing the model", printableName(displayName));
  } catch (const std::exception& e) {
    return makeError("{}: import failed: {}", printableName(displayName),
                     onnx_import::printableMessage(e.what()));
  }
}

Expected<Model> importOnnxFile(const std::string& path, const OnnxImportOptions& options) {
  auto file = MappedFile::open(path);
  if (!file) return Error(onnx_import::printableMessage(file.message()));
  std::string baseDir = std::filesystem::path(path).parent_path().string();
  if (baseDir.empty()) baseDir = ".";
  std::string_view bytes(reinterpret_cast<const char*>((*file)->data()), (*file)->size());
  return importOnnxBytes(bytes, path, baseDir, options);
}

}  // namespace kiln
