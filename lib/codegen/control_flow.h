// Code generation for If, Loop and Scan: the program is flattened into steps (plain nodes, and
// the code before and after each subgraph of a control-flow node), with the lifetimes the
// memory plan needs and the statements that open and close branches and loops.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "kiln/ir/graph.h"
#include "kiln/ops/emit.h"
#include "kiln/support/status.h"

namespace kiln {

/// One step of the flattened program.
struct FlowStep {
  enum class Kind { Plain, Begin, End };
  Node* node = nullptr;
  Kind kind = Kind::Plain;
  int sub = 0;             ///< Begin/End: 0 = then_branch or body, 1 = else_branch
  bool runtimeIf = false;  ///< Begin/End of an If whose cond is read at run time
  int id = 0;              ///< Begin/End: number of the control-flow node (C++ names)
};

/// Where a value's buffer is needed: defined at step `def`, last read at `lastUse`.
struct FlowLifetimes {
  std::unordered_map<const Value*, int64_t> def, lastUse, uses;
};

/// A compile-time-known value, or null.
using KnownLookup = std::function<const Tensor*(const Value*)>;

/// The subgraph `sub` of a control-flow node (0: then_branch or body, 1: else_branch).
Graph* flowSubgraph(const Node& n, int sub);

/// True for If/Loop/Scan-like nodes whose subgraphs become control flow; the optimizer's fused
/// ops (domain "kiln") carry bodies their emitters turn into straight-line code instead.
bool isFlowNode(const Node& n);

/// The subgraphs code is generated for: both branches of an If (one when its cond is known),
/// the body of a Loop or Scan.
std::vector<Graph*> emittedSubgraphs(const Node& n, const KnownLookup& known);

/// True for an If branch that shape inference found cannot run with the compiled shapes (its
/// nodes have no types): its code is a run-time error.
bool isDeadBranch(const Graph& g);

/// Checks that code can be generated for a node with subgraphs (If, Loop, Scan with static
/// shapes); errors name the node and say what to do.
Status checkFlowNode(const Node& n, const KnownLookup& known);

/// The steps of `schedule`, descending into subgraphs in the order their code runs; `bodies`
/// gives the nodes emitted for each subgraph. An If whose cond is known emits one branch.
std::vector<FlowStep> flattenSchedule(const std::vector<Node*>& schedule,
                                      const std::map<const Graph*, std::vector<Node*>>& bodies,
                                      const KnownLookup& known);

/// Definition and last-read steps of every value the steps touch. A value defined before a
/// loop and read inside it stays live until the loop ends (the body runs again).
FlowLifetimes flowLifetimes(const std::vector<FlowStep>& steps);

/// Buffers of arbitrary values (subgraph inputs and outputs) for the control-flow statements.
class FlowHost {
 public:
  virtual ~FlowHost() = default;
  /// `T*` (writable) or `const T*` expression for the buffer of v.
  virtual std::string bufferOfValue(Value* v, bool writable) = 0;
};

/// Emits the statements of a Begin or End step through ctx (whose node is step.node).
/// Loops return KILN_ERR_DATA at run time after `maxLoopIterations` iterations.
Status emitFlowStep(const FlowStep& step, EmitContext& ctx, FlowHost& host,
                    int64_t maxLoopIterations);

}  // namespace kiln
