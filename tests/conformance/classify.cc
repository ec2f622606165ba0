// Classifies one ONNX node test: plain import, inference without declared types, then with values.
#include "classify.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <vector>

#include "kiln/frontend/load.h"
#include "kiln/frontend/onnx.h"
#include "kiln/ir/verifier.h"
#include "kiln/ops/infer.h"
#include "kiln/ops/registry.h"

namespace kiln::conformance {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Ops whose output shape depends on the values they compute, not only on their inputs' values.
const std::set<std::string> kDataDependentOps = {
    "NonZero", "Unique", "Compress", "NonMaxSuppression", "Loop", "If", "Scan", "StringSplit",
    "StringNormalizer" /* stopwords remove a data-dependent number of elements */};

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

/// Op types of the test: from the manifest, plus what kiln imported (without domains).
std::set<std::string> testOps(const json* info, const Graph* g) {
  std::set<std::string> ops;
  if (info)
    for (const auto& op : info->value("ops", json::array())) {
      std::string s = op.get<std::string>();
      ops.insert(s.substr(s.rfind('.') == std::string::npos ? 0 : s.rfind('.') + 1));
    }
  if (g)
    for (const auto& n : g->nodes()) ops.insert(n->opType());
  return ops;
}

Outcome errorOutcome(const std::string& message, const json* info) {
  if (lower(message).find("unsupported") == std::string::npos) return {"wrong", message, "error"};
  std::set<std::string> ops = testOps(info, nullptr);
  bool namesOp = ops.empty();  // without a manifest, trust the message
  for (const auto& op : ops)
    if (message.find(op) != std::string::npos) namesOp = true;
  if (!namesOp) return {"wrong", "refusal does not name the op: " + message, "unnamed-refusal"};
  return {"unsupported", message, ""};
}

/// "output 'seq' is a sequence" for the first input/output that is not a tensor, or "".
std::string nonTensorIO(const json* info) {
  if (!info) return "";
  for (const char* side : {"inputs", "outputs"})
    for (const auto& v : info->value(side, json::array())) {
      std::string kind = v.value("kind", "tensor");
      if (kind != "tensor")
        return std::string(side).substr(0, std::string(side).size() - 1) + " '" +
               v.value("name", "") + "' is " + (kind == "optional" ? "an " : "a ") + kind;
    }
  return "";
}

/// Forgets every node output's type (recursively) so inference cannot lean on declared types.
void clearInferredTypes(Graph& g) {
  for (const auto& n : g.nodes()) {
    for (Value* v : n->outputs())
      if (v) v->setType(TensorType{});
    for (Graph* sub : n->subgraphs()) clearInferredTypes(*sub);
  }
}

/// Reads PREFIX_0.pb, PREFIX_1.pb, ... from test_data_set_0.
Expected<std::vector<Tensor>> readTensors(const fs::path& testDir, const std::string& prefix) {
  std::vector<Tensor> out;
  for (int k = 0;; ++k) {
    fs::path p = testDir / "test_data_set_0" / (prefix + "_" + std::to_string(k) + ".pb");
    std::error_code ec;
    if (!fs::exists(p, ec)) break;
    auto t = readTensorProtoFile(p.string());
    if (!t.ok()) return makeError("{}: {}", p.filename().string(), t.message());
    out.push_back(std::move(t).value());
  }
  return out;
}

struct Comparison {
  int mismatches = 0, unknowns = 0;
  std::string firstMismatch, firstUnknown;
};

Comparison compare(const Graph& g, const std::vector<Tensor>& expected) {
  Comparison c;
  for (size_t i = 0; i < expected.size(); ++i) {
    const Value* v = g.outputs()[i];
    const TensorType& got = v->type();
    const Tensor& e = expected[i];
    TensorType want{e.dtype(), Shape::ofStatic(e.dims())};
    std::string what =
        "output '" + v->name() + "': inferred " + toString(got) + ", expected " + toString(want);
    // onnx 1.12's generator stores bfloat16 expected outputs as uint16 words.
    bool bf16AsU16 = got.dtype == DType::BF16 && want.dtype == DType::U16;
    bool mismatch = got.dtype != want.dtype && !bf16AsU16;
    bool unknown = false;
    if (!mismatch && got.shape.rankKnown()) {
      if (got.shape.rank() != e.rank()) mismatch = true;
      for (size_t d = 0; !mismatch && d < e.dims().size(); ++d) {
        const Dim& dim = got.shape[d];
        if (dim.isStatic() && dim.value != e.dims()[d]) mismatch = true;
        if (!dim.isStatic()) unknown = true;
      }
    } else if (!mismatch) {
      unknown = true;  // unknown rank
    }
    if (mismatch && c.mismatches++ == 0) c.firstMismatch = what;
    if (!mismatch && unknown && c.unknowns++ == 0) c.firstUnknown = what;
  }
  return c;
}

/// Loads without inference and clears node output types; `known` gets the input values.
Expected<Model> loadUninferred(const fs::path& model) {
  LoadOptions options;
  options.infer = false;
  KILN_ASSIGN_OR_RETURN(Model m, loadModel(model.string(), options));
  clearInferredTypes(*m.graph);
  KILN_RETURN_IF_ERROR(verifyGraph(*m.graph));
  return m;
}

/// Inference with the test's input values known at compile time.
Outcome classifyWithValues(const fs::path& testDir, const json* info,
                           const std::vector<Tensor>& expected, const Comparison& first) {
  fs::path modelPath = testDir / "model.onnx";
  auto m = loadUninferred(modelPath);
  if (!m.ok()) return {"wrong", "reload without inference failed: " + m.message(), "error"};
  Graph& g = *m->graph;
  auto inputs = readTensors(testDir, "input");
  if (!inputs.ok()) return {"wrong", "cannot read the test's inputs: " + inputs.message(), "error"};
  KnownValues known;
  std::vector<std::string> names;
  if (info)
    for (const auto& v : info->value("inputs", json::array())) names.push_back(v.value("name", ""));
  for (size_t k = 0; k < inputs->size(); ++k) {
    Value* v = k < names.size() ? g.findLocalValue(names[k])
                                : (k < g.inputs().size() ? g.inputs()[k] : nullptr);
    if (v && !v->isInitializer()) known[v] = (*inputs)[k];
  }
  InferOptions options;
  options.maxEvalElements = int64_t(1) << 20;
  if (auto st = inferShapes(g, OpRegistry::builtin(), options, &known); !st.ok())
    return {"wrong", "with the test's input values known, inference failed: " + st.message(),
            "error-with-values"};
  Comparison c = compare(g, expected);
  if (c.mismatches)
    return {"wrong", c.firstMismatch + " (with the test's input values known)",
            "mismatch-with-values"};
  if (!c.unknowns)
    return {"dynamic", first.firstUnknown + "; static and right once input values are known",
            "resolved-with-values"};
  for (const auto& op : testOps(info, &g))
    if (kDataDependentOps.count(op))
      return {"dynamic", first.firstUnknown + "; " + op + " makes it data-dependent",
              "data-dependent"};
  return {"wrong", first.firstUnknown + ", although input shapes and values determine it",
          "unresolved"};
}

}  // namespace

Outcome classify(const fs::path& testDir, const json* info) {
  fs::path modelPath = testDir / "model.onnx";
  std::string nonTensor = nonTensorIO(info);
  // The user's path first: load, verify and infer with everything the file declares.
  auto plain = loadModel(modelPath.string());
  if (!nonTensor.empty())
    return {"unsupported",
            nonTensor + "; kiln's IR carries tensors only" +
                (plain.ok() ? "" : " (kiln: " + plain.message() + ")"),
            "non-tensor-io"};
  if (!plain.ok()) return errorOutcome(plain.message(), info);

  auto expected = readTensors(testDir, "output");
  if (!expected.ok()) {
    if (!info)
      return {"unsupported", "expected output is not a plain tensor: " + expected.message(),
              "non-tensor-io"};
    return {"wrong", "cannot read the expected output: " + expected.message(), "bad-expected"};
  }
  size_t numOutputs = plain->graph->outputs().size();
  if (expected->size() != numOutputs)
    return {"wrong",
            "kiln's graph has " + std::to_string(numOutputs) + " outputs, the test expects " +
                std::to_string(expected->size()),
            "output-count"};

  // Inference must find the types itself: the file's declared output types are removed.
  auto m = loadUninferred(modelPath);
  if (!m.ok()) return {"wrong", "reload without inference failed: " + m.message(), "error"};
  if (auto st = inferShapes(*m->graph, OpRegistry::builtin()); !st.ok())
    return {"wrong", "inference without the model's declared types failed: " + st.message(),
            "needs-declared-types"};
  Comparison c = compare(*m->graph, *expected);
  if (c.mismatches) return {"wrong", c.firstMismatch, "mismatch"};
  if (!c.unknowns) return {"inferred", "", ""};
  return classifyWithValues(testDir, info, *expected, c);
}

}  // namespace kiln::conformance
