// Control-flow ops: If, Loop and Scan, whose types come from inferring their subgraphs.
#include "dim_math.h"
#include "family_registration.h"

namespace kiln {
namespace {

using Types = Expected<std::vector<TensorType>>;

Expected<Graph*> subgraphAttr(const InferContext& ctx, const char* name) {
  const Attribute* a = ctx.node().attr(name);
  if (!a || a->kind() != AttrKind::Graph || !a->g())
    return ctx.error("graph attribute '{}' is missing", name);
  return a->g().get();
}

// Types inferred in an earlier round would act as declarations in the next one and pin
// shapes that no longer hold, so a re-inferred body starts from scratch.
void forgetTypes(Graph& g) {
  for (Value* v : g.inputs()) v->setType(TensorType{});
  for (const auto& n : g.nodes()) {
    for (Value* v : n->outputs()) v->setType(TensorType{});
    for (Graph* sub : n->subgraphs()) forgetTypes(*sub);
  }
}

struct LoopBodyTypes {
  std::vector<TensorType> carried;  ///< final loop-carried types (initial joined with body)
  std::vector<TensorType> outputs;  ///< the body's output types at the fixpoint
};

// Infers a loop body whose inputs are `before`, the loop-carried values, then `after`; body
// outputs [outOffset, outOffset + carried.size()) feed the carried inputs back. Carried types
// are widened (joined with the body's outputs) until they no longer change, so they hold for
// every iteration, including none.
Expected<LoopBodyTypes> inferLoopBody(const InferContext& ctx, Graph& body,
                                      const std::vector<TensorType>& before,
                                      std::vector<TensorType> carried,
                                      const std::vector<TensorType>& after, size_t outOffset) {
  constexpr int kMaxRounds = 16;
  for (int round = 0; round <= kMaxRounds; ++round) {
    if (round == kMaxRounds)  // no fixpoint yet: give up on ranks, which always converges
      for (TensorType& t : carried) t.shape = Shape::unknownRank();
    std::vector<TensorType> ins = before;
    ins.insert(ins.end(), carried.begin(), carried.end());
    ins.insert(ins.end(), after.begin(), after.end());
    if (round > 0) forgetTypes(body);
    KILN_ASSIGN_OR_RETURN(auto outs, ctx.inferSubgraph(body, ins));
    if (outs.size() < outOffset + carried.size())
      return ctx.error("body has {} outputs, expected at least {}", outs.size(),
                       outOffset + carried.size());
    bool stable = true;
    for (size_t i = 0; i < carried.size(); ++i) {
      const TensorType& o = outs[outOffset + i];
      if (o.dtype != carried[i].dtype)
        return ctx.error("loop-carried value {} enters the body as {} but leaves it as {}", i,
                         dtypeName(carried[i].dtype), dtypeName(o.dtype));
      Shape joined = joinShape(carried[i].shape, o.shape);
      if (!(joined == carried[i].shape)) {
        stable = false;
        carried[i].shape = std::move(joined);
      }
    }
    if (stable) return LoopBodyTypes{std::move(carried), std::move(outs)};
  }
  return ctx.error("loop body types did not converge");
}

struct IfOp {
  static constexpr std::string_view kName = "If";
  static OpSchema schema() {
    return {1,
            1,
            0,
            -1,
            {{"then_branch", AttrKind::Graph, true}, {"else_branch", AttrKind::Graph, true}}};
  }
  static Types inferTypes(const InferContext& ctx) {
    if (ctx.in(0).dtype != DType::Bool)
      return ctx.error("cond must be bool, got {}", dtypeName(ctx.in(0).dtype));
    if (auto n = ctx.in(0).shape.numElements(); n && *n != 1)
      return ctx.error("cond must hold one element, it has {}", *n);
    KILN_ASSIGN_OR_RETURN(Graph * thenG, subgraphAttr(ctx, "then_branch"));
    KILN_ASSIGN_OR_RETURN(Graph * elseG, subgraphAttr(ctx, "else_branch"));
    // A condition known at compile time selects one branch; the other never runs and need not
    // even be valid for these shapes (exporters guard rank-specific code this way).
    if (const Tensor* c = ctx.value(0); c && c->numElements() == 1) {
      KILN_ASSIGN_OR_RETURN(auto taken, ctx.inferSubgraph(c->intAt(0) ? *thenG : *elseG, {}));
      if (taken.size() != ctx.node().numOutputs())
        return ctx.error("the taken branch has {} outputs but the node has {}", taken.size(),
                         ctx.node().numOutputs());
      return taken;
    }
    auto thenR = ctx.inferSubgraph(*thenG, {});
    auto elseR = ctx.inferSubgraph(*elseG, {});
    if (!thenR.ok() && !elseR.ok()) return thenR.error();
    const size_t n = ctx.node().numOutputs();
    if (!thenR.ok() || !elseR.ok()) {
      // One branch cannot run with these input shapes (exporters guard shape-specific code
      // with a runtime cond, e.g. Silero VAD's sample rate, and declare the shapes that branch
      // expects): it keeps no types, code generation makes it fail at run time
      // (KILN_ERR_DATA), and the node takes the other branch's types.
      forgetTypes(thenR.ok() ? *elseG : *thenG);
      auto& live = thenR.ok() ? thenR : elseR;
      if (live->size() != n)
        return ctx.error("a branch has {} outputs but the node has {}", live->size(), n);
      return std::move(*live);
    }
    auto& thenT = *thenR;
    auto& elseT = *elseR;
    if (thenT.size() != n || elseT.size() != n)
      return ctx.error("the branches have {} and {} outputs but the node has {}", thenT.size(),
                       elseT.size(), n);
    std::vector<TensorType> out;
    for (size_t i = 0; i < n; ++i) {
      if (thenT[i].dtype != elseT[i].dtype)
        return ctx.error("output {} is {} in then_branch but {} in else_branch", i,
                         dtypeName(thenT[i].dtype), dtypeName(elseT[i].dtype));
      out.push_back({thenT[i].dtype, joinShape(thenT[i].shape, elseT[i].shape)});
    }
    return out;
  }
};

void collectBodyValues(Graph& g, std::vector<Value*>& out) {
  for (const auto& n : g.nodes()) {
    for (Value* v : n->outputs()) out.push_back(v);
    for (Graph* sub : n->subgraphs()) collectBodyValues(*sub, out);
  }
}

bool hasDynamicValue(Graph& body) {
  std::vector<Value*> values;
  collectBodyValues(body, values);
  for (const Value* v : values)
    if (!v->shape().isStatic()) return true;
  return false;
}

// A Loop whose scan outputs fix its iteration count (`trips`, which generated code checks at
// run time) runs its body for iterations 0..trips-1 only. Shapes that depend on the iteration
// number alone (a Slice from i to i + 1) are then found by inferring the body once per
// iteration with i known, the carried values at their initial types `carried`. When every
// iteration returns the carried values at those same types (so by induction they hold for
// all), the body keeps the shapes all iterations agree on and true is returned. Otherwise the
// body is left untyped and false is returned (the caller infers it again).
// The iteration number is bound through an initializer per iteration: they stay in the body,
// unused, so no inferred value refers to a removed one.
Expected<bool> specializeByIteration(const InferContext& ctx, Graph& body,
                                     const std::vector<TensorType>& before,
                                     const std::vector<TensorType>& carried, int64_t trips) {
  Value* iter = body.inputs()[0];
  std::vector<TensorType> ins = before;
  ins.insert(ins.end(), carried.begin(), carried.end());
  std::vector<Value*> values;
  collectBodyValues(body, values);
  std::vector<std::optional<TensorType>> agreed(values.size());
  std::vector<bool> consistent(values.size(), true);
  bool holds = !iter->uses().empty();
  for (int64_t i = 0; i < trips && holds; ++i) {
    KILN_ASSIGN_OR_RETURN(Value * known, body.addInitializer(body.uniqueName("kiln_iteration"),
                                                             Tensor::scalar(DType::I64, i)));
    body.replaceAllUsesWith(iter, known);
    forgetTypes(body);
    auto outs = ctx.inferSubgraph(body, ins);
    body.replaceAllUsesWith(known, iter);
    holds = outs.ok() && outs->size() >= 1 + carried.size();
    for (size_t k = 0; holds && k < carried.size(); ++k)
      holds = (*outs)[1 + k] == carried[k] && carried[k].shape.isStatic();
    for (size_t k = 0; holds && k < values.size(); ++k) {
      const TensorType& t = values[k]->type();
      if (!t.shape.isStatic() || (agreed[k] && !(*agreed[k] == t))) consistent[k] = false;
      agreed[k] = t;
    }
  }
  forgetTypes(body);
  if (!holds) return false;
  // Infer once more without the iteration number, so no value known in one iteration stays
  // known, then pin the shapes every iteration agreed on.
  KILN_RETURN_IF_ERROR(ctx.inferSubgraph(body, ins).status());
  for (size_t k = 0; k < values.size(); ++k)
    if (consistent[k] && agreed[k] && !values[k]->shape().isStatic() &&
        agreed[k]->dtype == values[k]->dtype())
      values[k]->setType(*agreed[k]);
  return true;
}

/// The longest loop whose body is inferred once per iteration (specializeByIteration).
constexpr int64_t kMaxSpecializedTrips = 64;

struct LoopOp {
  static constexpr std::string_view kName = "Loop";
  static OpSchema schema() { return {0, -1, 0, -1, {{"body", AttrKind::Graph, true}}}; }
  static Types inferTypes(const InferContext& ctx) {
    if (ctx.has(0) && ctx.in(0).dtype != DType::I64)
      return ctx.error("M (trip count) must be i64, got {}", dtypeName(ctx.in(0).dtype));
    if (ctx.has(1) && ctx.in(1).dtype != DType::Bool)
      return ctx.error("cond must be bool, got {}", dtypeName(ctx.in(1).dtype));
    KILN_ASSIGN_OR_RETURN(Graph * body, subgraphAttr(ctx, "body"));
    std::vector<TensorType> carried;
    for (size_t i = 2; i < ctx.numInputs(); ++i) {
      if (!ctx.has(i)) return ctx.error("loop-carried input {} is missing", i);
      carried.push_back(ctx.in(i));
    }
    const size_t numCarried = carried.size();
    const std::vector<TensorType> initialCarried = carried;
    std::vector<TensorType> before{{DType::I64, Shape::scalar()}, {DType::Bool, Shape::scalar()}};
    KILN_ASSIGN_OR_RETURN(auto r, inferLoopBody(ctx, *body, before, std::move(carried), {}, 1));
    if (r.outputs[0].dtype != DType::Bool)
      return ctx.error("the body's first output (cond) must be bool, got {}",
                       dtypeName(r.outputs[0].dtype));
    const size_t numScan = r.outputs.size() - 1 - numCarried;
    if (ctx.node().numOutputs() > numCarried + numScan)
      return ctx.error("has {} outputs but the body yields {} carried and {} scan outputs",
                       ctx.node().numOutputs(), numCarried, numScan);
    // The trip count is exactly M only when no condition can stop the loop early.
    Dim trips = Dim::unknown();
    if (auto m = knownScalar(ctx, 0); m && !ctx.has(1))
      trips = Dim::known(std::max<int64_t>(*m, 0));
    // Scan outputs stack one slice per iteration: a static stacked size (M, or the model's
    // declaration) is the number of iterations the generated code will insist on.
    std::optional<int64_t> stacked =
        trips.isStatic() ? std::optional<int64_t>(trips.value) : std::nullopt;
    if (numScan > 0 && ctx.node().numOutputs() > numCarried) {
      const Shape& declared = ctx.node().output(numCarried)->shape();
      if (!stacked && declared.rankKnown() && declared.rank() > 0 && declared[0].isStatic())
        stacked = declared[0].value;
    }
    if (stacked && *stacked > 0 && *stacked <= kMaxSpecializedTrips && hasDynamicValue(*body)) {
      KILN_ASSIGN_OR_RETURN(bool done,
                            specializeByIteration(ctx, *body, before, initialCarried, *stacked));
      if (done) {
        r.carried = initialCarried;
        for (size_t i = 0; i < r.outputs.size(); ++i) r.outputs[i] = body->outputs()[i]->type();
      } else {
        std::vector<TensorType> ins = before;
        ins.insert(ins.end(), r.carried.begin(), r.carried.end());
        KILN_RETURN_IF_ERROR(ctx.inferSubgraph(*body, ins).status());
      }
    }
    std::vector<TensorType> out = std::move(r.carried);
    for (size_t k = 0; k < numScan; ++k) {
      TensorType t = r.outputs[1 + numCarried + k];
      if (t.shape.rankKnown()) t.shape.dims().insert(t.shape.dims().begin(), trips);
      out.push_back(std::move(t));
    }
    return out;
  }
};

struct ScanOp {
  static constexpr std::string_view kName = "Scan";
  static OpSchema schema() {
    return {1,
            -1,
            1,
            -1,
            {{"body", AttrKind::Graph, true},
             {"num_scan_inputs", AttrKind::Int, true},
             {"scan_input_directions", AttrKind::Ints},
             {"scan_input_axes", AttrKind::Ints},
             {"scan_output_directions", AttrKind::Ints},
             {"scan_output_axes", AttrKind::Ints}}};
  }
  static Types inferTypes(const InferContext& ctx) {
    const Node& node = ctx.node();
    const int64_t m = node.attrInt("num_scan_inputs", 0), total = int64_t(ctx.numInputs());
    if (m < 1 || m > total)
      return ctx.error("num_scan_inputs is {} but the node has {} inputs", m, total);
    const int64_t numState = total - m;
    auto inAxes = node.attrInts("scan_input_axes", std::vector<int64_t>(size_t(m), 0));
    if (int64_t(inAxes.size()) != m)
      return ctx.error("scan_input_axes has {} entries for {} scan inputs", inAxes.size(), m);
    if (node.hasAttr("scan_input_directions") &&
        int64_t(node.attrInts("scan_input_directions").size()) != m)
      return ctx.error("scan_input_directions needs one entry per scan input ({})", m);
    KILN_ASSIGN_OR_RETURN(Graph * body, subgraphAttr(ctx, "body"));
    std::vector<TensorType> states, slices;
    for (int64_t i = 0; i < total; ++i)
      if (!ctx.has(size_t(i))) return ctx.error("input {} is missing", i);
    for (int64_t i = 0; i < numState; ++i) states.push_back(ctx.in(size_t(i)));
    // Every scan input is sliced along its axis; the slices' count is the sequence length.
    Dim seqLen = Dim::unknown();
    bool seqSet = false;
    for (int64_t j = 0; j < m; ++j) {
      TensorType t = ctx.in(size_t(numState + j));
      if (t.shape.rankKnown()) {
        KILN_ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(ctx, inAxes[size_t(j)], t.shape.rank()));
        Dim len = t.shape[size_t(axis)];
        auto u = seqSet ? unifyDim(seqLen, len) : std::optional<Dim>(len);
        if (!u) return ctx.error("scan inputs have different sequence lengths");
        seqLen = *u;
        seqSet = true;
        t.shape.dims().erase(t.shape.dims().begin() + axis);
      }
      slices.push_back(std::move(t));
    }
    KILN_ASSIGN_OR_RETURN(auto r, inferLoopBody(ctx, *body, {}, std::move(states), slices, 0));
    const int64_t numScanOut = int64_t(r.outputs.size()) - numState;
    if (int64_t(node.numOutputs()) > numState + numScanOut)
      return ctx.error("has {} outputs but the body yields {}", node.numOutputs(),
                       r.outputs.size());
    auto outAxes = node.attrInts("scan_output_axes", std::vector<int64_t>(size_t(numScanOut), 0));
    if (int64_t(outAxes.size()) != numScanOut)
      return ctx.error("scan_output_axes has {} entries for {} scan outputs", outAxes.size(),
                       numScanOut);
    if (node.hasAttr("scan_output_directions") &&
        int64_t(node.attrInts("scan_output_directions").size()) != numScanOut)
      return ctx.error("scan_output_directions needs one entry per scan output ({})", numScanOut);
    std::vector<TensorType> out = std::move(r.carried);
    for (int64_t k = 0; k < numScanOut; ++k) {
      TensorType t = r.outputs[size_t(numState + k)];
      if (t.shape.rankKnown()) {
        KILN_ASSIGN_OR_RETURN(int64_t axis,
                              normalizeAxis(ctx, outAxes[size_t(k)], t.shape.rank() + 1));
        t.shape.dims().insert(t.shape.dims().begin() + axis, seqLen);
      }
      out.push_back(std::move(t));
    }
    return out;
  }
};

}  // namespace

void registerControlFlowOps(OpRegistry& r) {
  r.add<IfOp>();
  r.add<LoopOp>();
  r.add<ScanOp>();
}

}  // namespace kiln
