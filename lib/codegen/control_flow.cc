// Code generation for If, Loop and Scan: flattening, lifetimes and the statements around
// subgraphs. Subgraph values live in the one arena like every other value; see control_flow.h.
#include "control_flow.h"

#include "kiln/ops/fused.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

namespace kiln {
namespace {

bool isOp(const Node& n, const char* op) {
  return n.domain().empty() && n.opType() == op;
}

std::vector<int64_t> dimsOf(const Value* v) {
  return v->shape().staticDims();
}

int64_t bytesOf(const Value* v) {
  return *dtypeStorageBytes(v->dtype(), *v->shape().numElements());
}

std::string shapeText(const Value* v) {
  return toString(v->shape());
}

/// Error naming the node.
template <typename... Args>
Error flowError(const Node& n, fmt::format_string<Args...> f, Args&&... args) {
  return makeError("{}: {}", n.describe(), fmt::format(f, std::forward<Args>(args)...));
}

bool sameStatic(const Value* a, const Value* b) {
  return a->shape().isStatic() && b->shape().isStatic() && dimsOf(a) == dimsOf(b);
}

/// The cond of an If as a compile-time bool, when known.
std::optional<bool> knownCond(const Node& n, const KnownLookup& known) {
  const Tensor* c = n.input(0) ? known(n.input(0)) : nullptr;
  if (!c || c->numElements() != 1) return std::nullopt;
  return c->intAt(0) != 0;
}

struct ScanLayout {
  int64_t numState = 0, numScanIn = 0, numScanOut = 0, seqLen = 0;
  std::vector<int64_t> inAxes, inDirs, outAxes, outDirs;
};

ScanLayout scanLayoutOf(const Node& n) {
  ScanLayout s;
  const Graph* body = flowSubgraph(n, 0);
  s.numScanIn = n.attrInt("num_scan_inputs", 0);
  s.numState = int64_t(n.numInputs()) - s.numScanIn;
  s.numScanOut = int64_t(body->outputs().size()) - s.numState;
  s.inAxes = n.attrInts("scan_input_axes", std::vector<int64_t>(size_t(s.numScanIn), 0));
  s.inDirs = n.attrInts("scan_input_directions", std::vector<int64_t>(size_t(s.numScanIn), 0));
  s.outAxes = n.attrInts("scan_output_axes", std::vector<int64_t>(size_t(s.numScanOut), 0));
  s.outDirs = n.attrInts("scan_output_directions", std::vector<int64_t>(size_t(s.numScanOut), 0));
  for (int64_t j = 0; j < s.numScanIn; ++j) {
    const Value* x = n.input(size_t(s.numState + j));
    int64_t rank = int64_t(x->shape().rank());
    int64_t& a = s.inAxes[size_t(j)];
    if (a < 0) a += rank;
    if (j == 0) s.seqLen = dimsOf(x)[size_t(a)];
  }
  for (int64_t k = 0; k < s.numScanOut && s.numState + k < int64_t(n.numOutputs()); ++k) {
    int64_t rank = int64_t(n.output(size_t(s.numState + k))->shape().rank());
    int64_t& a = s.outAxes[size_t(k)];
    if (a < 0) a += rank;
  }
  return s;
}

/// [outer, len, inner bytes] of v scanned along `axis`.
struct SeqView {
  int64_t outer = 1, len = 1, innerBytes = 1;
};
SeqView seqView(const Value* v, int64_t axis) {
  auto d = dimsOf(v);
  SeqView s;
  for (int64_t i = 0; i < axis; ++i) s.outer *= d[size_t(i)];
  s.len = d[size_t(axis)];
  s.innerBytes = dtypeBits(v->dtype()) / 8;
  for (size_t i = size_t(axis) + 1; i < d.size(); ++i) s.innerBytes *= d[i];
  return s;
}

Status checkIf(const Node& n, const KnownLookup& known) {
  std::vector<int> subs{0, 1};
  if (auto c = knownCond(n, known)) subs = {*c ? 0 : 1};
  for (int sub : subs) {
    const Graph* g = flowSubgraph(n, sub);
    if (isDeadBranch(*g)) continue;
    if (g->outputs().size() != n.numOutputs())
      return flowError(n, "{} has {} outputs for the node's {}", g->name(), g->outputs().size(),
                       n.numOutputs());
    for (size_t k = 0; k < n.numOutputs(); ++k)
      if (!sameStatic(g->outputs()[k], n.output(k)))
        return flowError(n,
                         "output {} ('{}') has shape {} in {} but {} for the node: branches "
                         "producing different or dynamic shapes are not supported yet — make "
                         "both branches produce the same static shape (e.g. with --shape)",
                         k, n.output(k)->name(), shapeText(g->outputs()[k]),
                         sub == 0 ? "then_branch" : "else_branch", shapeText(n.output(k)));
  }
  return Status();
}

Status checkLoop(const Node& n) {
  const Graph* body = flowSubgraph(n, 0);
  const size_t numCarried = n.numInputs() > 2 ? n.numInputs() - 2 : 0;
  if (body->inputs().size() != 2 + numCarried || body->outputs().size() < 1 + numCarried)
    return flowError(n, "the body has {} inputs and {} outputs for {} loop-carried values",
                     body->inputs().size(), body->outputs().size(), numCarried);
  if (n.numOutputs() < numCarried)
    return flowError(n,
                     "has fewer outputs ({}) than loop-carried values ({}), which code "
                     "generation does not support",
                     n.numOutputs(), numCarried);
  for (size_t k = 0; k < numCarried; ++k) {
    const Value* out = n.output(k);
    for (const Value* v : {n.input(2 + k), body->inputs()[2 + k], body->outputs()[1 + k]})
      if (!sameStatic(v, out))
        return flowError(n,
                         "loop-carried value {} ('{}') has shape {} before or inside the loop "
                         "but {} after it: values whose shape changes across iterations are "
                         "not supported — fix the shapes (e.g. with --shape)",
                         k, out->name(), shapeText(v), shapeText(out));
  }
  for (size_t k = numCarried; k < n.numOutputs() && 1 + k < body->outputs().size(); ++k) {
    const Value* out = n.output(k);
    const Value* slice = body->outputs()[1 + k];
    if (!out->shape().isStatic())
      return flowError(n,
                       "scan output '{}' needs a static number of iterations, but M is not a "
                       "compile-time constant or cond can stop the loop early — declare the "
                       "output's first dim in the model or make M a constant",
                       out->name());
    auto d = dimsOf(out);
    if (!slice->shape().isStatic() || d.empty() ||
        std::vector<int64_t>(d.begin() + 1, d.end()) != dimsOf(slice))
      return flowError(n, "scan output '{}' has shape {} but the body yields slices of {}",
                       out->name(), shapeText(out), shapeText(slice));
    if (dtypeBits(out->dtype()) % 8 != 0)
      return flowError(n, "scan output '{}' of type {} is not supported (sub-byte elements)",
                       out->name(), dtypeName(out->dtype()));
  }
  return Status();
}

Status checkScan(const Node& n) {
  const Graph* body = flowSubgraph(n, 0);
  const int64_t m = n.attrInt("num_scan_inputs", 0);
  if (m < 1 || m > int64_t(n.numInputs()))
    return flowError(n, "num_scan_inputs is {} for {} inputs", m, n.numInputs());
  ScanLayout s = scanLayoutOf(n);
  if (int64_t(body->inputs().size()) != s.numState + s.numScanIn || s.numScanOut < 0)
    return flowError(n, "the body has {} inputs and {} outputs for {} state variables",
                     body->inputs().size(), body->outputs().size(), s.numState);
  if (int64_t(n.numOutputs()) < s.numState)
    return flowError(n,
                     "has fewer outputs than state variables, which code generation does "
                     "not support");
  for (int64_t k = 0; k < s.numState; ++k) {
    const Value* out = n.output(size_t(k));
    for (const Value* v :
         {n.input(size_t(k)), body->inputs()[size_t(k)], body->outputs()[size_t(k)]})
      if (!sameStatic(v, out))
        return flowError(n,
                         "state variable {} ('{}') has shape {} before or inside the scan but {} "
                         "after it: shapes that change across iterations are not supported",
                         k, out->name(), shapeText(v), shapeText(out));
  }
  for (int64_t j = 0; j < s.numScanIn; ++j) {
    const Value* x = n.input(size_t(s.numState + j));
    const Value* slice = body->inputs()[size_t(s.numState + j)];
    int64_t a = s.inAxes[size_t(j)];
    if (a < 0 || a >= int64_t(x->shape().rank()) || !x->shape().isStatic())
      return flowError(n, "scan input '{}' has shape {} and axis {}", x->name(), shapeText(x), a);
    auto d = dimsOf(x);
    if (d[size_t(a)] != s.seqLen)
      return flowError(n, "scan inputs have different sequence lengths");
    d.erase(d.begin() + a);
    if (!slice->shape().isStatic() || d != dimsOf(slice) || dtypeBits(x->dtype()) % 8)
      return flowError(n, "scan input '{}' ({}) does not match the body's input '{}' ({})",
                       x->name(), shapeText(x), slice->name(), shapeText(slice));
  }
  for (int64_t k = 0; k < s.numScanOut && s.numState + k < int64_t(n.numOutputs()); ++k) {
    const Value* out = n.output(size_t(s.numState + k));
    const Value* slice = body->outputs()[size_t(s.numState + k)];
    int64_t a = s.outAxes[size_t(k)];
    if (!out->shape().isStatic() || a < 0 || a >= int64_t(out->shape().rank()) ||
        !slice->shape().isStatic() || dtypeBits(out->dtype()) % 8)
      return flowError(n, "scan output '{}' has shape {} (axis {}) from slices of {}", out->name(),
                       shapeText(out), a, shapeText(slice));
    auto d = dimsOf(out);
    bool lengthOk = d[size_t(a)] == s.seqLen;
    d.erase(d.begin() + a);
    if (!lengthOk || d != dimsOf(slice))
      return flowError(n, "scan output '{}' has shape {} but the body yields slices of {}",
                       out->name(), shapeText(out), shapeText(slice));
  }
  return Status();
}

/// True when a subgraph input is read: by a node or as one of the subgraph's outputs.
bool isRead(const Value* v, const Graph& g) {
  return !v->uses().empty() ||
         std::find(g.outputs().begin(), g.outputs().end(), v) != g.outputs().end();
}

std::string memcpyStatement(const std::string& dst, const std::string& src, int64_t bytes) {
  return bytes > 0 ? fmt::format("std::memcpy({}, {}, {});\n", dst, src, bytes) : std::string();
}

/// Statement text without its final newline (the artifact adds one), its lines indented
/// like the first (the artifact indents that one).
std::string trimmed(std::string s) {
  while (!s.empty() && s.back() == '\n') s.pop_back();
  std::string out;
  for (char ch : s) out += ch == '\n' ? std::string("\n  ") : std::string(1, ch);
  return out;
}

Status emitIf(const FlowStep& st, EmitContext& ctx, FlowHost& host) {
  const Node& n = *st.node;
  std::string s;
  if (st.kind == FlowStep::Kind::Begin) {
    if (!st.runtimeIf) return Status();  // cond known: the taken branch runs unconditionally
    s = st.sub == 0
            ? fmt::format("if (*reinterpret_cast<const unsigned char*>({}) != 0) {{", ctx.input(0))
            : "} else {";
    ctx.call("if", s);
    return Status();
  }
  const Graph* g = flowSubgraph(n, st.sub);
  if (isDeadBranch(*g))
    s += fmt::format("return KILN_ERR_DATA;  // {} cannot run with the compiled input shapes\n",
                     st.sub == 0 ? "then_branch" : "else_branch");
  else
    for (size_t k = 0; k < n.numOutputs(); ++k)
      s += memcpyStatement(ctx.output(k), host.bufferOfValue(g->outputs()[k], false),
                           bytesOf(n.output(k)));
  if (st.runtimeIf && st.sub == 1) s += "}";
  if (!trimmed(s).empty()) ctx.call(st.runtimeIf && st.sub == 1 ? "if" : "memcpy", trimmed(s));
  return Status();
}

Status emitLoop(const FlowStep& st, EmitContext& ctx, FlowHost& host, int64_t limit) {
  const Node& n = *st.node;
  Graph* body = flowSubgraph(n, 0);
  const size_t numCarried = n.numInputs() > 2 ? n.numInputs() - 2 : 0;
  const bool hasM = n.input(0) != nullptr, hasCond = n.numInputs() > 1 && n.input(1);
  const std::string i = fmt::format("kiln_i{}", st.id), m = fmt::format("kiln_m{}", st.id),
                    c = fmt::format("kiln_c{}", st.id);
  // Stacked scan outputs: their static first dim is the number of iterations the run must do.
  int64_t scanTrips = -1;
  for (size_t k = numCarried; k < n.numOutputs(); ++k) scanTrips = dimsOf(n.output(k))[0];
  std::string s;
  if (st.kind == FlowStep::Kind::Begin) {
    s += fmt::format("{{  // Loop, at most {} iterations (--max-loop-iterations)\n", limit);
    s += fmt::format("int64_t {} = 0;\n", i);
    if (hasM) {
      s += fmt::format("const int64_t {} = *{};\n", m, ctx.input(0));
      if (!hasCond) s += fmt::format("if ({} > {}) return KILN_ERR_DATA;\n", m, limit);
    }
    s += hasCond ? fmt::format("bool {} = *reinterpret_cast<const unsigned char*>({}) != 0;\n", c,
                               ctx.input(1))
                 : fmt::format("const bool {} = true;\n", c);
    for (size_t k = 0; k < numCarried; ++k)
      s += memcpyStatement(ctx.output(k), ctx.input(2 + k), bytesOf(n.output(k)));
    s += fmt::format("for (;; ++{}) {{\n", i);
    if (hasM) s += fmt::format("if ({} >= {}) break;\n", i, m);
    if (hasCond) s += fmt::format("if (!{}) break;\n", c);
    s += fmt::format("if ({} >= {}) return KILN_ERR_DATA;\n", i, limit);
    if (scanTrips >= 0) s += fmt::format("if ({} >= {}) return KILN_ERR_DATA;\n", i, scanTrips);
    if (isRead(body->inputs()[0], *body))
      s += fmt::format("*{} = {};\n", host.bufferOfValue(body->inputs()[0], true), i);
    if (isRead(body->inputs()[1], *body))
      s += fmt::format("*{} = {};\n", host.bufferOfValue(body->inputs()[1], true), c);
    for (size_t k = 0; k < numCarried; ++k)
      s += memcpyStatement(host.bufferOfValue(body->inputs()[2 + k], true), ctx.output(k),
                           bytesOf(n.output(k)));
    ctx.call("loop", trimmed(s));
    return Status();
  }
  if (hasCond)
    s += fmt::format("{} = *reinterpret_cast<const unsigned char*>({}) != 0;\n", c,
                     host.bufferOfValue(body->outputs()[0], false));
  for (size_t k = 0; k < numCarried; ++k)
    s += memcpyStatement(ctx.output(k), host.bufferOfValue(body->outputs()[1 + k], false),
                         bytesOf(n.output(k)));
  for (size_t k = numCarried; k < n.numOutputs() && 1 + k < body->outputs().size(); ++k) {
    Value* slice = body->outputs()[1 + k];
    int64_t bytes = bytesOf(slice);
    if (bytes > 0)
      s += fmt::format("std::memcpy(reinterpret_cast<unsigned char*>({}) + {} * {}, {}, {});\n",
                       ctx.output(k), i, bytes, host.bufferOfValue(slice, false), bytes);
  }
  s += "}\n";
  if (scanTrips >= 0) s += fmt::format("if ({} != {}) return KILN_ERR_DATA;\n", i, scanTrips);
  s += fmt::format("(void){};\n}}", c);
  ctx.call("loop", trimmed(s));
  return Status();
}

Status emitScan(const FlowStep& st, EmitContext& ctx, FlowHost& host) {
  const Node& n = *st.node;
  Graph* body = flowSubgraph(n, 0);
  ScanLayout L = scanLayoutOf(n);
  const std::string i = fmt::format("kiln_i{}", st.id);
  auto position = [&](int64_t reverse) {
    return reverse ? fmt::format("{} - {}", L.seqLen - 1, i) : i;
  };
  std::string s;
  if (st.kind == FlowStep::Kind::Begin) {
    ctx.useHeader("kiln_ref/scan.h");
    s += "{  // Scan\n";
    for (int64_t k = 0; k < L.numState; ++k)
      s += memcpyStatement(ctx.output(size_t(k)), ctx.input(size_t(k)),
                           bytesOf(n.output(size_t(k))));
    s += fmt::format("for (int64_t {0} = 0; {0} < {1}; ++{0}) {{\n", i, L.seqLen);
    for (int64_t k = 0; k < L.numState; ++k)
      s += memcpyStatement(host.bufferOfValue(body->inputs()[size_t(k)], true),
                           ctx.output(size_t(k)), bytesOf(n.output(size_t(k))));
    for (int64_t j = 0; j < L.numScanIn; ++j) {
      size_t in = size_t(L.numState + j);
      SeqView v = seqView(n.input(in), L.inAxes[size_t(j)]);
      s += fmt::format("kiln_ref::scan_slice_read({}, {}, {}, {}, {}, {});\n", ctx.input(in),
                       host.bufferOfValue(body->inputs()[in], true), v.outer, v.len, v.innerBytes,
                       position(L.inDirs[size_t(j)]));
    }
    ctx.call("kiln_ref::scan_slice_read", trimmed(s));
    return Status();
  }
  for (int64_t k = 0; k < L.numState; ++k)
    s += memcpyStatement(ctx.output(size_t(k)),
                         host.bufferOfValue(body->outputs()[size_t(k)], false),
                         bytesOf(n.output(size_t(k))));
  for (int64_t k = 0; k < L.numScanOut && L.numState + k < int64_t(n.numOutputs()); ++k) {
    size_t out = size_t(L.numState + k);
    SeqView v = seqView(n.output(out), L.outAxes[size_t(k)]);
    s += fmt::format("kiln_ref::scan_slice_write({}, {}, {}, {}, {}, {});\n",
                     host.bufferOfValue(body->outputs()[out], false), ctx.output(out), v.outer,
                     v.len, v.innerBytes, position(L.outDirs[size_t(k)]));
  }
  s += "}\n}";
  ctx.call("kiln_ref::scan_slice_write", trimmed(s));
  return Status();
}

}  // namespace

Graph* flowSubgraph(const Node& n, int sub) {
  const char* name = isOp(n, "If") ? (sub == 0 ? "then_branch" : "else_branch") : "body";
  const Attribute* a = n.attr(name);
  return a && a->kind() == AttrKind::Graph ? a->g().get() : nullptr;
}

bool isDeadBranch(const Graph& g) {
  for (const auto& n : g.nodes())
    for (const Value* v : n->outputs())
      if (v->dtype() == DType::Undefined) return true;
  return false;
}

std::vector<Graph*> emittedSubgraphs(const Node& n, const KnownLookup& known) {
  if (!isOp(n, "If")) return {flowSubgraph(n, 0)};
  if (auto c = knownCond(n, known)) return {flowSubgraph(n, *c ? 0 : 1)};
  return {flowSubgraph(n, 0), flowSubgraph(n, 1)};
}

Status checkFlowNode(const Node& n, const KnownLookup& known) {
  bool isIf = isOp(n, "If");
  if (!isIf && !isOp(n, "Loop") && !isOp(n, "Scan"))
    return flowError(n,
                     "code generation supports subgraphs only in If, Loop and Scan — "
                     "remove or replace the op, or file an issue");
  for (int sub = 0; sub < (isIf ? 2 : 1); ++sub)
    if (!flowSubgraph(n, sub)) return flowError(n, "a subgraph attribute is missing");
  if (isIf) return checkIf(n, known);
  return isOp(n, "Loop") ? checkLoop(n) : checkScan(n);
}

bool isFlowNode(const Node& n) { return !n.subgraphs().empty() && n.domain() != kKilnDomain; }

std::vector<FlowStep> flattenSchedule(const std::vector<Node*>& schedule,
                                      const std::map<const Graph*, std::vector<Node*>>& bodies,
                                      const KnownLookup& known) {
  std::vector<FlowStep> steps;
  int nextId = 0;
  std::function<void(const std::vector<Node*>&)> walk = [&](const std::vector<Node*>& nodes) {
    for (Node* n : nodes) {
      if (!isFlowNode(*n)) {
        steps.push_back({n, FlowStep::Kind::Plain, 0, false, 0});
        continue;
      }
      int id = nextId++;
      std::vector<int> subs{0};
      bool runtimeIf = false;
      if (isOp(*n, "If")) {
        auto c = knownCond(*n, known);
        runtimeIf = !c;
        subs = c ? std::vector<int>{*c ? 0 : 1} : std::vector<int>{0, 1};
      }
      for (int sub : subs) {
        steps.push_back({n, FlowStep::Kind::Begin, sub, runtimeIf, id});
        auto it = bodies.find(flowSubgraph(*n, sub));
        if (it != bodies.end()) walk(it->second);
        steps.push_back({n, FlowStep::Kind::End, sub, runtimeIf, id});
      }
    }
  };
  walk(schedule);
  return steps;
}

FlowLifetimes flowLifetimes(const std::vector<FlowStep>& steps) {
  FlowLifetimes life;
  // The steps of each node's first Begin and last End.
  std::unordered_map<const Node*, std::pair<int64_t, int64_t>> span;
  for (size_t s = 0; s < steps.size(); ++s)
    if (steps[s].kind != FlowStep::Kind::Plain) {
      auto [it, fresh] = span.emplace(steps[s].node, std::make_pair(int64_t(s), int64_t(s)));
      it->second.second = int64_t(s);
    }
  auto values = [&](const FlowStep& st, std::vector<Value*>& defs, std::vector<Value*>& reads) {
    const Node& n = *st.node;
    if (st.kind == FlowStep::Kind::Plain) {
      defs.assign(n.outputs().begin(), n.outputs().end());
      reads.assign(n.inputs().begin(), n.inputs().end());
      return;
    }
    const Graph* g = flowSubgraph(n, st.sub);
    const auto [first, last] = span.at(&n);
    bool loop = !isOp(n, "If");
    if (st.kind == FlowStep::Kind::Begin) {
      if (&st - steps.data() == first) {
        reads.assign(n.inputs().begin(), n.inputs().end());
        defs.assign(n.outputs().begin(), n.outputs().end());
      }
      defs.insert(defs.end(), g->inputs().begin(), g->inputs().end());
      return;
    }
    reads.assign(g->outputs().begin(), g->outputs().end());
    if (loop) reads.insert(reads.end(), g->inputs().begin(), g->inputs().end());
    if (&st - steps.data() == last)
      reads.insert(reads.end(), n.outputs().begin(), n.outputs().end());
  };
  std::vector<Value*> defs, reads;
  for (size_t s = 0; s < steps.size(); ++s) {
    defs.clear();
    reads.clear();
    values(steps[s], defs, reads);
    for (Value* v : defs)
      if (v) life.def.emplace(v, int64_t(s));
  }
  // Loops open at each step: a value defined before a loop and read in it must survive until
  // the loop's last step, since every iteration reads it again.
  std::vector<std::pair<int64_t, int64_t>> open;
  for (size_t s = 0; s < steps.size(); ++s) {
    const FlowStep& st = steps[s];
    bool loop = st.kind != FlowStep::Kind::Plain && !isOp(*st.node, "If");
    if (loop && st.kind == FlowStep::Kind::End) open.pop_back();
    defs.clear();
    reads.clear();
    values(st, defs, reads);
    for (Value* v : reads) {
      if (!v) continue;
      int64_t last = int64_t(s);
      auto d = life.def.find(v);
      int64_t defined = d == life.def.end() ? -1 : d->second;
      for (const auto& [b, e] : open)
        if (defined < b) last = std::max(last, e);
      auto [it, fresh] = life.lastUse.emplace(v, last);
      if (!fresh) it->second = std::max(it->second, last);
      ++life.uses[v];
    }
    if (loop && st.kind == FlowStep::Kind::Begin) open.push_back(span.at(st.node));
  }
  return life;
}

Status emitFlowStep(const FlowStep& step, EmitContext& ctx, FlowHost& host,
                    int64_t maxLoopIterations) {
  const Node& n = *step.node;
  if (isOp(n, "If")) return emitIf(step, ctx, host);
  if (isOp(n, "Loop")) return emitLoop(step, ctx, host, maxLoopIterations);
  return emitScan(step, ctx, host);
}

}  // namespace kiln
