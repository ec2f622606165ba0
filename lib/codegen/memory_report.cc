// The arena plan of a lowered model as a report: buffers, totals, a table and an SVG picture.
#include <algorithm>

#include "kiln/memory/plan_svg.h"
#include "program.h"
#include "source_text.h"

namespace kiln {

MemoryReport memoryReportOf(const Program& p) {
  MemoryReport r;
  for (size_t i = 0; i < p.buffers.size(); ++i)
    r.buffers.push_back({i < p.bufferLabels.size() ? p.bufferLabels[i] : std::string(),
                         p.buffers[i].bytes, p.buffers[i].firstStep, p.buffers[i].lastStep,
                         i < p.bufferOffsets.size() ? p.bufferOffsets[i] : 0,
                         i < p.bufferPools.size() && size_t(p.bufferPools[i]) < p.poolNames.size()
                             ? p.poolNames[size_t(p.bufferPools[i])]
                             : std::string("arena")});
  r.arenaBytes = p.arenaBytes;
  r.lowerBoundBytes = p.arenaLowerBound;
  r.unsharedBytes = p.unsharedBytes;
  r.planner = p.planner;
  r.peakBeforeSchedule = p.peakBeforeSchedule;
  r.peakAfterSchedule = p.peakAfterSchedule;
  r.views = p.viewCount;
  r.inPlace = p.inPlaceCount;
  r.concatPlacedInputs = p.concatPlacedInputs;
  return r;
}

Expected<MemoryReport> planModelMemory(Model& model, const CompileOptions& options) {
  KILN_ASSIGN_OR_RETURN(Program program, buildProgram(model, options));
  return memoryReportOf(program);
}

std::string memoryPlotSvg(const MemoryReport& report) {
  std::vector<BufferRequest> requests;
  std::vector<std::string> labels;
  ArenaPlan plan;
  for (const auto& b : report.buffers) {
    requests.push_back({b.bytes, b.firstStep, b.lastStep});
    labels.push_back(b.label);
    plan.offsets.push_back(b.offset);
  }
  plan.arenaBytes = report.arenaBytes;
  plan.lowerBoundBytes = report.lowerBoundBytes;
  plan.planner = report.planner;
  return planToSvg(requests, plan, labels);
}

std::string memoryTable(const MemoryReport& report) {
  std::vector<size_t> order(report.buffers.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const auto &x = report.buffers[a], &y = report.buffers[b];
    if (x.pool != y.pool) return x.pool < y.pool;
    return x.offset != y.offset ? x.offset < y.offset : x.firstStep < y.firstStep;
  });
  std::string s = fmt::format("{:<8} {:>12} {:>12} {:>7} {:>7}  {}\n", "pool", "offset", "bytes",
                              "first", "last", "buffer");
  for (size_t i : order) {
    const auto& b = report.buffers[i];
    s += fmt::format("{:<8} {:>12} {:>12} {:>7} {:>7}  {}\n", commentSafe(b.pool), b.offset,
                     b.bytes, b.firstStep, b.lastStep, commentSafe(b.label));
  }
  s += fmt::format(
      "arena {} bytes ({}), lower bound {} bytes, {} bytes without sharing; {} views, {} in "
      "place, {} Concat inputs written in place",
      report.arenaBytes, report.planner, report.lowerBoundBytes, report.unsharedBytes, report.views,
      report.inPlace, report.concatPlacedInputs);
  if (report.peakBeforeSchedule > 0)
    s += fmt::format("; op order peak {} -> {} bytes", report.peakBeforeSchedule,
                     report.peakAfterSchedule);
  return s + "\n";
}

}  // namespace kiln
