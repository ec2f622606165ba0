// Helpers for ONNX importer tests: build small ModelProtos in memory and import them.
#pragma once

#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

#include "kiln/frontend/onnx.h"
#include "kiln/ops/registry.h"

namespace kiln::onnx_test {

/// The built-in registry plus schema-less stand-ins for ops whose families may not be
/// registered yet, so importer tests do not depend on other families' progress.
inline const OpRegistry& testRegistry() {
  static const OpRegistry registry = [] {
    OpRegistry r = OpRegistry::builtin();
    for (const char* op : {"Squeeze",
                           "Unsqueeze",
                           "Softmax",
                           "LogSoftmax",
                           "Flatten",
                           "Shape",
                           "Reshape",
                           "Clip",
                           "Slice",
                           "Resize",
                           "Constant",
                           "If",
                           "Loop",
                           "Relu",
                           "Identity",
                           "Cast",
                           "CastLike",
                           "ReduceSum",
                           "ReduceMean",
                           "Split",
                           "TopK",
                           "Pad",
                           "BatchNormalization",
                           "Dropout",
                           "Conv",
                           "ScatterElements"})
      if (!r.find("", op)) {
        OpDef d;
        d.name = op;
        r.addDef(std::move(d));
      }
    return r;
  }();
  return registry;
}

inline onnx::ModelProto makeModel(int64_t opset = 13) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* o = m.add_opset_import();
  o->set_domain("");
  o->set_version(opset);
  m.mutable_graph()->set_name("g");
  return m;
}

/// Declares a tensor value: dims >= 0 are static, -1 unknown; `params` names symbolic dims.
inline void setType(onnx::ValueInfoProto* v, int32_t elemType, const std::vector<int64_t>& dims,
                    const std::vector<std::string>& params = {}) {
  auto* tt = v->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elemType);
  auto* shape = tt->mutable_shape();
  for (size_t i = 0; i < dims.size(); ++i) {
    auto* d = shape->add_dim();
    if (i < params.size() && !params[i].empty())
      d->set_dim_param(params[i]);
    else if (dims[i] >= 0)
      d->set_dim_value(dims[i]);
  }
}

inline onnx::ValueInfoProto* addInput(onnx::GraphProto* g, const std::string& name,
                                      std::vector<int64_t> dims = {2, 3}, int32_t elem = 1) {
  auto* v = g->add_input();
  v->set_name(name);
  setType(v, elem, dims);
  return v;
}

inline onnx::ValueInfoProto* addOutput(onnx::GraphProto* g, const std::string& name) {
  auto* v = g->add_output();
  v->set_name(name);
  return v;
}

inline onnx::NodeProto* addNode(onnx::GraphProto* g, const std::string& op,
                                const std::vector<std::string>& inputs,
                                const std::vector<std::string>& outputs,
                                const std::string& name = "") {
  auto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(name);
  for (const auto& i : inputs) n->add_input(i);
  for (const auto& o : outputs) n->add_output(o);
  return n;
}

inline onnx::AttributeProto* addAttr(onnx::NodeProto* n, const std::string& name,
                                     onnx::AttributeProto::AttributeType type) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(type);
  return a;
}
inline void attrInts(onnx::NodeProto* n, const std::string& name, std::vector<int64_t> v) {
  auto* a = addAttr(n, name, onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}
inline void attrInt(onnx::NodeProto* n, const std::string& name, int64_t v) {
  addAttr(n, name, onnx::AttributeProto::INT)->set_i(v);
}
inline void attrFloat(onnx::NodeProto* n, const std::string& name, float v) {
  addAttr(n, name, onnx::AttributeProto::FLOAT)->set_f(v);
}
inline void attrString(onnx::NodeProto* n, const std::string& name, const std::string& v) {
  addAttr(n, name, onnx::AttributeProto::STRING)->set_s(v);
}

/// A float tensor stored as raw_data.
inline onnx::TensorProto floatTensor(const std::string& name, std::vector<int64_t> dims,
                                     const std::vector<float>& values) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t.add_dims(d);
  t.set_raw_data(
      std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float)));
  return t;
}

inline std::string serialize(const onnx::ModelProto& m) {
  std::string bytes;
  m.SerializeToString(&bytes);
  return bytes;
}

/// Imports with the test registry; external data resolves against `baseDir`.
inline Expected<Model> importModel(const onnx::ModelProto& m, const std::string& baseDir = "",
                                   OnnxImportOptions options = {}) {
  options.registry = &testRegistry();
  return importOnnxBytes(serialize(m), "model.onnx", baseDir, options);
}

/// The node of `g` named `name`, or null.
inline Node* findNode(const Graph& g, const std::string& name) {
  for (const auto& n : g.nodes())
    if (n->name() == name) return n.get();
  return nullptr;
}

}  // namespace kiln::onnx_test
