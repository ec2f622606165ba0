// Emit facet of Transpose: kiln_cpu's tiled transpose for a swap of two blocks of axes, a copy
// when only size-1 axes move, else kernels/ref's general transpose.
#include <numeric>

#include "cpu_emit_support.h"
#include "emit_support.h"

namespace kiln {

Status emitTranspose(const Node& n, EmitContext& ctx) {
  auto x = staticDims(n.input(0));
  std::vector<int64_t> perm(x.size());
  std::iota(perm.rbegin(), perm.rend(), 0);
  perm = n.attrInts("perm", perm);
  int bits = dtypeBits(n.input(0)->dtype());
  if (bits < 8) return ctx.unsupported("Transpose of sub-byte types");
  // A batched swap of two blocks of axes ([B, X, Y] -> [B, Y, X] once size-1 axes are dropped
  // and axes that stay together merged; e.g. NCHW <-> NHWC): kiln_cpu's tiled transpose.
  std::vector<int64_t> kept(x.size(), -1), p;  // kept[a]: axis a's index among non-1 axes
  for (size_t a = 0, k = 0; a < x.size(); ++a)
    if (x[a] != 1) kept[a] = int64_t(k++);
  for (int64_t a : perm)
    if (x[size_t(a)] != 1) p.push_back(kept[size_t(a)]);
  std::vector<std::vector<int64_t>> groups;  // runs of consecutive kept axes, in output order
  for (int64_t a : p) {
    if (!groups.empty() && groups.back().back() + 1 == a)
      groups.back().push_back(a);
    else
      groups.push_back({a});
  }
  if (groups.size() <= 1) {  // only size-1 axes move: the bytes stay in order
    ctx.call("memcpy", fmt::format("std::memcpy({}, {}, {});", ctx.output(0), ctx.input(0),
                                   staticNumel(n.output(0)) * (bits / 8)));
    return Status();
  }
  const bool swap = groups.size() == 2 || (groups.size() == 3 && groups[0][0] < groups[2][0] &&
                                           groups[2][0] < groups[1][0]);
  if (swap && (bits == 32 || bits == 16 || bits == 8 || bits == 64)) {
    std::vector<int64_t> keptDims;
    for (int64_t v : x)
      if (v != 1) keptDims.push_back(v);
    auto size = [&](const std::vector<int64_t>& g) {
      int64_t s = 1;
      for (int64_t a : g) s *= keptDims[size_t(a)];
      return s;
    };
    const size_t b = groups.size() - 2;  // the batch group, if any, stays first
    const int64_t batch = b ? size(groups[0]) : 1, rows = size(groups[b + 1]), cols = size(groups[b]);
    const char* type = bits == 32 ? "uint32_t" : bits == 16 ? "uint16_t" : bits == 8 ? "uint8_t" : "uint64_t";
    ctx.useHeader("kiln_cpu/transpose.h");
    ctx.call(cpu_detail::cpuKernel(cpu_kernels::Kernel::transpose_2d, ctx.target()),
             fmt::format("kiln_cpu::transpose_2d<{0}>({1}, {2}, {3}, reinterpret_cast<const {0}*>({4}), "
                         "reinterpret_cast<{0}*>({5}), {6});",
                         type, batch, rows, cols, ctx.input(0), ctx.output(0), ctx.threadPool()));
    return Status();
  }
  ctx.useHeader("kiln_ref/transpose.h");
  ctx.call("kiln_ref::transpose",
           fmt::format("kiln_ref::transpose({}, {}, {}, {}, {}, {});", x.size(),
                       ctx.constArray(x.empty() ? std::vector<int64_t>{1} : x),
                       ctx.constArray(perm.empty() ? std::vector<int64_t>{0} : perm), bits / 8,
                       ctx.input(0), ctx.output(0)));
  return Status();
}

}  // namespace kiln
