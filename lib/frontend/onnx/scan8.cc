// Scan-8 (a batch axis) rewritten as two Loops at import (see scan8ToLoops).
#include "onnx_import.h"

namespace kiln::onnx_import {
namespace {

// ---- Scan-8: a batch axis, rewritten as two Loops ----

onnx::NodeProto& addProtoNode(onnx::GraphProto& g, const std::string& op, const std::string& name,
                              std::vector<std::string> inputs, std::vector<std::string> outputs) {
  onnx::NodeProto& node = *g.add_node();
  node.set_op_type(op);
  node.set_name(name);
  for (auto& i : inputs) node.add_input(std::move(i));
  for (auto& o : outputs) node.add_output(std::move(o));
  return node;
}

void addScalarInput(onnx::GraphProto& g, const std::string& name, int elemType) {
  onnx::ValueInfoProto& vi = *g.add_input();
  vi.set_name(name);
  vi.mutable_type()->mutable_tensor_type()->set_elem_type(elemType);
  vi.mutable_type()->mutable_tensor_type()->mutable_shape();  // rank 0
}

}  // namespace

// Scan-8 runs its body over [batch, sequence, ...] inputs with per-batch states; Scan-9 and
// later dropped the batch axis. kiln rewrites it into Loops, which have the same meaning:
//   Loop over the batch b (trip count = dim 0 of the first input), whose body
//     slices every state and scan input at b (Gather axis 0),
//     runs an inner Loop over the sequence (trip count = dim 0 of the sliced scan input) whose
//     body is the Scan body, its scan inputs sliced at the step (reversed where `directions`
//     says 1), and returns the final states and the per-step scan outputs,
//   so both Loops' scan outputs stack to [batch, ...] and [batch, sequence, ...].
// The body protos are rebuilt in place: the original body becomes the batch Loop's body and a
// copy of it the sequence Loop's. sequence_lens (per-batch lengths) is refused.

Status scan8ToLoops(NodeSpec& n, NormalizeContext& nctx) {
  const std::string todo = "re-export the model at opset 9 or newer";
  if (!n.inputs.empty() && !n.inputs[0].empty())
    return nctx.error("Scan-8 with sequence_lens is unsupported", todo);
  if (n.graphs.size() != 1 || n.graphs[0].attr != "body" || n.graphs[0].bodies.size() != 1)
    return nctx.error("Scan needs one graph attribute 'body'", "fix the node in the model");
  const auto m = n.attrs.count("num_scan_inputs")
                     ? std::optional<Attribute>(n.attrs.at("num_scan_inputs"))
                     : std::nullopt;
  n.attrs.erase("num_scan_inputs");
  if (!m || m->kind() != AttrKind::Int || m->i() < 1)
    return nctx.error("Scan needs a positive 'num_scan_inputs'", "fix the node in the model");
  const size_t numScan = size_t(m->i());
  if (n.inputs.size() < 1 + numScan)
    return nctx.error(fmt::format("has {} inputs for {} scan inputs", n.inputs.size(), numScan),
                      "fix the node in the model");
  const size_t numStates = n.inputs.size() - 1 - numScan;
  std::vector<int64_t> directions(numScan, 0);
  if (auto it = n.attrs.find("directions"); it != n.attrs.end()) {
    const Attribute d = it->second;
    n.attrs.erase(it);
    if (d.kind() != AttrKind::Ints || d.ints().size() != numScan)
      return nctx.error("'directions' must list one flag per scan input",
                        "fix the node in the model");
    directions = d.ints();
  }
  if (!n.attrs.empty())
    return nctx.error(fmt::format("Scan-8 attribute '{}' is unsupported",
                                  printableName(n.attrs.begin()->first)),
                      todo);
  onnx::GraphProto& body = *n.graphs[0].bodies[0];
  if (size_t(body.input_size()) != numStates + numScan ||
      size_t(body.output_size()) < numStates || n.outputs.size() != size_t(body.output_size()))
    return nctx.error("the body's inputs and outputs do not match the node's",
                      "fix the node in the model");
  const std::string base = n.name.empty() ? std::string("scan8") : n.name;
  auto fresh = [&](const std::string& tag) { return nctx.freshName(base + "_" + tag); };

  // The sequence Loop's body: the Scan body with (step, cond) in front of the states, and the
  // scan inputs sliced at the step (outer values `seqInputs[k]` and `lastStep`).
  onnx::GraphProto inner = body;
  inner.clear_input();
  inner.clear_node();
  inner.clear_output();
  const std::string step = fresh("step"), condIn = fresh("seq_cond"),
                    condOut = fresh("seq_cond_out");
  addScalarInput(inner, step, onnx::TensorProto::INT64);
  addScalarInput(inner, condIn, onnx::TensorProto::BOOL);
  for (size_t j = 0; j < numStates; ++j) *inner.add_input() = body.input(int(j));
  std::vector<std::string> seqInputs(numScan);
  const std::string lastStep = fresh("last_step");
  bool anyReverse = false;
  for (size_t k = 0; k < numScan; ++k) {
    seqInputs[k] = fresh("batch_input");
    std::string index = step;
    if (directions[k] != 0) {
      anyReverse = true;
      index = fresh("reverse_step");
      addProtoNode(inner, "Sub", base + "/reverse_step", {lastStep, step}, {index});
    }
    const onnx::ValueInfoProto& slice = body.input(int(numStates + k));
    addProtoNode(inner, "Gather", base + "/step_slice", {seqInputs[k], index}, {slice.name()});
    *inner.add_value_info() = slice;
  }
  for (const auto& node : body.node()) *inner.add_node() = node;
  addProtoNode(inner, "Identity", base + "/seq_cond", {condIn}, {condOut});
  inner.add_output()->set_name(condOut);
  for (const auto& out : body.output()) *inner.add_output() = out;

  // The batch Loop's body, built over the original body proto.
  onnx::GraphProto outer;
  outer.set_name(body.name().empty() ? base + "_batch" : body.name() + "_batch");
  const std::string batch = fresh("batch"), bcondIn = fresh("batch_cond"),
                    bcondOut = fresh("batch_cond_out");
  addScalarInput(outer, batch, onnx::TensorProto::INT64);
  addScalarInput(outer, bcondIn, onnx::TensorProto::BOOL);
  std::vector<std::string> loopInputs{fresh("seq_len"), ""};
  for (size_t j = 0; j < numStates; ++j) {
    loopInputs.push_back(fresh("batch_state"));
    addProtoNode(outer, "Gather", base + "/batch_state", {n.inputs[1 + j], batch},
                 {loopInputs.back()});
  }
  for (size_t k = 0; k < numScan; ++k)
    addProtoNode(outer, "Gather", base + "/batch_input", {n.inputs[1 + numStates + k], batch},
                 {seqInputs[k]});
  const std::string zero = fresh("zero"), one = fresh("one"), seqShape = fresh("seq_shape");
  for (const auto& [name, v] : {std::pair{zero, 0}, std::pair{one, 1}}) {
    onnx::NodeProto& c = addProtoNode(outer, "Constant", base + "/constant", {}, {name});
    onnx::AttributeProto& a = *c.add_attribute();
    a.set_name("value");
    a.set_type(onnx::AttributeProto::TENSOR);
    a.mutable_t()->set_data_type(onnx::TensorProto::INT64);
    a.mutable_t()->add_int64_data(v);
  }
  addProtoNode(outer, "Shape", base + "/seq_shape", {seqInputs[0]}, {seqShape});
  addProtoNode(outer, "Gather", base + "/seq_len", {seqShape, zero}, {loopInputs[0]});
  if (anyReverse) addProtoNode(outer, "Sub", base + "/last_step", {loopInputs[0], one}, {lastStep});
  std::vector<std::string> loopOutputs;
  for (int i = 0; i < body.output_size(); ++i) loopOutputs.push_back(fresh("batch_output"));
  onnx::NodeProto& loop = addProtoNode(outer, "Loop", base + "/sequence", loopInputs, loopOutputs);
  onnx::AttributeProto& a = *loop.add_attribute();
  a.set_name("body");
  a.set_type(onnx::AttributeProto::GRAPH);
  *a.mutable_g() = std::move(inner);
  addProtoNode(outer, "Identity", base + "/batch_cond", {bcondIn}, {bcondOut});
  outer.add_output()->set_name(bcondOut);
  for (const auto& o : loopOutputs) outer.add_output()->set_name(o);
  body = std::move(outer);

  // The node: a Loop over the batch, trip count dim 0 of the first state or scan input.
  const std::string first = n.inputs[1];
  auto helper = [&](const char* op, std::vector<std::string> inputs, const std::string& tag) {
    std::string out = fresh(tag);
    nctx.emit(NodeSpec{
        .opType = op, .name = base + "/" + tag, .inputs = std::move(inputs), .outputs = {out}});
    return out;
  };
  const std::string shape = helper("Shape", {first}, "batch_shape");
  KILN_ASSIGN_OR_RETURN(
      std::string index,
      nctx.addConstant(base + "_batch_axis", Tensor::scalar<int64_t>(DType::I64, 0)));
  const std::string count = helper("Gather", {shape, index}, "batch_count");
  n.opType = "Loop";
  n.inputs = {count, ""};
  return Status();
}

}  // namespace kiln::onnx_import
