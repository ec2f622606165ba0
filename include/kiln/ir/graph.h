// The graph IR: Value (a tensor edge), Node (an op application), Graph, Model.
#pragma once

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "kiln/ir/attribute.h"
#include "kiln/ir/shape.h"
#include "kiln/ir/tensor.h"

namespace kiln {

/// Default most nodes a model file may hold, every subgraph counted (--max-nodes; docs/limits.md).
inline constexpr int64_t kDefaultMaxNodes = 250'000;


class Node;
class Graph;

/// Quantization parameters a pass attaches to a value.
struct QuantParams {
  std::vector<float> scales;
  std::vector<int64_t> zeroPoints;
  int64_t axis = -1;  ///< -1: per-tensor
  DType storage = DType::I8;
  bool operator==(const QuantParams&) const = default;
};

/// Slots later passes fill in; printed and serialized with the node or value.
struct Annotations {
  std::optional<int64_t> fusionGroup;
  std::string layout;  ///< preferred layout, e.g. "NCHW16c"
  std::optional<QuantParams> quant;
  std::string device;  ///< device assignment, e.g. "cpu:0"
  /// Names of the source-model nodes this node computes, set when a pass fuses or replaces
  /// nodes (empty: the node is its own source). Errors and profiles name these.
  std::vector<std::string> sources;
  bool empty() const {
    return !fusionGroup && layout.empty() && !quant && device.empty() && sources.empty();
  }
  bool operator==(const Annotations&) const = default;
};

/// A use of a value: input `index` of `node`.
struct Use {
  Node* node;
  int index;
  bool operator==(const Use&) const = default;
};

/// A tensor edge: produced by one node (or a graph input / initializer), read by many.
class Value {
 public:
  const std::string& name() const { return name_; }
  const TensorType& type() const { return type_; }
  DType dtype() const { return type_.dtype; }
  const Shape& shape() const { return type_.shape; }
  void setType(TensorType t) { type_ = std::move(t); }
  Node* producer() const { return producer_; }
  int producerIndex() const { return producerIndex_; }
  const std::vector<Use>& uses() const { return uses_; }
  Graph* owner() const { return owner_; }
  /// The constant data when this value is an initializer.
  const Tensor* initializer() const { return initializer_ ? &*initializer_ : nullptr; }
  bool isInitializer() const { return initializer_.has_value(); }
  bool isGraphInput() const { return isGraphInput_; }
  Annotations& annotations() { return annotations_; }
  const Annotations& annotations() const { return annotations_; }
  const std::string& docString() const { return docString_; }
  void setDocString(std::string s) { docString_ = std::move(s); }

 private:
  friend class Graph;
  friend class Node;
  std::string name_;
  TensorType type_;
  Node* producer_ = nullptr;
  int producerIndex_ = -1;
  std::vector<Use> uses_;
  Graph* owner_ = nullptr;
  std::optional<Tensor> initializer_;
  bool isGraphInput_ = false;
  Annotations annotations_;
  std::string docString_;
  std::list<std::unique_ptr<Value>>::iterator self_;
};

/// An op application. Inputs may be null for omitted optional inputs.
class Node {
 public:
  const std::string& name() const { return name_; }
  const std::string& opType() const { return opType_; }
  const std::string& domain() const { return domain_; }
  Graph* owner() const { return owner_; }
  std::span<Value* const> inputs() const { return inputs_; }
  std::span<Value* const> outputs() const { return outputs_; }
  Value* input(size_t i) const { return i < inputs_.size() ? inputs_[i] : nullptr; }
  Value* output(size_t i) const { return i < outputs_.size() ? outputs_[i] : nullptr; }
  size_t numInputs() const { return inputs_.size(); }
  size_t numOutputs() const { return outputs_.size(); }
  /// Rewires input i (null to omit it), maintaining use lists.
  void setInput(size_t i, Value* v);

  const std::map<std::string, Attribute>& attributes() const { return attrs_; }
  bool hasAttr(const std::string& name) const { return attrs_.count(name) != 0; }
  const Attribute* attr(const std::string& name) const;
  void setAttr(const std::string& name, Attribute a) { attrs_[name] = std::move(a); }
  void removeAttr(const std::string& name) { attrs_.erase(name); }
  /// Typed getters with defaults (the default is also used on a kind mismatch).
  int64_t attrInt(const std::string& name, int64_t dflt) const;
  float attrFloat(const std::string& name, float dflt) const;
  std::string attrString(const std::string& name, const std::string& dflt) const;
  std::vector<int64_t> attrInts(const std::string& name, std::vector<int64_t> dflt = {}) const;
  std::vector<float> attrFloats(const std::string& name, std::vector<float> dflt = {}) const;
  /// Subgraphs held in graph-valued attributes, in attribute-name order.
  std::vector<Graph*> subgraphs() const;

  Annotations& annotations() { return annotations_; }
  const Annotations& annotations() const { return annotations_; }
  const std::string& docString() const { return docString_; }
  void setDocString(std::string s) { docString_ = std::move(s); }
  /// "node 'conv1' (Conv)" for messages.
  std::string describe() const;

 private:
  friend class Graph;
  std::string name_, opType_, domain_;
  std::vector<Value*> inputs_;
  std::vector<Value*> outputs_;
  std::map<std::string, Attribute> attrs_;
  Annotations annotations_;
  std::string docString_;
  Graph* owner_ = nullptr;
  std::list<std::unique_ptr<Node>>::iterator self_;
};

/// A graph: signature (inputs, outputs), initializers, and nodes in topological order.
/// A subgraph's parent is the graph of the node that holds it; its nodes may read outer values.
class Graph {
 public:
  explicit Graph(std::string name = "main", Graph* parent = nullptr)
      : name_(std::move(name)), parent_(parent) {}
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  const std::string& name() const { return name_; }
  void setName(std::string n) { name_ = std::move(n); }
  Graph* parent() const { return parent_; }
  void setParent(Graph* p) { parent_ = p; }
  const std::string& docString() const { return docString_; }
  void setDocString(std::string s) { docString_ = std::move(s); }

  /// A graph input; fails if the name is already defined in this graph.
  Expected<Value*> addInput(const std::string& name, TensorType type);
  /// A constant; its type is taken from the tensor.
  Expected<Value*> addInitializer(const std::string& name, Tensor data);
  /// Marks a value as a graph output (the same value may be listed once).
  void addOutput(Value* v) { outputs_.push_back(v); }
  void setOutputs(std::vector<Value*> outs) { outputs_ = std::move(outs); }
  /// Appends a node with new output values of unknown type named `outputNames`.
  /// An empty output name makes an unused (omitted) output with a generated name.
  Expected<Node*> addNode(const std::string& opType, const std::string& domain,
                          const std::string& name, std::vector<Value*> inputs,
                          const std::vector<std::string>& outputNames);
  /// Removes a node whose outputs have no uses and are not graph outputs.
  void eraseNode(Node* n);
  /// Points every use of `from` (and graph outputs) at `to`.
  void replaceAllUsesWith(Value* from, Value* to);
  /// Removes an initializer or input value that has no uses.
  void eraseValue(Value* v);
  /// Drops the outputs of `n` from index `count` on; they must be unused and not outputs.
  void truncateOutputs(Node* n, size_t count);
  /// Exchanges the names of two values of this graph (a rewrite that computes a graph output
  /// with a new node gives the new value the output's name).
  void swapNames(Value* a, Value* b);

  const std::list<std::unique_ptr<Node>>& nodes() const { return nodes_; }
  size_t numNodes() const { return nodes_.size(); }
  const std::vector<Value*>& inputs() const { return inputs_; }
  const std::vector<Value*>& outputs() const { return outputs_; }
  const std::vector<Value*>& initializers() const { return initializers_; }
  /// Every value owned by this graph (inputs, initializers, node outputs).
  const std::list<std::unique_ptr<Value>>& values() const { return values_; }

  /// Looks up a value by name here, then in enclosing graphs.
  Value* findValue(const std::string& name) const;
  /// Looks up a value by name in this graph only.
  Value* findLocalValue(const std::string& name) const;
  /// A name not used in this graph or its ancestors, derived from `base`.
  std::string uniqueName(const std::string& base) const;

  /// Reorders nodes topologically (stable); fails naming a node on a cycle.
  Status sortTopologically();

 private:
  Value* newValue(const std::string& name);
  std::string name_;
  std::string docString_;
  Graph* parent_;
  std::list<std::unique_ptr<Node>> nodes_;
  std::list<std::unique_ptr<Value>> values_;
  std::unordered_map<std::string, Value*> byName_;
  std::vector<Value*> inputs_, outputs_, initializers_;
  mutable uint64_t nameCounter_ = 0;
};

struct OpsetImport {
  std::string domain;  ///< "" is the default ONNX domain
  int64_t version = 0;
  bool operator==(const OpsetImport&) const = default;
};

/// Provenance and metadata carried from the source model to the artifact.
struct ModelMetadata {
  std::string producerName, producerVersion, domain, docString;
  int64_t irVersion = 0, modelVersion = 0;
  std::vector<OpsetImport> opsets;
  std::string sourceSha256;                                ///< SHA-256 of the source model file
  std::string sourceFormat;                                ///< "onnx", "kiln"
  std::string kilnVersion;                                 ///< the kiln that produced this IR
  std::vector<std::pair<std::string, std::string>> props;  ///< metadata_props, in order
  std::vector<std::pair<std::string, std::string>> hints;  ///< hardware hints
  bool operator==(const ModelMetadata&) const = default;
};

/// A model: metadata plus its main graph.
struct Model {
  ModelMetadata meta;
  std::shared_ptr<Graph> graph = std::make_shared<Graph>();
  /// The opset version imported for a domain, or 0.
  int64_t opsetVersion(const std::string& domain) const;
};

}  // namespace kiln
