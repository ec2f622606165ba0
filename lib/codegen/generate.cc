// Lowering an inferred graph to a Program: fold known values, emit kernel calls, plan memory.
#include <algorithm>
#include <functional>
#include <map>
#include <unordered_map>

#include "control_flow.h"
#include "dynamic_shapes.h"
#include "graph_prep.h"
#include "kiln/memory/plan.h"
#include "kiln/memory/pools.h"
#include "kiln/memory/schedule.h"
#include "kiln/ops/infer.h"
#include "kiln/ops/registry.h"
#include "kiln/ops/fused.h"
#include "program.h"
#include "ref/common.h"
#include "source_text.h"

namespace kiln {
namespace {

int64_t align64(int64_t v) {
  return (v + 63) / 64 * 64;
}

/// How a Concat's inputs reach its output: each input is a byte range of the output, written
/// there by its producer (placed) or copied by the Concat.
struct ConcatPlan {
  struct Piece {
    size_t input;
    int64_t offset, bytes;
    bool placed;
  };
  const Node* node;
  std::vector<Piece> pieces;
};

class ProgramEmitter final : public EmitContext, public FlowHost {
 public:
  ProgramEmitter(Graph& g, Program& p, KnownValues& known) : g_(g), p_(p), known_(known) {
    for (size_t i = 0; i < g.inputs().size(); ++i) inputIndex_[g.inputs()[i]] = int(i);
    for (size_t i = 0; i < g.outputs().size(); ++i) outputIndex_.emplace(g.outputs()[i], int(i));
  }

  /// Emits every node of `schedule`. With `shareMemory`, values may share buffers: views
  /// (aliasOutput), in-place writes (outputInPlace) and Concat inputs written straight into
  /// their slice of the Concat's output.
  void setPools(std::vector<MemoryPool> pools) { pools_ = std::move(pools); }
  void setTuning(const std::map<std::string, std::string>* choices, int sweep) {
    tuning_ = choices;
    tuneSweep_ = sweep;
  }

  Status emitAll(const std::vector<FlowStep>& schedule, bool shareMemory, int64_t maxLoops) {
    shareMemory_ = shareMemory;
    // Lifetimes are known before emission so in-place decisions can see the last reader.
    FlowLifetimes life = flowLifetimes(schedule);
    defStep_ = std::move(life.def);
    lastUse_ = std::move(life.lastUse);
    uses_ = std::move(life.uses);
    if (shareMemory_)
      for (const FlowStep& st : schedule)
        if (st.kind == FlowStep::Kind::Plain) placeConcatInputs(st.node);
    for (size_t step = 0; step < schedule.size(); ++step) {
      node_ = schedule[step].node;
      step_ = int64_t(step);
      tuneKey_.clear();
      if (schedule[step].kind != FlowStep::Kind::Plain) {
        KILN_RETURN_IF_ERROR(emitFlowStep(schedule[step], *this, *this, maxLoops));
        continue;
      }
      if (auto it = concatCopies_.find(node_); it != concatCopies_.end()) {
        emitConcatRemainder(it->second);
        continue;
      }
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
    // A buffer lives from the first definition to the last read of any value stored in it.
    std::unordered_map<const Value*, std::pair<int64_t, int64_t>> range;
    auto widen = [&](const Value* v, int64_t first, int64_t last) {
      const Value* root = resolve(v).first;
      auto [it, fresh] = range.emplace(root, std::make_pair(first, last));
      if (!fresh) {
        it->second.first = std::min(it->second.first, first);
        it->second.second = std::max(it->second.second, last);
      }
    };
    for (const auto& [v, step] : defStep_) widen(v, step, step);
    for (const auto& [v, step] : lastUse_)
      if (defStep_.count(v)) widen(v, defStep_.at(v), step);
    std::vector<int64_t> room;  // per token: headroom before the value (outputShiftedOverInput)
    for (const auto& [id, v] : ordered) {
      room.push_back(headroom_.count(v) ? headroom_.at(v) : 0);
      int64_t bytes = plannedBytes(v) + room.back();
      auto [first, last] = range.count(v) ? range.at(v) : std::make_pair(int64_t(0), int64_t(0));
      requests.push_back({std::max<int64_t>(bytes, 1), first, std::max(first, last)});
      tokens.push_back("@V" + std::to_string(id) + "@");
      p_.bufferLabels.push_back(v->name());
      p_.unsharedBytes += align64(bytes);
    }
    for (size_t k = 0; k < scratch_.size(); ++k) {
      requests.push_back(
          {std::max<int64_t>(scratch_[k].first, 1), scratch_[k].second, scratch_[k].second});
      tokens.push_back("@S" + std::to_string(k) + "@");
      p_.bufferLabels.push_back(fmt::format("scratch of step {}", scratch_[k].second));
      p_.unsharedBytes += align64(scratch_[k].first);
    }
    // Resolved text of every placeholder: @V/@S → the offset, @BV/@BS → the pool's pointer.
    std::unordered_map<std::string, std::string> offsets;
    p_.buffers = requests;
    if (pools_.empty()) {
      KILN_ASSIGN_OR_RETURN(ArenaPlan plan, planArenaBest(requests, 64));
      p_.arenaBytes = plan.arenaBytes;
      p_.arenaLowerBound = plan.lowerBoundBytes;
      p_.planner = plan.planner;
      p_.bufferOffsets = plan.offsets;
      p_.poolNames = {"arena"};
      p_.poolBytes = {plan.arenaBytes};
      p_.bufferPools.assign(requests.size(), 0);
    } else {
      // Largest benefit first into the first (fastest) pool: a buffer read more often is
      // worth more there. Scratch is written and read once.
      std::unordered_map<const Value*, int64_t> reads;
      for (const auto& [v, n] : uses_) reads[resolve(v).first] += n;
      std::vector<int64_t> benefit;
      for (const auto& [id, v] : ordered) benefit.push_back(1 + (reads.count(v) ? reads.at(v) : 0));
      benefit.resize(requests.size(), 2);
      std::vector<std::string> safeLabels;  // names from the model, for a one-line message
      for (const auto& label : p_.bufferLabels) safeLabels.push_back(commentSafe(label));
      KILN_ASSIGN_OR_RETURN(PoolPlan plan, planPools(requests, benefit, pools_, safeLabels));
      p_.arenaBytes = plan.usedBytes[0];
      p_.arenaLowerBound = plan.lowerBoundBytes;
      p_.planner = fmt::format("pools: {}", fmt::join(plan.planners, ", "));
      p_.bufferOffsets = plan.offsets;
      for (const auto& pool : pools_) p_.poolNames.push_back(pool.name);
      p_.poolBytes = plan.usedBytes;
      p_.poolCapacities.clear();
      for (const auto& pool : pools_) p_.poolCapacities.push_back(pool.capacityBytes);
      p_.bufferPools = plan.pool;
    }
    for (size_t i = 0; i < tokens.size(); ++i) {
      offsets[tokens[i]] = std::to_string(p_.bufferOffsets[i] + (i < room.size() ? room[i] : 0));
      int k = p_.bufferPools[i];
      offsets["@B" + tokens[i].substr(1)] = k == 0 ? "arena" : fmt::format("pool{}", k);
    }
    for (KernelCall& c : p_.calls) {
      std::string out;
      const std::string& s = c.statement;
      for (size_t i = 0; i < s.size();) {
        if (s[i] == '@') {
          size_t end = s.find('@', i + 1);
          auto it = offsets.find(s.substr(i, end - i + 1));
          if (end != std::string::npos && it != offsets.end()) {
            out += it->second;
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

  std::string bufferOfValue(Value* v, bool writable) override { return bufferOf(v, writable); }

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
  bool aliasOutput(size_t out, size_t in, int64_t byteOffset) override {
    Value* o = out < node_->numOutputs() ? node_->output(out) : nullptr;
    Value* x = in < node_->numInputs() ? node_->input(in) : nullptr;
    if (!shareMemory_ || !o || !x || !ownsFreshBuffer(o)) return false;
    alias_[o] = {x, byteOffset};
    ++p_.viewCount;
    return true;
  }
  std::string outputOverInput(size_t out, size_t in) override {
    Value* x = in < node_->numInputs() ? node_->input(in) : nullptr;
    for (size_t i = 0; x && i < node_->numInputs(); ++i)
      if (i != in && node_->input(i) && resolve(node_->input(i)).first == resolve(x).first)
        return output(out);
    return outputInPlace(out, {in});
  }
  std::string outputShiftedOverInput(size_t out, size_t in, int64_t shiftBytes) override {
    Value* o = out < node_->numOutputs() ? node_->output(out) : nullptr;
    Value* x = in < node_->numInputs() ? node_->input(in) : nullptr;
    if (!shareMemory_ || !o || !x || shiftBytes < 0 || !ownsFreshBuffer(o) ||
        x->dtype() != o->dtype())
      return {};
    auto [root, offset] = resolve(x);
    if (offset != 0 || !isArenaValue(root) || headroom_.count(root) ||
        plannedBytes(root) != plannedBytes(o) || lastReadOfBuffer(root) != step_)
      return {};
    for (size_t i = 0; i < node_->numInputs(); ++i)
      if (i != in && node_->input(i) && resolve(node_->input(i)).first == root) return {};
    alias_[o] = {x, -shiftBytes};
    headroom_[root] = align64(shiftBytes);  // the input stays 64-byte aligned
    ++p_.inPlaceCount;
    ++p_.overShiftedInput;
    return bufferOf(o, true);
  }
  std::string outputInPlace(size_t out, std::initializer_list<size_t> candidates) override {
    Value* o = node_->output(out);
    if (!shareMemory_ || !ownsFreshBuffer(o)) return output(out);
    int64_t bytes = plannedBytes(o);
    for (size_t c : candidates) {
      Value* x = c < node_->numInputs() ? node_->input(c) : nullptr;
      if (!x || x->dtype() != o->dtype()) continue;
      auto [root, offset] = resolve(x);
      // Only a whole arena buffer that nothing reads after this op may be overwritten.
      if (offset != 0 || !isArenaValue(root) || plannedBytes(root) != bytes ||
          lastReadOfBuffer(root) != step_)
        continue;
      alias_[o] = {x, 0};
      ++p_.inPlaceCount;
      return bufferOf(o, true);
    }
    return output(out);
  }
  std::string tuned(const std::string& key, const std::vector<std::string>& candidates) override {
    // The key names the target and thread count too: a choice measured for one is not the
    // other's.
    std::string full = fmt::format("{} t{} {}", p_.target.name, p_.threads, key);
    std::string choice = candidates.front();
    auto known = [&](const std::string& c) {
      return std::find(candidates.begin(), candidates.end(), c) != candidates.end();
    };
    auto it = tuning_ ? tuning_->find(full) : std::map<std::string, std::string>::const_iterator();
    if (tuning_ && it != tuning_->end() && known(it->second))
      choice = it->second;
    else if (tuneSweep_ >= 0 && size_t(tuneSweep_) < candidates.size())
      choice = candidates[size_t(tuneSweep_)];
    p_.tunables[full] = candidates;
    p_.tuneChosen[full] = choice;
    tuneKey_ = full;
    return choice;
  }
  const Target& target() const override { return p_.target; }
  int threads() const override { return p_.threads; }
  std::string threadPool() override {
    if (p_.threads <= 1) return "static_cast<kiln_cpu::ThreadPool*>(nullptr)";
    p_.usesThreadPool = true;
    return "static_cast<kiln_cpu::ThreadPool*>(ctx->thread_pool)";
  }
  std::string derivedWeight(const Tensor& t) override {
    std::string key(reinterpret_cast<const char*>(t.bytes()), t.byteSize());
    key += dtypeName(t.dtype());
    auto it = derivedIndex_.find(key);
    size_t index = 0;
    if (it != derivedIndex_.end()) {
      index = it->second;
    } else {
      WeightSlot slot{t, align64(p_.weightsBytes)};
      p_.weightsBytes = slot.offset + int64_t(t.byteSize());
      index = p_.weights.size();
      derivedIndex_.emplace(std::move(key), index);
      p_.weights.push_back(std::move(slot));
    }
    return fmt::format("reinterpret_cast<const {}*>(w + {})", cTypeOf(t.dtype()),
                       p_.weights[index].offset);
  }
  std::string scratch(int64_t bytes) override {
    scratch_.push_back({bytes, step_});
    return fmt::format("(@BS{0}@ + @S{0}@)", scratch_.size() - 1);
  }
  void useHeader(const std::string& header) override { p_.headers.insert(header); }
  void call(const std::string& kernel, const std::string& statement) override {
    KernelCall c;
    c.kernel = kernel;
    c.opType = node_->opType();
    c.nodeNames = node_->annotations().sources.empty()
                      ? std::vector<std::string>{node_->name()}
                      : node_->annotations().sources;
    c.statement = statement;
    c.tuneKey = tuneKey_;
    c.tuneChoice = tuneKey_.empty() ? std::string() : p_.tuneChosen[tuneKey_];
    c.flops = estimateFlops(*node_);
    auto addBytes = [&c](const Value* v) {
      auto n = v ? v->shape().numElements() : std::nullopt;
      auto b = n ? dtypeStorageBytes(v->dtype(), *n) : std::nullopt;
      if (b) c.bytes += *b;
    };
    for (size_t i = 0; i < node_->numInputs(); ++i) addBytes(node_->input(i));
    for (size_t i = 0; i < node_->numOutputs(); ++i) addBytes(node_->output(i));
    p_.calls.push_back(std::move(c));
  }
  std::string constArray(const std::vector<int64_t>& values) override {
    p_.constants.push_back(constArrayDecl("c" + std::to_string(p_.constants.size()), values));
    return "c" + std::to_string(p_.constants.size() - 1);
  }
  std::string constFloatArray(const std::vector<float>& values) override {
    p_.constants.push_back(constArrayDecl("c" + std::to_string(p_.constants.size()), values));
    return "c" + std::to_string(p_.constants.size() - 1);
  }
  std::string runtimeDim(size_t out, size_t dim) override {
    const Value* o = out < node_->numOutputs() ? node_->output(out) : nullptr;
    if (!o || dim >= size_t(o->shape().rank()) || !o->shape()[dim].isBounded()) return {};
    auto [it, fresh] = runtimeDims_.emplace(std::make_pair(o, dim), p_.runtimeDimCount);
    if (fresh) ++p_.runtimeDimCount;
    return fmt::format("ctx->dyn[{}]", it->second);
  }
  /// Each graph output's data-dependent dims get the slot its op's code assigns.
  Status bindRuntimeDims() { return bindOutputRuntimeDims(g_, p_, runtimeDims_); }
  Error unsupported(const std::string& what) override {
    return makeError("{}: {} — remove or replace the op, or file an issue",
                     node_ ? node_->describe() : std::string("graph"), what);
  }

 private:
  std::string bufferOf(Value* v, bool writable) {
    std::string type(cTypeOf(v->dtype()));
    auto [root, off] = resolve(v);
    std::string plus = off ? fmt::format(" + {}", off) : std::string();
    if (known_.count(root) || root->isInitializer())
      return fmt::format("reinterpret_cast<const {}*>(w + {}{})", type, weightOffset(root), plus);
    if (auto it = inputIndex_.find(root); it != inputIndex_.end())
      return off ? fmt::format(
                       "reinterpret_cast<const {}*>(static_cast<const unsigned char*>("
                       "ctx->in[{}]){})",
                       type, it->second, plus)
                 : fmt::format("static_cast<const {}*>(ctx->in[{}])", type, it->second);
    if (auto it = outputIndex_.find(root); it != outputIndex_.end())
      return off ? fmt::format("reinterpret_cast<{}*>(static_cast<unsigned char*>(ctx->out[{}]){})",
                               type, it->second, plus)
                 : fmt::format("static_cast<{}*>(ctx->out[{}])", type, it->second);
    auto [it, fresh] = arenaIds_.emplace(root, int64_t(arenaIds_.size()));
    (void)fresh;
    return fmt::format("reinterpret_cast<{0}{1}*>(@BV{2}@ + @V{2}@{3})", writable ? "" : "const ",
                       type, it->second, plus);
  }

  /// The value whose buffer holds v, and v's byte offset in it (views chain).
  std::pair<const Value*, int64_t> resolve(const Value* v) const {
    int64_t offset = 0;
    for (auto it = alias_.find(v); it != alias_.end(); it = alias_.find(v)) {
      v = it->second.first;
      offset += it->second.second;
    }
    return {v, offset};
  }
  std::pair<Value*, int64_t> resolve(Value* v) const {
    auto [root, offset] = resolve(static_cast<const Value*>(v));
    return {const_cast<Value*>(root), offset};
  }

  bool isArenaValue(const Value* v) const {
    return !known_.count(v) && !v->isInitializer() && !inputIndex_.count(v) &&
           !outputIndex_.count(v);
  }
  /// True when `o` would get a buffer of its own: an arena value with no place chosen yet.
  bool ownsFreshBuffer(const Value* o) const { return isArenaValue(o) && !alias_.count(o); }
  /// The last step that reads any value stored in root's buffer.
  int64_t lastReadOfBuffer(const Value* root) const {
    int64_t last = lastUse_.count(root) ? lastUse_.at(root) : -1;
    for (const auto& [v, target] : alias_)
      if (resolve(v).first == root && lastUse_.count(v)) last = std::max(last, lastUse_.at(v));
    return last;
  }

  /// Concat along an axis with nothing but size-1 dims before it: each input is one contiguous
  /// byte range of the output, so a producer whose result only the Concat reads writes it
  /// there directly. The Concat then copies only the inputs that could not be placed.
  void placeConcatInputs(Node* n) {
    if (n->opType() != "Concat" || !n->domain().empty() || n->numOutputs() != 1) return;
    Value* y = n->output(0);
    if (!ownsFreshBuffer(y) || dtypeBits(y->dtype()) < 8) return;
    auto dims = y->shape().staticDims();
    int64_t rank = int64_t(dims.size()), axis = n->attrInt("axis", 0);
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank) return;
    for (int64_t d = 0; d < axis; ++d)
      if (dims[size_t(d)] != 1) return;
    ConcatPlan plan{n, {}};
    int64_t offset = 0;
    for (size_t i = 0; i < n->numInputs(); ++i) {
      Value* x = n->input(i);
      int64_t bytes = plannedBytes(x);
      // A producer in another graph (outside a loop body) runs a different number of times.
      bool place = x->producer() && x->producer()->owner() == n->owner() && defStep_.count(x) &&
                   ownsFreshBuffer(x) && uses_[x] == 1;
      if (place) alias_[x] = {y, offset};
      plan.pieces.push_back({i, offset, bytes, place});
      offset += bytes;
    }
    concatCopies_[n] = plan;
  }

  void emitConcatRemainder(const ConcatPlan& plan) {
    int placed = 0;
    for (const auto& piece : plan.pieces) {
      if (piece.placed) {
        ++placed;
        continue;
      }
      if (piece.bytes == 0) continue;
      call("memcpy", fmt::format("std::memcpy(reinterpret_cast<unsigned char*>({}) + {}, {}, {});",
                                 output(0), piece.offset, input(piece.input), piece.bytes));
    }
    p_.concatPlacedInputs += placed;
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
  const std::map<std::string, std::string>* tuning_ = nullptr;
  int tuneSweep_ = -1;
  std::string tuneKey_;  ///< the tunable signature of the node being emitted
  int64_t step_ = 0;
  std::unordered_map<const Value*, int> inputIndex_;
  std::unordered_map<const Value*, int> outputIndex_;  // first index of each output value
  std::unordered_map<const Value*, int64_t> arenaIds_;
  std::unordered_map<const Value*, size_t> weightIndex_;
  std::unordered_map<const Value*, int64_t> defStep_, lastUse_, uses_;
  /// Values stored inside another value's buffer: value -> (holder, byte offset).
  std::unordered_map<const Value*, std::pair<const Value*, int64_t>> alias_;
  std::unordered_map<const Value*, int64_t> headroom_;  // bytes planned before a value
  std::unordered_map<const Node*, ConcatPlan> concatCopies_;
  std::map<std::pair<const Value*, size_t>, int> runtimeDims_;  // data-dependent dim -> slot
  bool shareMemory_ = false;
  std::vector<MemoryPool> pools_;                     // --memory-pool; empty: one arena
  std::vector<std::pair<int64_t, int64_t>> scratch_;  // bytes, step
  std::map<std::string, size_t> derivedIndex_;        // derived weight bytes -> p_.weights
};

}  // namespace

Expected<Program> buildProgram(Model& model, const CompileOptions& options) {
  Graph& g = *model.graph;
  // The signature keeps the model's output names even where an output is rewired below (a
  // Constant output becomes an initializer with a fresh name).
  std::vector<std::string> outputNames;
  for (const Value* v : g.outputs()) outputNames.push_back(v->name());
  KILN_RETURN_IF_ERROR(constantsToInitializers(g));
  Program p;
  {
    InferOptions io;
    io.maxDims = options.maxDims;
    KILN_RETURN_IF_ERROR(inferShapes(g, OpRegistry::builtin(), io));
    PassRunOptions po = options.passes;
    po.context.options.maxDims = options.maxDims;
    auto names = options.passList.empty() ? pipelineFor(options.optLevel) : options.passList;
    KILN_ASSIGN_OR_RETURN(p.passRecords, runPasses(model, names, po));
  }
  KnownValues known;
  InferOptions inferOptions;
  inferOptions.maxDims = options.maxDims;
  for (const auto& [name, bound] : options.maxDims)
    if (!g.findValue(name))
      return makeError("--max-dim {}={}: the model has no value named '{}'", commentSafe(name),
                       bound, commentSafe(name));
  KILN_RETURN_IF_ERROR(inferShapes(g, OpRegistry::builtin(), inferOptions, &known));
  for (Value* v : g.initializers()) known.erase(v);  // initializers are weights already

  p.prefix = symbolPrefixFor(options.name);
  KILN_ASSIGN_OR_RETURN(p.target, targetByName(options.target));
  if (p.target.amxF32) p.target.amxPieces = options.amxPieces;
  p.threads = options.threads > 0 ? options.threads : (options.target == "host" ? p.target.cores : 1);
  if (p.threads > 64) return makeError("--threads {}: at most 64", p.threads);
  for (const Value* v : g.inputs()) {
    KILN_RETURN_IF_ERROR(checkStatic(v, "input"));
    p.inputs.push_back(signatureOf(v));
  }
  KnownLookup lookup = [&known](const Value* v) -> const Tensor* {
    if (v->isInitializer()) return v->initializer();
    auto it = known.find(v);
    return it == known.end() ? nullptr : &it->second;
  };
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    const Value* v = g.outputs()[i];
    // An If whose branches disagree explains a dynamic output better than the output can.
    if (v->producer() && isFlowNode(*v->producer()))
      KILN_RETURN_IF_ERROR(checkFlowNode(*v->producer(), lookup));
    // An output the data sizes: name its node and the --max-dim hint, not --shape.
    if (v->producer()) KILN_RETURN_IF_ERROR(checkDataDependentSizes(*v->producer()));
    KILN_RETURN_IF_ERROR(checkStatic(v, "output"));
    p.outputs.push_back(signatureOf(v));
    p.outputs.back().name = outputNames[i];
  }
  // The op order: the model's own, or (with optimization) one with a lower peak of live
  // bytes where branches allow. Nodes whose outputs were all computed at compile time need no
  // code.
  std::vector<const Node*> order;
  for (const auto& n : g.nodes()) order.push_back(n.get());
  if (options.optLevel >= 1) {
    auto before = schedulePeakBytes(g, order);
    auto better = scheduleForMemory(g, order);
    if (before.ok() && better.ok()) {
      auto after = schedulePeakBytes(g, *better);
      p.peakBeforeSchedule = *before;
      p.peakAfterSchedule = after.ok() ? *after : *before;
      order = std::move(*better);
    }
  }
  // The nodes that need code, in the main graph and (in their own order) in every subgraph.
  std::map<const Graph*, std::vector<Node*>> bodies;
  // `owner`: the control-flow node whose subgraph holds `nodes` (null for the main graph).
  auto checkValue = [](const Value* v, const Node* owner) -> Status {
    if (owner && !v->shape().isStatic())
      return makeError(
          "{}: value '{}' inside its subgraph has shape {} — its size depends on run-time "
          "data; code generation needs static shapes inside If/Loop/Scan bodies",
          owner->describe(), commentSafe(v->name()), toString(v->shape()));
    return checkStatic(v, "value");
  };
  std::function<Expected<std::vector<Node*>>(const std::vector<const Node*>&, const Node*)> select =
      [&](const std::vector<const Node*>& nodes,
          const Node* owner) -> Expected<std::vector<Node*>> {
    std::vector<Node*> schedule;
    for (const Node* cn : nodes) {
      Node* n = const_cast<Node*>(cn);
      bool allKnown = n->numOutputs() > 0;
      for (Value* out : n->outputs()) allKnown = allKnown && known.count(out);
      if (allKnown) continue;
      for (Value* out : n->outputs()) known.erase(out);  // partially known: compute all
      KILN_RETURN_IF_ERROR(checkDataDependentSizes(*n));
      for (Value* v : n->inputs())
        if (v) KILN_RETURN_IF_ERROR(checkValue(v, owner));
      if (isFlowNode(*n)) {
        KILN_RETURN_IF_ERROR(checkFlowNode(*n, lookup));
        for (Graph* sub : emittedSubgraphs(*n, lookup)) {
          if (isDeadBranch(*sub)) continue;  // a run-time error, no code
          for (const std::vector<Value*>* vs : {&sub->inputs(), &sub->outputs()})
            for (Value* v : *vs) KILN_RETURN_IF_ERROR(checkValue(v, n));
          std::vector<const Node*> inner;
          for (const auto& bn : sub->nodes()) inner.push_back(bn.get());
          KILN_ASSIGN_OR_RETURN(bodies[sub], select(inner, n));
        }
      }
      for (Value* v : n->outputs()) KILN_RETURN_IF_ERROR(checkValue(v, owner));
      schedule.push_back(n);
    }
    return schedule;
  };
  KILN_ASSIGN_OR_RETURN(std::vector<Node*> schedule, select(order, nullptr));
  ProgramEmitter emitter(g, p, known);
  emitter.setPools(options.memoryPools);
  emitter.setTuning(&options.tuning, options.tuneSweep);
  KILN_RETURN_IF_ERROR(emitter.emitAll(flattenSchedule(schedule, bodies, lookup),
                                       options.optLevel >= 1, options.maxLoopIterations));
  KILN_RETURN_IF_ERROR(emitter.bindRuntimeDims());
  emitter.emitOutputCopies();
  KILN_RETURN_IF_ERROR(emitter.plan());
  return p;
}

}  // namespace kiln
