// Lowering an inferred graph to a Program: fold known values, emit kernel calls, plan memory.
#include <algorithm>
#include <unordered_map>

#include "kiln/memory/plan.h"
#include "kiln/ops/infer.h"
#include "kiln/ops/registry.h"
#include "program.h"
#include "source_text.h"

namespace kiln {
namespace {

int64_t align64(int64_t v) {
  return (v + 63) / 64 * 64;
}

/// Constant nodes become initializers so their data lands in the weights blob.
Status constantsToInitializers(Graph& g) {
  std::vector<Node*> constants;
  for (const auto& n : g.nodes())
    if (n->opType() == "Constant" && n->domain().empty()) constants.push_back(n.get());
  for (Node* n : constants) {
    const Attribute* a = n->attr("value");
    if (!a || a->kind() != AttrKind::Tensor)
      return makeError("{}: Constant without a tensor 'value' attribute", n->describe());
    KILN_ASSIGN_OR_RETURN(Value * init,
                          g.addInitializer(g.uniqueName(n->output(0)->name() + "_const"), a->t()));
    g.replaceAllUsesWith(n->output(0), init);
    g.eraseNode(n);
  }
  return Status();
}

/// Where a value lives at run time.
enum class Home { Weight, Input, Output, Arena };

class ProgramEmitter final : public EmitContext {
 public:
  ProgramEmitter(Graph& g, Program& p, KnownValues& known) : g_(g), p_(p), known_(known) {
    for (size_t i = 0; i < g.inputs().size(); ++i) inputIndex_[g.inputs()[i]] = int(i);
    for (size_t i = 0; i < g.outputs().size(); ++i) outputIndex_.emplace(g.outputs()[i], int(i));
  }

  Status emitAll(const std::vector<Node*>& schedule) {
    for (size_t step = 0; step < schedule.size(); ++step) {
      node_ = schedule[step];
      step_ = int64_t(step);
      for (Value* out : node_->outputs()) defStep_[out] = step_;
      for (Value* in : node_->inputs())
        if (in) lastUse_[in] = step_;
      const OpDef* def = OpRegistry::builtin().find(node_->domain(), node_->opType());
      if (!def || !def->emit) return unsupported("no code generation for this op yet");
      KILN_RETURN_IF_ERROR(def->emit(*node_, *this));
    }
    return Status();
  }

  Status plan() {
    // Arena values: node outputs that are not graph outputs and not known constants.
    std::vector<BufferRequest> requests;
    std::vector<std::string> tokens;
    // Deterministic order: by value id (assigned in emission order).
    std::vector<std::pair<int64_t, const Value*>> ordered;
    for (const auto& [v, id] : arenaIds_) ordered.push_back({id, v});
    std::sort(ordered.begin(), ordered.end());
    for (const auto& [id, v] : ordered) {
      int64_t bytes = *dtypeStorageBytes(v->dtype(), *v->shape().numElements());
      int64_t first = defStep_.count(v) ? defStep_[v] : 0;
      int64_t last = std::max(first, lastUse_.count(v) ? lastUse_[v] : first);
      requests.push_back({std::max<int64_t>(bytes, 1), first, last});
      tokens.push_back("@V" + std::to_string(id) + "@");
    }
    for (size_t k = 0; k < scratch_.size(); ++k) {
      requests.push_back(
          {std::max<int64_t>(scratch_[k].first, 1), scratch_[k].second, scratch_[k].second});
      tokens.push_back("@S" + std::to_string(k) + "@");
    }
    KILN_ASSIGN_OR_RETURN(ArenaPlan plan, planArenaBest(requests, 64));
    p_.arenaBytes = plan.arenaBytes;
    p_.arenaLowerBound = plan.lowerBoundBytes;
    p_.planner = plan.planner;
    std::unordered_map<std::string, int64_t> offsets;
    for (size_t i = 0; i < tokens.size(); ++i) offsets[tokens[i]] = plan.offsets[i];
    for (KernelCall& c : p_.calls) {
      std::string out;
      const std::string& s = c.statement;
      for (size_t i = 0; i < s.size();) {
        if (s[i] == '@') {
          size_t end = s.find('@', i + 1);
          auto it = offsets.find(s.substr(i, end - i + 1));
          if (end != std::string::npos && it != offsets.end()) {
            out += std::to_string(it->second);
            i = end + 1;
            continue;
          }
        }
        out.push_back(s[i++]);
      }
      c.statement = std::move(out);
    }
    return Status();
  }

  /// Graph outputs not written by a kernel (inputs, weights, repeated outputs) are copied.
  void emitOutputCopies() {
    for (size_t i = 0; i < g_.outputs().size(); ++i) {
      Value* v = g_.outputs()[i];
      bool writtenHere =
          v->producer() && !known_.count(v) && outputIndex_.find(v)->second == int(i);
      if (writtenHere) continue;
      std::string src = bufferOf(v, /*writable=*/false);
      KernelCall c;
      c.kernel = "memcpy";
      c.opType = "Output";
      c.nodeNames = {v->name()};
      c.statement = fmt::format("std::memcpy(ctx->out[{}], {}, {});", i, src, p_.outputs[i].bytes);
      p_.calls.push_back(std::move(c));
    }
  }

  // ---- EmitContext ----
  std::string input(size_t i) override { return bufferOf(node_->input(i), false); }
  std::string output(size_t i) override { return bufferOf(node_->output(i), true); }
  const Tensor* value(size_t i) override {
    Value* v = i < node_->numInputs() ? node_->input(i) : nullptr;
    if (!v) return nullptr;
    if (v->isInitializer()) return v->initializer();
    auto it = known_.find(v);
    return it == known_.end() ? nullptr : &it->second;
  }
  std::string scratch(int64_t bytes) override {
    scratch_.push_back({bytes, step_});
    return fmt::format("(arena + @S{}@)", scratch_.size() - 1);
  }
  void useHeader(const std::string& header) override { p_.headers.insert(header); }
  void call(const std::string& kernel, const std::string& statement) override {
    KernelCall c;
    c.kernel = kernel;
    c.opType = node_->opType();
    c.nodeNames = {node_->name()};
    c.statement = statement;
    p_.calls.push_back(std::move(c));
  }
  std::string constArray(const std::vector<int64_t>& values) override {
    std::string name = "c" + std::to_string(p_.constants.size());
    p_.constants.push_back(
        fmt::format("static const int64_t {}[] = {};", name,
                    intListLiteral(values.empty() ? std::vector<int64_t>{0} : values)));
    return name;
  }
  std::string constFloatArray(const std::vector<float>& values) override {
    std::string name = "c" + std::to_string(p_.constants.size());
    std::string list = "{";
    for (size_t i = 0; i < values.size(); ++i) list += (i ? ", " : "") + floatLiteral(values[i]);
    if (values.empty()) list += "0.0f";
    p_.constants.push_back(fmt::format("static const float {}[] = {}}};", name, list));
    return name;
  }
  Error unsupported(const std::string& what) override {
    return makeError("{}: {} — remove or replace the op, or file an issue",
                     node_ ? node_->describe() : std::string("graph"), what);
  }

 private:
  std::string bufferOf(Value* v, bool writable) {
    std::string type(cTypeOf(v->dtype()));
    if (known_.count(v) || v->isInitializer()) {
      int64_t off = weightOffset(v);
      return fmt::format("reinterpret_cast<const {}*>(w + {})", type, off);
    }
    if (auto it = inputIndex_.find(v); it != inputIndex_.end())
      return fmt::format("static_cast<const {}*>(ctx->in[{}])", type, it->second);
    if (auto it = outputIndex_.find(v); it != outputIndex_.end())
      return fmt::format("static_cast<{}*>(ctx->out[{}])", type, it->second);
    auto [it, fresh] = arenaIds_.emplace(v, int64_t(arenaIds_.size()));
    (void)fresh;
    return fmt::format("reinterpret_cast<{}{}*>(arena + @V{}@)", writable ? "" : "const ", type,
                       it->second);
  }

  int64_t weightOffset(Value* v) {
    if (auto it = weightIndex_.find(v); it != weightIndex_.end())
      return p_.weights[it->second].offset;
    const Tensor& t = v->isInitializer() ? *v->initializer() : known_.at(v);
    WeightSlot slot{t, align64(p_.weightsBytes)};
    p_.weightsBytes = slot.offset + int64_t(t.byteSize());
    weightIndex_[v] = p_.weights.size();
    p_.weights.push_back(std::move(slot));
    return p_.weights.back().offset;
  }

  Graph& g_;
  Program& p_;
  KnownValues& known_;
  Node* node_ = nullptr;
  int64_t step_ = 0;
  std::unordered_map<const Value*, int> inputIndex_;
  std::unordered_map<const Value*, int> outputIndex_;  // first index of each output value
  std::unordered_map<const Value*, int64_t> arenaIds_;
  std::unordered_map<const Value*, size_t> weightIndex_;
  std::unordered_map<const Value*, int64_t> defStep_, lastUse_;
  std::vector<std::pair<int64_t, int64_t>> scratch_;  // bytes, step
};

Status checkStatic(const Value* v, const char* role) {
  if (!v->shape().isStatic())
    return makeError(
        "{} '{}' has shape {} — code generation needs static shapes; fix the "
        "model's dynamic dims with --shape NAME=d0,d1,...",
        role, commentSafe(v->name()), toString(v->shape()));
  if (cTypeOf(v->dtype()).empty())
    return makeError("{} '{}' has type {}, which code generation does not support yet", role,
                     commentSafe(v->name()), dtypeName(v->dtype()));
  if (!dtypeStorageBytes(v->dtype(), *v->shape().numElements()))
    return makeError("{} '{}' is too large", role, commentSafe(v->name()));
  return Status();
}

SignatureEntry signatureOf(const Value* v) {
  SignatureEntry e;
  e.name = v->name();
  e.dtype = v->dtype();
  e.dims = v->shape().staticDims();
  e.bytes = *dtypeStorageBytes(v->dtype(), *v->shape().numElements());
  return e;
}

}  // namespace

Expected<Program> buildProgram(Model& model, const CompileOptions& options) {
  Graph& g = *model.graph;
  for (const auto& n : g.nodes())
    if (!n->subgraphs().empty())
      return makeError(
          "{}: control flow with subgraphs is not supported by code generation yet "
          "— file an issue",
          n->describe());
  KILN_RETURN_IF_ERROR(constantsToInitializers(g));
  KnownValues known;
  KILN_RETURN_IF_ERROR(inferShapes(g, OpRegistry::builtin(), InferOptions{}, &known));
  for (Value* v : g.initializers()) known.erase(v);  // initializers are weights already

  Program p;
  p.prefix = symbolPrefixFor(options.name);
  for (const Value* v : g.inputs()) {
    KILN_RETURN_IF_ERROR(checkStatic(v, "input"));
    p.inputs.push_back(signatureOf(v));
  }
  for (const Value* v : g.outputs()) {
    KILN_RETURN_IF_ERROR(checkStatic(v, "output"));
    p.outputs.push_back(signatureOf(v));
  }
  // Nodes whose outputs were all computed at compile time need no code.
  std::vector<Node*> schedule;
  for (const auto& n : g.nodes()) {
    bool allKnown = n->numOutputs() > 0;
    for (Value* out : n->outputs()) allKnown = allKnown && known.count(out);
    if (allKnown) continue;
    for (Value* out : n->outputs()) known.erase(out);  // partially known: compute all
    for (Value* v : n->inputs())
      if (v) KILN_RETURN_IF_ERROR(checkStatic(v, "value"));
    for (Value* v : n->outputs()) KILN_RETURN_IF_ERROR(checkStatic(v, "value"));
    schedule.push_back(n.get());
  }
  ProgramEmitter emitter(g, p, known);
  KILN_RETURN_IF_ERROR(emitter.emitAll(schedule));
  emitter.emitOutputCopies();
  KILN_RETURN_IF_ERROR(emitter.plan());
  return p;
}

std::string symbolPrefixFor(const std::string& name) {
  std::string base = name;
  if (auto slash = base.find_last_of('/'); slash != std::string::npos)
    base = base.substr(slash + 1);
  if (auto dot = base.find('.'); dot != std::string::npos && dot > 0) base = base.substr(0, dot);
  return identifierFrom(base);
}

}  // namespace kiln
