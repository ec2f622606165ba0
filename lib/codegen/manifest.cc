// manifest.json of the generated artifact: what was compiled, from what, how, and every kernel
// call a run makes (docs/artifact.md).
#include <nlohmann/json.hpp>

#include "artifact_parts.h"

namespace kiln {
namespace {

nlohmann::ordered_json signatureJson(const std::vector<SignatureEntry>& entries) {
  auto arr = nlohmann::ordered_json::array();
  for (const auto& e : entries) {
    arr.push_back({{"name", e.name},
                   {"dtype", std::string(dtypeName(e.dtype))},
                   {"shape", e.dims},
                   {"bytes", e.bytes}});
    // Dims the data decides: "shape" and "bytes" are their bound (docs/dynamic-shapes.md).
    std::vector<size_t> dataDependent;
    for (size_t d = 0; d < e.runtimeDimSlots.size(); ++d)
      if (e.runtimeDimSlots[d] >= 0) dataDependent.push_back(d);
    if (!dataDependent.empty()) arr.back()["data_dependent_dims"] = dataDependent;
  }
  return arr;
}

}  // namespace

std::string manifest(const Model& model, const Program& p, const CompileOptions& o) {
  nlohmann::ordered_json j;
  j["format_version"] = 1;
  j["kiln_version"] = KILN_VERSION;
  j["source"] = {{"file", o.sourceFile},
                 {"sha256", model.meta.sourceSha256},
                 {"format", model.meta.sourceFormat},
                 {"producer", model.meta.producerName},
                 {"producer_version", model.meta.producerVersion}};
  j["name"] = p.prefix;
  j["target"] = p.target.name;
  j["target_requested"] = o.target;
  j["kernel_isa"] = p.target.kernelIsa();
  // What a build of model.cc outside the generated CMakeLists.txt passes (as kiln's own build).
  auto flags = nlohmann::ordered_json::array({"-std=c++17"});
  for (const auto& f : modelCxxFlags(p, o)) flags.push_back(f);
  if (p.usesThreadPool) flags.push_back("-pthread");
  j["cxx_flags"] = flags;
  j["threads"] = p.threads;
  j["profile"] = o.profile;
  j["options"] = {{"opt_level", o.optLevel},
                  {"weights", o.weights == WeightsMode::External ? "external" : "embedded"},
                  {"shapes", o.shapeFlags}};
  if (!o.maxDims.empty()) j["options"]["max_dims"] = o.maxDims;
  j["inputs"] = signatureJson(p.inputs);
  j["outputs"] = signatureJson(p.outputs);
  j["arena_bytes"] = p.arenaBytes;
  j["arena_lower_bound_bytes"] = p.arenaLowerBound;
  j["arena_planner"] = p.planner;
  if (!p.poolCapacities.empty()) {
    auto pools = nlohmann::json::array();
    for (size_t k = 0; k < p.poolNames.size(); ++k)
      pools.push_back({{"name", p.poolNames[k]},
                       {"used_bytes", p.poolBytes[k]},
                       {"capacity_bytes", p.poolCapacities[k]}});
    j["memory_pools"] = pools;
  }
  j["memory"] = {{"unshared_bytes", p.unsharedBytes},
                 {"buffers", p.buffers.size()},
                 {"views", p.viewCount},
                 {"in_place", p.inPlaceCount},
                 {"over_shifted_input", p.overShiftedInput},
                 {"concat_inputs_in_place", p.concatPlacedInputs},
                 {"schedule_peak_before_bytes", p.peakBeforeSchedule},
                 {"schedule_peak_after_bytes", p.peakAfterSchedule}};
  j["weights_bytes"] = p.weightsBytes;
  j["weights_file"] = o.weights == WeightsMode::External ? p.prefix + ".weights" : "";
  j["library"] = {{"shared", "lib" + p.prefix + ".so"}, {"static", "lib" + p.prefix + ".a"}};
  auto ops = nlohmann::ordered_json::array();
  for (const auto& c : p.calls) {
    ops.push_back({{"kernel", c.kernel},
                   {"op", c.opType},
                   {"nodes", c.nodeNames},
                   {"flops", c.flops},
                   {"bytes", c.bytes}});
    if (!c.tuneKey.empty()) ops.back()["tuning"] = {{"key", c.tuneKey}, {"choice", c.tuneChoice}};
  }
  j["ops"] = ops;
  return j.dump(2) + "\n";
}

}  // namespace kiln
