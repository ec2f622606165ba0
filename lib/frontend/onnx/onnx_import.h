// Internals shared by the ONNX importer's files; only lib/frontend/onnx includes this.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "kiln/frontend/onnx.h"
#include "kiln/ir/graph.h"
#include "kiln/ops/registry.h"
#include "kiln/support/file.h"

namespace kiln::onnx_import {

/// Default-domain opsets kiln imports.
inline constexpr int64_t kMinOpset = 1;
/// Definitions from opsets below this are accepted only op by op (legacy_opset.cc).
inline constexpr int64_t kLegacyOpsetEnd = 7;
inline constexpr int64_t kMaxOpset = 21;
/// Nodes that inlining model-local functions may create in one import: nested calls can
/// multiply (f calls g twice, g calls h twice, ...), so hostile models are cut off here.
inline constexpr int64_t kMaxInlinedNodes = int64_t(1) << 20;

/// Escapes control characters and non-UTF-8 bytes of a whole message (quotes stay), so
/// messages built from other layers' text that embeds raw names stay on one line.
std::string printableMessage(std::string_view text);

/// kiln's dtype for an ONNX TensorProto.DataType number; nullopt when kiln has none.
std::optional<DType> dtypeFromOnnx(int32_t onnxType);
/// The ONNX name of a data type number ("FLOAT8E5M2", "COMPLEX64", "type 99"), for messages.
std::string onnxTypeName(int32_t onnxType);

/// The version of `op`'s definition in force at default-domain `opset` (its since_version),
/// or 0 when the op does not exist at that opset. libonnx knows opsets up to 17; the changes
/// of opsets 18–21 come from kiln's own table.
int64_t onnxSinceVersion(const std::string& op, int64_t opset);

/// State shared by every graph of one model import.
class ImportContext {
 public:
  ImportContext(const OnnxImportOptions& options, std::string file, std::string baseDir);

  const OnnxImportOptions& options;
  const OpRegistry& registry;
  const std::string file;                 ///< the model as the user named it
  const std::string baseDir;              ///< folder external data resolves against; "" forbids it
  int64_t defaultOpset = 0;               ///< 0 when the model imports no ai.onnx opset
  std::map<std::string, int64_t> opsets;  ///< domain → version ("" = ai.onnx)
  /// Model-local functions by (domain, name); they point into the ModelProto being imported.
  std::map<std::pair<std::string, std::string>, const onnx::FunctionProto*> functions;
  /// Function body nodes instantiated so far (bounded by kMaxInlinedNodes).
  int64_t inlinedNodes = 0;
  /// Every value name anywhere in the model: generated names must avoid names not built yet.
  std::unordered_set<std::string> reservedNames;
  /// Names some node reads or some graph lists as an output, anywhere in the model.
  std::unordered_set<std::string> readNames;

  /// "file: what — todo" for problems that are not about one node.
  Error fail(std::string_view what, std::string_view todo = {}) const;
  /// A name unique in `g`, its ancestors and the whole model, derived from `base`.
  std::string freshName(const Graph& g, const std::string& base);
  /// The opset imported for a node's domain ("" and "ai.onnx" are the default domain).
  int64_t opsetFor(const std::string& domain) const;
  /// Maps the external data file `location` (relative to baseDir), checking that it stays
  /// inside the model's folder; one mapping per file. `what` names the tensor for messages.
  Expected<std::shared_ptr<MappedFile>> mapExternal(const std::string& location,
                                                    std::string_view what);

 private:
  std::map<std::string, std::shared_ptr<MappedFile>> mapped_;
  std::string realBaseDir_;
};

/// Converts a TensorProto (any data field, or external data) to a Tensor. `what` names it in
/// messages, e.g. "initializer 'w'" (already printable).
Expected<Tensor> convertTensor(const onnx::TensorProto& t, ImportContext& ctx,
                               std::string_view what);

/// Converts a declared type (graph input/output, value_info). Absent types are unknown.
Expected<TensorType> convertValueType(const onnx::ValueInfoProto& v, const ImportContext& ctx,
                                      std::string_view what);

/// Graph-valued attribute bodies, built after the enclosing graph's values exist.
struct PendingGraphs {
  std::string attr;
  std::vector<onnx::GraphProto*> bodies;
  bool isList = false;
};

/// A node before it enters the graph: value names instead of Value pointers.
struct NodeSpec {
  std::string opType, domain, name, docString;
  std::vector<std::string> inputs;   ///< "" for an omitted optional input
  std::vector<std::string> outputs;  ///< "" for an omitted optional output
  std::map<std::string, Attribute> attrs;
  std::vector<PendingGraphs> graphs;
};

/// Declared types of the values a graph can see (its own and its ancestors'); normalizations
/// use them to create constants of the right type.
class DeclaredTypes {
 public:
  explicit DeclaredTypes(const DeclaredTypes* parent) : parent_(parent) {}
  void add(const std::string& name, TensorType t) { types_[name] = std::move(t); }
  const TensorType* find(const std::string& name) const;

 private:
  const DeclaredTypes* parent_;
  std::unordered_map<std::string, TensorType> types_;
};

/// What a normalization sees while rewriting one node.
class NormalizeContext {
 public:
  NormalizeContext(ImportContext& ctx, Graph& g, const DeclaredTypes& declared, SourceNodeRef where,
                   int64_t since)
      : ctx_(ctx), g_(g), declared_(declared), where_(std::move(where)), since_(since) {}

  /// The since_version of the node's op at the model's opset.
  int64_t since() const { return since_; }
  const SourceNodeRef& where() const { return where_; }
  /// Adds `t` as an initializer named after `base`; returns the new name.
  Expected<std::string> addConstant(const std::string& base, Tensor t);
  /// A fresh value name derived from `base`.
  std::string freshName(const std::string& base) { return ctx_.freshName(g_, base); }
  /// Adds a helper node next to the one being normalized.
  void emit(NodeSpec n) { extra_.push_back(std::move(n)); }
  std::vector<NodeSpec>& emitted() { return extra_; }
  /// The declared type of a value, when the model states one.
  const TensorType* declaredType(const std::string& name) const { return declared_.find(name); }
  /// True when some node or graph output reads `name`.
  bool isRead(const std::string& name) const { return ctx_.readNames.count(name) != 0; }
  /// An error in the node message format.
  Error error(std::string_view what, std::string_view todo) const {
    return Error(formatNodeMessage(where_, what, todo));
  }

 private:
  ImportContext& ctx_;
  Graph& g_;
  const DeclaredTypes& declared_;
  SourceNodeRef where_;
  int64_t since_;
  std::vector<NodeSpec> extra_;
};

/// The core op an ONNX op becomes when normalization renames it (Upsample → Resize), else
/// the op itself.
std::string_view coreOpName(std::string_view onnxOp);

/// Rewrites a default-domain node into kiln's core form (newest-opset semantics). The result
/// holds the rewritten node first, then any helper nodes.
Expected<std::vector<NodeSpec>> normalizeNode(NodeSpec node, NormalizeContext& nctx);

/// Accepts a node whose definition predates opset 7 when it means what the current op means
/// (dropping legacy hints such as consumed_inputs); otherwise a clear error.
Status normalizeLegacyOpset(NodeSpec& n, NormalizeContext& nctx);
/// Scan-8 (batch axis) as a Loop over the batch around a Loop over the sequence (scan8.cc).
Status scan8ToLoops(NodeSpec& n, NormalizeContext& nctx);

/// Builds `g` (and, recursively, its subgraphs) from `proto`. Initializer data is moved out
/// of the proto as it is converted, so the proto is modified.
Status buildGraph(onnx::GraphProto& proto, Graph& g, ImportContext& ctx,
                  const DeclaredTypes* parentTypes, int depth);

/// A node of a model-local function body instantiated for one call: values renamed into the
/// calling graph, attributes resolved, and the opset of its domain (the function's imports
/// first, then the model's).
struct InlinedNode {
  onnx::NodeProto* proto;
  SourceNodeRef where;
};

/// Expands a call of a model-local function (in ctx.functions) into the nodes of its body,
/// nested calls expanded too, appended to `out` in order. The copies live in `storage`. Body
/// values get fresh names in `g` derived from "<call node>/<name>", node names likewise;
/// recursion, subgraph attributes in bodies and arity mismatches are errors.
Status inlineFunctionCall(const onnx::NodeProto& call, const SourceNodeRef& where,
                          ImportContext& ctx, const Graph& g, std::deque<onnx::NodeProto>& storage,
                          std::vector<InlinedNode>& out);

/// Counts the nodes of a serialized ModelProto's graph and subgraphs (down to `maxDepth`
/// levels) from the wire format, without parsing it; stops counting past `limit`. Malformed
/// bytes end the count early (the parser reports them).
int64_t countNodesOnWire(std::string_view bytes, int64_t limit, int maxDepth);
/// The error for a model over options.maxNodes.
Error tooManyNodes(const ImportContext& ctx);

/// Reserves every value name of `proto` and its subgraphs in ctx and records the names nodes
/// read; fails when subgraphs nest deeper than the options allow.
Status collectNames(const onnx::GraphProto& proto, ImportContext& ctx, int depth);

}  // namespace kiln::onnx_import
