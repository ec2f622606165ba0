// fuse-nhwc-expand: a 1x1 kiln.NhwcConv whose output only feeds a depthwise kiln.NhwcConv
// becomes one kiln.NhwcExpandDw node (kernels/cpu/conv_nhwc_fused.h), which computes the
// expanded tensor band by band in a per-thread buffer instead of storing it. This is
// MobileNetV2's inverted residual block: the 1x1 conv multiplies the channels by 6, and at
// 112x112 and 56x56 the expanded tensor (4.8 MB, 1.8 MB) goes through memory twice unfused.
//
// Taken when (both convs as the layout pass makes them):
//   * the 1x1 conv is pointwise (1x1, stride 1, no pads, group 1), with bias, no residual,
//     its output read by the depthwise conv alone (not a graph output);
//   * the depthwise conv (group == C == M) has a bias and no residual;
//   * the expanded tensor is at least kMinExpandedBytes: smaller ones stay in L2 between the
//     two kernels anyway, and the fused kernel's bands would leave a small image's rows to too
//     few threads (kiln bench --profile on MobileNetV2: the 28x28 blocks and below gain
//     nothing).
// The result is bit-identical to the unfused pair (the kernel's tests check it).
#include "kiln/ops/fused.h"
#include "passes.h"

namespace kiln {
namespace {

constexpr int64_t kMinExpandedBytes = int64_t(1) << 20;

/// A 1x1 kiln.NhwcConv on channels-last input: pointwise (1x1, stride 1, no pads, group 1),
/// with bias and constant weights; with a residual (input 3) only where `residual` allows it.
bool pointwise(const Node& n, bool residual) {
  if (n.opType() != "NhwcConv" || n.domain() != kKilnDomain || n.numInputs() < 3 ||
      n.numInputs() > (residual ? 4 : 3) || !n.input(2) || !constantOf(n.input(1)) ||
      !isStatic(n.input(1)) || n.attrInt("nchw_input", 0) != 0)
    return false;
  const auto w = dimsOf(n.input(1));
  auto all = [&](const char* key, int64_t v) {
    for (int64_t x : n.attrInts(key, {}))
      if (x != v) return false;
    return true;
  };
  return w.size() == 4 && w[2] == 1 && w[3] == 1 && n.attrInt("group", 1) == 1 &&
         all("strides", 1) && all("pads", 0) && all("dilations", 1) &&
         n.attrString("auto_pad", "NOTSET") == "NOTSET";
}

bool depthwiseNoResidual(const Node& n) {
  if (n.opType() != "NhwcConv" || n.domain() != kKilnDomain || n.numInputs() != 3 ||
      !n.input(2) || !constantOf(n.input(1)) || !isStatic(n.input(0)) ||
      !isStatic(n.input(1)))
    return false;
  const auto x = dimsOf(n.input(0)), w = dimsOf(n.input(1));
  return x.size() == 4 && w.size() == 4 && n.attrInt("group", 1) == x[3] && w[0] == x[3] &&
         w[1] == 1;
}

class FuseNhwcExpandPass final : public Pass {
 public:
  std::string_view name() const override { return "fuse-nhwc-expand"; }
  std::string_view summary() const override {
    return "fuses a channels-last 1x1 conv into the depthwise conv that alone reads it "
           "(kiln.NhwcExpandDw) where the expanded tensor is at least 1 MiB";
  }
  Expected<RewriteStats> run(Graph& g, PassContext&) override {
    Rewriter rw(g);
    std::vector<Node*> dws;
    for (const auto& n : g.nodes())
      if (depthwiseNoResidual(*n)) dws.push_back(n.get());
    for (Node* dw : dws) {
      Value* e = dw->input(0);
      Node* pw = e->producer();
      if (!pw || !pointwise(*pw, false) || soleUser(e) != dw) continue;
      const auto ed = dimsOf(e);
      if (ed[0] * ed[1] * ed[2] * ed[3] * 4 < kMinExpandedBytes) continue;
      KILN_ASSIGN_OR_RETURN(
          Node * f, rw.create("NhwcExpandDw", kKilnDomain,
                              {pw->input(0), pw->input(1), pw->input(2), dw->input(1),
                               dw->input(2)},
                              {dw->output(0)->type()}, dw->name(), {pw, dw}));
      for (const auto& [key, a] : dw->attributes()) f->setAttr(key, a);
      for (const auto& [key, a] : pw->attributes())
        if (key.rfind(kActivationAttr, 0) == 0) f->setAttr(kExpandPrefix + key, a);
      f->output(0)->annotations() = dw->output(0)->annotations();
      rw.replaceAllUses(dw->output(0), f->output(0));
      rw.erase(dw);
      rw.erase(pw);
      rw.notePattern("nhwc-expand-depthwise");
    }
    KILN_RETURN_IF_ERROR(g.sortTopologically());
    return rw.stats();
  }
};

// fuse-nhwc-project: a depthwise kiln.NhwcConv (bias, no residual) whose output only feeds a
// 1x1 kiln.NhwcConv (pointwise, with bias; a residual allowed) becomes one kiln.NhwcDwProject
// (kernels/cpu/conv_nhwc_fused.h), which computes the depthwise conv's output band by band in
// a per-thread buffer and projects each band from there. MobileNetV2's blocks from 28x28 on
// (the ones fuse-nhwc-expand leaves): at 2 threads their depthwise convs took about as long as
// at 1, their output written to memory by one core and read back for the projection. Runs
// after fuse-nhwc-expand, so a depthwise conv fused into its expansion stays there.
class FuseNhwcProjectPass final : public Pass {
 public:
  std::string_view name() const override { return "fuse-nhwc-project"; }
  std::string_view summary() const override {
    return "fuses a channels-last depthwise conv into the 1x1 conv that alone reads it "
           "(kiln.NhwcDwProject)";
  }
  Expected<RewriteStats> run(Graph& g, PassContext&) override {
    Rewriter rw(g);
    std::vector<Node*> pws;
    for (const auto& n : g.nodes())
      if (pointwise(*n, true)) pws.push_back(n.get());
    for (Node* pw : pws) {
      Value* d = pw->input(0);
      Node* dw = d->producer();
      // (A projection whose residual is the depthwise conv's output too would lose it.)
      if (!dw || !depthwiseNoResidual(*dw) || soleUser(d) != pw ||
          dw->attrInt("nchw_input", 0) != 0 || !isStatic(d) || !isStatic(pw->output(0)) ||
          (pw->numInputs() > 3 && pw->input(3) == d))
        continue;
      // Where the projection's weights are small next to the depthwise conv's output: each
      // thread reads all of them, where the unfused projection splits them by columns.
      const auto dd = dimsOf(d), wpd = dimsOf(pw->input(1));
      if (3 * wpd[0] > dd[1] * dd[2]) continue;
      std::vector<Value*> ins = {dw->input(0), dw->input(1), dw->input(2), pw->input(1),
                                 pw->input(2)};
      if (pw->numInputs() > 3 && pw->input(3)) ins.push_back(pw->input(3));
      KILN_ASSIGN_OR_RETURN(Node * f, rw.create("NhwcDwProject", kKilnDomain, ins,
                                                {pw->output(0)->type()}, pw->name(), {dw, pw}));
      for (const auto& [key, a] : dw->attributes())
        if (key != "nchw_input")
          f->setAttr(key.rfind(kActivationAttr, 0) == 0 ? kDwPrefix + key : key, a);
      for (const auto& [key, a] : pw->attributes())
        if (key.rfind(kActivationAttr, 0) == 0) f->setAttr(key, a);
      f->output(0)->annotations() = pw->output(0)->annotations();
      rw.replaceAllUses(pw->output(0), f->output(0));
      rw.erase(pw);
      rw.erase(dw);
      rw.notePattern("nhwc-depthwise-project");
    }
    KILN_RETURN_IF_ERROR(g.sortTopologically());
    return rw.stats();
  }
};

}  // namespace

std::unique_ptr<Pass> makeFuseNhwcExpandPass() { return std::make_unique<FuseNhwcExpandPass>(); }
std::unique_ptr<Pass> makeFuseNhwcProjectPass() {
  return std::make_unique<FuseNhwcProjectPass>();
}

}  // namespace kiln
