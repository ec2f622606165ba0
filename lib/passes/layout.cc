// Layout: regions of the graph that run faster channels-last (NHWC) on kiln's CPU kernels are
// rewritten to NHWC, with one Transpose per value entering or leaving a region.
//
// A region is a connected set of f32 rank-4 nodes that each have an NHWC form:
//   * Conv / kiln.FusedConv, depthwise (group == C == M) or 1x1 stride-1 unpadded, with
//     constant weights → kiln.NhwcConv (the weights keep ONNX's layout in the IR; the emitter
//     packs them at compile time: tap-major for depthwise, GEMM panels for 1x1);
//   * elementwise ops and kiln.Elementwise chains whose non-constant operands are rank 4: the
//     same op on permuted shapes (broadcasting commutes with a common permutation); constant
//     operands are permuted here, at compile time;
//   * GlobalAveragePool → ReduceMean over axes 1, 2 (keepdims).
// A cost model decides per region (see kDw*, kPointwise*, kTranspose*): what the region's convs
// save channels-last against what its boundary transposes cost. Only regions with a
// depthwise conv are taken: that is where NHWC was measured to pay. Each value of a converted
// region is annotated layout = "NHWC".
#include <algorithm>
#include <numeric>
#include <unordered_map>
#include <unordered_set>

#include "kiln/ops/fused.h"
#include "passes.h"

namespace kiln {
namespace {

constexpr int kToNhwc[4] = {0, 2, 3, 1};
constexpr int kToNchw[4] = {0, 3, 1, 2};

// Cost model, in nanoseconds, from MobileNetV2's kernels at 1 thread on the dev machine (the
// NCHW and NHWC profiles of the same model side by side; docs/passes.md#layout):
// * a depthwise conv saves per channel (the NCHW kernel zero-fills and scatters each
//   channel's phase planes: 70-200 ns measured) and per input element (the plane copy);
// * a 1x1 conv saves about a fifth of its time: the NHWC form reads the pixels in place as A
//   with the weights packed at compile time as B, the NCHW form packs the pixels at run time;
// * a transpose at the boundary costs per element moved: 0.35-0.45 ns within L2, 0.8-1.0 ns
//   through memory (PP-OCR det's 1.6M- and 2.5M-element ones).
constexpr double kDwSavedPerChannel = 100.0;
constexpr double kDwSavedPerInputElement = 0.3;
constexpr double kPointwiseSavedPerFlop = 0.0015;
constexpr double kTransposePerElementCached = 0.4;  // up to 1 MiB: in a core's L2
constexpr int64_t kTransposeCachedElements = int64_t(1) << 18;
constexpr double kTransposePerElement = 1.0;  // larger: both copies go through memory
constexpr size_t kMaxTrimmedNodes = 400;

enum class Kind { None, Depthwise, Pointwise, Eltwise, GlobalPool };

bool rank4F32(const Value* v) {
  return v && v->dtype() == DType::F32 && isStatic(v) && v->shape().rank() == 4;
}

Shape permutedShape(const std::vector<int64_t>& d, const int (&perm)[4]) {
  std::vector<int64_t> out;
  for (int p : perm) out.push_back(d[size_t(p)]);
  return Shape::ofStatic(out);
}

TensorType permutedType(const Value* v, const int (&perm)[4]) {
  return TensorType{v->dtype(), permutedShape(dimsOf(v), perm)};
}

Kind convKind(const Node& n) {
  const bool conv = (n.domain().empty() && n.opType() == "Conv") ||
                    (n.domain() == kKilnDomain && n.opType() == "FusedConv");
  if (!conv || !rank4F32(n.input(0)) || !rank4F32(n.output(0))) return Kind::None;
  const Tensor* w = constantOf(n.input(1));
  if (!w || w->dtype() != DType::F32 || w->rank() != 4) return Kind::None;
  if (n.input(2) && !constantOf(n.input(2))) return Kind::None;
  if (n.numInputs() > 3 && n.input(3) && !rank4F32(n.input(3))) return Kind::None;
  if (n.attrString("auto_pad", "NOTSET") != "NOTSET") return Kind::None;
  const auto x = dimsOf(n.input(0));
  const auto& wd = w->dims();
  const int64_t group = n.attrInt("group", 1);
  if (group == x[1] && wd[0] == x[1] && wd[1] == 1) return Kind::Depthwise;
  const auto strides = n.attrInts("strides", {1, 1});
  const auto pads = n.attrInts("pads", {0, 0, 0, 0});
  const bool unpadded = std::all_of(pads.begin(), pads.end(), [](int64_t p) { return p == 0; });
  if (group == 1 && wd[2] == 1 && wd[3] == 1 && unpadded &&
      std::all_of(strides.begin(), strides.end(), [](int64_t s) { return s == 1; }))
    return Kind::Pointwise;
  return Kind::None;
}

Kind kindOf(const Node& n) {
  if (Kind k = convKind(n); k != Kind::None) return k;
  if (n.domain().empty() && n.opType() == "GlobalAveragePool")
    return rank4F32(n.input(0)) && rank4F32(n.output(0)) ? Kind::GlobalPool : Kind::None;
  const bool eltwise = elementwiseFusable(n) || (n.domain() == kKilnDomain && n.opType() == "Elementwise");
  if (!eltwise || n.numOutputs() != 1 || !rank4F32(n.output(0))) return Kind::None;
  for (const Value* v : n.inputs()) {
    if (!v) continue;
    const Tensor* t = constantOf(v);
    if (t ? t->dtype() != DType::F32 || t->rank() > 4 : !rank4F32(v)) return Kind::None;
  }
  return Kind::Eltwise;
}

/// A constant operand of an elementwise op, permuted for NHWC: dims padded to rank 4 on the
/// left (broadcasting's alignment), then moved with the data.
Tensor permutedConstant(const Tensor& t) {
  std::vector<int64_t> d(4, 1);
  for (int64_t i = 0; i < t.rank(); ++i) d[size_t(4 - t.rank() + i)] = t.dims()[size_t(i)];
  std::vector<int64_t> nd = permutedShape(d, kToNhwc).staticDims();
  const float* src = t.data<float>();
  std::vector<float> out(size_t(t.numElements()));
  size_t o = 0;
  for (int64_t n = 0; n < nd[0]; ++n)
    for (int64_t h = 0; h < nd[1]; ++h)
      for (int64_t w = 0; w < nd[2]; ++w)
        for (int64_t c = 0; c < nd[3]; ++c) out[o++] = src[((n * d[1] + c) * d[2] + h) * d[3] + w];
  return Tensor::fromVector(DType::F32, nd, out);
}

/// Elements a transpose of `v` moves; 0 when it only moves dims of size 1 (a relabeling).
/// In double: the cost model never overflows, whatever the shapes.
double transposeElements(const Value* v) {
  auto d = dimsOf(v);
  const bool moves = d[1] > 1 && (d[2] > 1 || d[3] > 1);
  return moves ? double(d[0]) * double(d[1]) * double(d[2]) * double(d[3]) : 0.0;
}

struct Region {
  std::vector<Node*> nodes;  // topological order
  std::vector<Value*> entering, leaving;
};

class LayoutPass final : public Pass {
 public:
  std::string_view name() const override { return "layout"; }
  std::string_view summary() const override {
    return "rewrites regions of depthwise-separable convs to channels-last (kiln.NhwcConv) "
           "where the cost model says it pays, with one Transpose per boundary value";
  }
  Expected<RewriteStats> run(Graph& g, PassContext&) override {
    Rewriter rw(g);
    std::vector<Node*> order;
    std::unordered_map<const Node*, Kind> kind;
    for (const auto& n : g.nodes()) {
      Kind k = kindOf(*n);
      if (k == Kind::None) continue;
      order.push_back(n.get());
      kind[n.get()] = k;
    }
    // Regions: union-find over candidate nodes linked by the values between them.
    std::unordered_map<const Node*, const Node*> parent;
    for (Node* n : order) parent[n] = n;
    auto find = [&](const Node* n) {
      while (parent[n] != n) n = parent[n] = parent[parent[n]];
      return n;
    };
    for (Node* n : order)
      for (const Value* v : n->inputs()) {
        Node* p = v ? v->producer() : nullptr;
        if (p && kind.count(p) && !constantOf(v)) parent[find(n)] = find(p);
      }
    std::unordered_map<const Node*, Region> regions;
    std::vector<const Node*> roots;
    for (Node* n : order) {
      const Node* r = find(n);
      if (!regions.count(r)) roots.push_back(r);
      regions[r].nodes.push_back(n);
    }
    for (const Node* r : roots) {
      Region& region = regions[r];
      if (!evaluate(g, region, kind)) continue;
      KILN_RETURN_IF_ERROR(convert(g, region, kind, rw));
    }
    KILN_RETURN_IF_ERROR(g.sortTopologically());
    return rw.stats();
  }

 private:
  /// What NHWC saves on node `n` (ns).
  static double saving(const Node& n, Kind k) {
    const auto x = dimsOf(n.input(0));
    const double pixels = double(x[0]) * double(x[2]) * double(x[3]);
    if (k == Kind::Depthwise)
      return kDwSavedPerChannel * double(x[0]) * double(x[1]) +
             kDwSavedPerInputElement * pixels * double(x[1]);
    if (k == Kind::Pointwise)  // 2 * pixels * C * M flops
      return kPointwiseSavedPerFlop * 2.0 * pixels * double(x[1]) * double(dimsOf(n.output(0))[1]);
    return 0;
  }

  /// What a transpose of `v` costs (ns): per element, more once it no longer fits a core's L2.
  static double transposeCost(const Value* v) {
    const double e = transposeElements(v);
    return e * (e <= double(kTransposeCachedElements) ? kTransposePerElementCached
                                                      : kTransposePerElement);
  }

  /// Fills `region`'s boundary for its node set and returns the net cost of converting it:
  /// the boundary transposes minus what the nodes save (negative: NHWC pays).
  static double netCost(const Graph& g, Region& region, const std::unordered_map<const Node*, Kind>& kind,
                        const std::unordered_map<const Node*, double>& saved) {
    region.entering.clear();
    region.leaving.clear();
    std::unordered_set<const Node*> in(region.nodes.begin(), region.nodes.end());
    double cost = 0;
    for (Node* n : region.nodes) {
      for (size_t i = 0; i < n->numInputs(); ++i) {
        Value* v = n->input(i);
        if (!v || constantOf(v) || (i == 1 && kind.at(n) != Kind::Eltwise)) continue;
        if (v->producer() && in.count(v->producer())) continue;
        if (std::find(region.entering.begin(), region.entering.end(), v) != region.entering.end())
          continue;
        region.entering.push_back(v);
        cost += transposeCost(v);
      }
      Value* y = n->output(0);
      bool outside = std::find(g.outputs().begin(), g.outputs().end(), y) != g.outputs().end();
      for (const Use& u : y->uses()) outside = outside || !in.count(u.node);
      if (outside) {
        region.leaving.push_back(y);
        cost += transposeCost(y);
      }
      cost -= saved.at(n);
    }
    return cost;
  }

  /// Trims the component to the nodes worth converting: drops, one at a time, the node whose
  /// removal lowers the net cost most (an elementwise tail whose transposes cost more than
  /// its neighbours save, say), then decides. True when the rest pays and has a depthwise conv.
  static bool evaluate(const Graph& g, Region& region,
                       const std::unordered_map<const Node*, Kind>& kind) {
    std::unordered_map<const Node*, double> saved;
    for (Node* n : region.nodes) saved[n] = saving(*n, kind.at(n));
    double best = netCost(g, region, kind, saved);
    // Each sweep recomputes the cost once per node: cubic in the region's size, so components
    // past kMaxTrimmedNodes are judged whole (PP-OCR det's ~90 nodes trim in 2 ms).
    const bool trim = region.nodes.size() <= kMaxTrimmedNodes;
    for (bool improved = trim; improved && !region.nodes.empty();) {
      improved = false;
      size_t drop = 0;
      for (size_t i = 0; i < region.nodes.size(); ++i) {
        Region trial;
        trial.nodes = region.nodes;
        trial.nodes.erase(trial.nodes.begin() + long(i));
        const double c = netCost(g, trial, kind, saved);
        if (c < best - 1e-9) {
          best = c;
          drop = i;
          improved = true;
        }
      }
      if (improved) region.nodes.erase(region.nodes.begin() + long(drop));
    }
    netCost(g, region, kind, saved);  // the boundary of the final set
    const bool depthwise = std::any_of(region.nodes.begin(), region.nodes.end(),
                                       [&](const Node* n) { return kind.at(n) == Kind::Depthwise; });
    return depthwise && best < 0;
  }

  /// The conv producing `v` when it can write channels-last itself instead of through an
  /// entering Transpose (kiln.NhwcConv with nchw_input = 1: kiln_cpu::conv2d_pixrows_nhwc_f32):
  /// an f32 Conv / kiln.FusedConv with constant weights, group 1, no residual and no auto_pad,
  /// whose output only the region reads, with an im2col matrix of at most 2^24 floats
  /// (MobileNetV2's stem: 27 x 12544; PP-OCRv4 det's: 27 x 102400, 1344 + 349 us of conv and
  /// transpose -> 1271 at 1 thread; the kernel builds it a block at a time). Else null.
  static Node* nhwcWriter(const Graph& g, const Value* v, const std::unordered_set<const Node*>& in) {
    Node* p = v->producer();
    if (!p || !((p->opType() == "Conv" && p->domain().empty()) ||
                (p->opType() == "FusedConv" && p->domain() == kKilnDomain)))
      return nullptr;
    if (p->numInputs() < 2 || p->numInputs() > 3 || !constantOf(p->input(1)) ||
        p->attrInt("group", 1) != 1 || p->attrString("auto_pad", "NOTSET") != "NOTSET" ||
        v->type().dtype != DType::F32 || !isStatic(p->input(1)) || !isStatic(v))
      return nullptr;
    if (std::find(g.outputs().begin(), g.outputs().end(), v) != g.outputs().end()) return nullptr;
    for (const Use& u : v->uses())
      if (!in.count(u.node)) return nullptr;
    const auto w = dimsOf(p->input(1)), y = dimsOf(v);
    if (w.size() != 4 || y.size() != 4 || w[1] * w[2] * w[3] * y[2] * y[3] > (int64_t(1) << 24))
      return nullptr;
    return p;
  }

  static Status convert(const Graph& g, Region& region,
                        const std::unordered_map<const Node*, Kind>& kind, Rewriter& rw) {
    std::unordered_map<const Value*, Value*> nhwc;
    const std::unordered_set<const Node*> in(region.nodes.begin(), region.nodes.end());
    std::vector<Node*> writers;
    for (Value* v : region.entering) {
      if (Node* p = nhwcWriter(g, v, in)) {
        std::vector<Value*> ins;
        for (size_t i = 0; i < p->numInputs(); ++i) ins.push_back(p->input(i));
        KILN_ASSIGN_OR_RETURN(Node * c, rw.create("NhwcConv", kKilnDomain, ins,
                                                  {permutedType(v, kToNhwc)}, p->name(), {p}));
        for (const auto& [key, a] : p->attributes()) c->setAttr(key, a);
        c->setAttr("nchw_input", Attribute(int64_t(1)));
        c->output(0)->annotations().layout = "NHWC";
        nhwc[v] = c->output(0);
        writers.push_back(p);
        continue;
      }
      KILN_ASSIGN_OR_RETURN(Node * t, rw.create("Transpose", "", {v}, {permutedType(v, kToNhwc)},
                                                v->name() + "_nhwc", {}));
      t->setAttr("perm", Attribute(std::vector<int64_t>(std::begin(kToNhwc), std::end(kToNhwc))));
      t->output(0)->annotations().layout = "NHWC";
      nhwc[v] = t->output(0);
    }
    for (Node* n : region.nodes) {
      const Kind k = kind.at(n);
      std::vector<Value*> ins;
      for (size_t i = 0; i < n->numInputs(); ++i) {
        Value* v = n->input(i);
        if (v && nhwc.count(v)) {
          ins.push_back(nhwc.at(v));
        } else if (v && k == Kind::Eltwise && constantOf(v) && constantOf(v)->rank() > 0) {
          KILN_ASSIGN_OR_RETURN(Value * c, rw.constant(v->name() + "_nhwc", permutedConstant(*constantOf(v))));
          ins.push_back(c);
        } else {
          ins.push_back(v);
        }
      }
      std::string op = n->opType(), domain = n->domain();
      if (k == Kind::Depthwise || k == Kind::Pointwise) {
        op = "NhwcConv";
        domain = kKilnDomain;
      } else if (k == Kind::GlobalPool) {
        op = "ReduceMean";
        KILN_ASSIGN_OR_RETURN(Value * axes, rw.constant(n->name() + "_axes",
                                                        Tensor::fromVector(DType::I64, {2}, std::vector<int64_t>{1, 2})));
        ins.push_back(axes);
      }
      KILN_ASSIGN_OR_RETURN(Node * m, rw.create(op, domain, ins, {permutedType(n->output(0), kToNhwc)},
                                                n->name(), {n}));
      if (k == Kind::GlobalPool)
        m->setAttr("keepdims", Attribute(int64_t(1)));
      else
        for (const auto& [key, a] : n->attributes()) m->setAttr(key, a);
      m->output(0)->annotations().layout = "NHWC";
      nhwc[n->output(0)] = m->output(0);
    }
    for (Value* v : region.leaving) {
      KILN_ASSIGN_OR_RETURN(Node * t, rw.create("Transpose", "", {nhwc.at(v)}, {v->type()},
                                                v->name() + "_nchw", {}));
      t->setAttr("perm", Attribute(std::vector<int64_t>(std::begin(kToNchw), std::end(kToNchw))));
      rw.replaceAllUses(v, t->output(0));
    }
    for (auto it = region.nodes.rbegin(); it != region.nodes.rend(); ++it) {
      // A kiln.Elementwise body now belongs to the new node: erasing the old one must not
      // drop the body's reads.
      std::vector<std::string> bodies;
      for (const auto& [key, a] : (*it)->attributes())
        if (a.kind() == AttrKind::Graph) bodies.push_back(key);
      for (const std::string& key : bodies) (*it)->removeAttr(key);
      rw.erase(*it);
    }
    for (Node* p : writers) rw.erase(p);
    rw.notePattern("layout-nhwc-region");
    return Status();
  }
};

}  // namespace

std::unique_ptr<Pass> makeLayoutPass() { return std::make_unique<LayoutPass>(); }

}  // namespace kiln
