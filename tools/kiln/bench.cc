// `kiln bench`: latency of a compiled model (first run, min/median/p90), arena and weights.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "kiln/support/file.h"
#include "kiln/target/target.h"
#include "peak.h"
#include "prepare.h"

namespace kiln::cli {
namespace {

struct BenchArgs {
  ModelArgs model;
  CodegenArgs codegen;
  std::vector<std::string> inputs;
  std::string cacheDir;
  int iters = 20;
  int warmup = 3;
  bool json = false;
  uint64_t seed = 0;
  bool profile = false;     ///< --profile given (compile with timing hooks)
  std::string profileFile;  ///< --profile FILE: Chrome/Perfetto trace of the last run
  int runThreads = 0;  ///< --run-threads: {P}_set_threads after create (0: as compiled)
  std::string versus;  ///< --versus MODEL: A/B against a second model or compiled folder
  int burst = 5;       ///< --burst: runs per side per round of --versus
};

/// The per-step times of a profiled run: a trace-event file, or the top steps by time. idleNs:
/// each step's mean idle thread time (empty: the artifact does not report it).
Status reportProfile(const BenchArgs& a, const LoadedModel& model,
                     const std::vector<double>& meanNs, const std::vector<double>& idleNs,
                     const std::vector<std::pair<uint64_t, uint64_t>>& last) {
  const auto& steps = model.steps();
  if (steps.size() != meanNs.size())
    return makeError("the manifest lists {} ops but the library timed {} steps", steps.size(),
                     meanNs.size());
  const double threads = double(model.threads());
  // Percent of the step's thread time (threads x its mean) spent idle.
  auto idlePct = [&](size_t i) {
    return i < idleNs.size() && meanNs[i] > 0 ? 100.0 * idleNs[i] / (threads * meanNs[i]) : 0.0;
  };
  if (!a.profileFile.empty()) {
    nlohmann::ordered_json events = nlohmann::ordered_json::array();
    for (size_t i = 0; i < steps.size(); ++i) {
      const double us = double(last[i].second) / 1000.0;
      nlohmann::ordered_json args = {{"nodes", steps[i].nodes},
                                     {"kernel", steps[i].kernel},
                                     {"flops", steps[i].flops},
                                     {"bytes", steps[i].bytes},
                                     {"mean_us", meanNs[i] / 1000.0}};
      if (steps[i].flops > 0 && last[i].second > 0)
        args["gflops_per_s"] = double(steps[i].flops) / double(last[i].second);
      if (i < idleNs.size()) {
        args["idle_us"] = idleNs[i] / 1000.0;
        args["idle_pct"] = idlePct(i);
      }
      events.push_back({{"name", steps[i].op},
                        {"cat", steps[i].kernel},
                        {"ph", "X"},
                        {"ts", double(last[i].first) / 1000.0},
                        {"dur", us},
                        {"pid", 1},
                        {"tid", 1},
                        {"args", args}});
    }
    nlohmann::ordered_json trace = {{"traceEvents", events}, {"displayTimeUnit", "ms"}};
    std::string text = trace.dump(1) + "\n";
    KILN_RETURN_IF_ERROR(writeFile(a.profileFile, text.data(), text.size()));
    std::cout << fmt::format("profile: {} steps of the last run written to {} (open in "
                             "chrome://tracing or ui.perfetto.dev)\n",
                             steps.size(), a.profileFile);
    return Status();
  }
  const char* isa = "";
  const double peak = measurePeakGflops(&isa) * model.threads();
  double total = 0, idle = 0;
  for (double ns : meanNs) total += ns;
  for (double ns : idleNs) idle += ns;
  std::vector<size_t> order(steps.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t x, size_t y) { return meanNs[x] > meanNs[y]; });
  std::cout << fmt::format(
      "profile: {} steps, {:.3f} ms per run in kernels; peak {:.1f} GFLOP/s ({} FMA loop x {} "
      "thread{})\n",
      steps.size(), total / 1e6, peak, isa, model.threads(), model.threads() == 1 ? "" : "s");
  if (model.threads() > 1 && !idleNs.empty())
    std::cout << fmt::format(
        "threads idle {:.3f} ms per run in all, {:.1f}% of {} x the kernels' time (idle %: a "
        "step's share)\n",
        idle / 1e6, 100.0 * idle / std::max(threads * total, 1.0), model.threads());
  std::cout << fmt::format("{:>9} {:>6} {:>9} {:>7} {:>6}  {:<18} {:<38} {}\n", "ms", "%",
                           "GFLOP/s", "% peak", "idle %", "op", "kernel", "nodes");
  for (size_t k = 0; k < order.size() && k < 15; ++k) {
    const size_t i = order[k];
    const double gf = meanNs[i] > 0 ? double(steps[i].flops) / meanNs[i] : 0.0;
    std::string nodes = steps[i].nodes.size() > 40 ? steps[i].nodes.substr(0, 37) + "..."
                                                   : steps[i].nodes;
    std::cout << fmt::format("{:9.3f} {:6.1f} {:9.1f} {:7.1f} {:6.1f}  {:<18} {:<38} {}\n",
                             meanNs[i] / 1e6, 100.0 * meanNs[i] / std::max(total, 1.0), gf,
                             peak > 0 ? 100.0 * gf / peak : 0.0, idlePct(i),
                             steps[i].op.substr(0, 18), steps[i].kernel.substr(0, 38), nodes);
  }
  return Status();
}

double percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  size_t idx = size_t(q * double(v.size() - 1) + 0.5);
  return v[std::min(idx, v.size() - 1)];
}

using Clock = std::chrono::steady_clock;

/// Compiles (or finds) `path`'s artifact with the bench's options, loads it, creates a context
/// at --run-threads and binds the given inputs (else seeded random ones).
Expected<std::unique_ptr<LoadedModel>> loadForBench(const BenchArgs& a, const std::string& path,
                                                    const std::vector<GivenInput>& given) {
  ModelArgs margs = a.model;
  margs.path = path;
  CodegenArgs codegen = a.codegen;
  codegen.profile = codegen.profile || a.profile;
  auto dir = prepareArtifact(margs, codegen,
                             a.cacheDir.empty() ? defaultCacheDir() : a.cacheDir, given);
  if (!dir.ok()) return dir.status();
  auto m = LoadedModel::open(*dir);
  if (!m.ok()) return m.status();
  LoadedModel& model = **m;
  KILN_RETURN_IF_ERROR(model.createContext());
  if (a.runThreads > 0) KILN_RETURN_IF_ERROR(model.setThreads(a.runThreads));
  std::vector<GivenInput> bound = given;
  if (bound.empty()) {
    std::mt19937_64 rng(a.seed);
    for (const auto& s : model.inputs()) bound.push_back({s.name, "random", randomInput(s, rng)});
  }
  KILN_RETURN_IF_ERROR(bindInputs(model, bound));
  return std::move(*m);
}

Expected<double> timeRun(LoadedModel& model) {
  auto t0 = Clock::now();
  KILN_RETURN_IF_ERROR(model.run());
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

/// The error for --profile on a build without timing hooks.
std::string notProfiled(const std::string& path) {
  return fmt::format(
      "{}: not compiled with --profile — pass the model file, or recompile the "
      "folder with kiln compile --profile",
      path);
}

/// Per-step figures of a --versus run with --profile: each round's mean of every step over
/// its burst, per side. Steps pair up by index when both builds list the same source nodes in
/// the same order (two builds of one model); otherwise there is no per-step table.
struct VersusSteps {
  bool paired = false;
  std::vector<std::vector<double>> ns[2];  ///< [side][step]: one value per round
};

/// Adds the last run's step times to `sum` (ns per step).
Status addLastRun(const LoadedModel& m, std::vector<double>* sum) {
  auto prof = m.lastProfile();
  if (!prof.ok()) return prof.status();
  if (prof->size() != sum->size())
    return makeError("the library timed {} steps, its manifest lists {}", prof->size(),
                     sum->size());
  for (size_t k = 0; k < prof->size(); ++k) (*sum)[k] += double((*prof)[k].second);
  return Status();
}

/// The per-step table of --versus --profile: the steps whose time changed most (B - A), each
/// with the median over rounds of A's and B's time and of the rounds' ratios B/A.
void printVersusSteps(const LoadedModel& a, const LoadedModel& b, const VersusSteps& vs,
                      nlohmann::ordered_json* json) {
  if (!vs.paired) {
    if (json)
      (*json)["steps"] = nullptr;
    else
      std::cout << "steps: the two builds' steps differ (other ops or fusions): no per-step "
                   "table\n";
    return;
  }
  struct Row {
    size_t i;
    double a, b, ratio;
  };
  std::vector<Row> rows;
  double ta = 0, tb = 0;
  for (size_t i = 0; i < a.steps().size(); ++i) {
    std::vector<double> r;
    for (size_t k = 0; k < vs.ns[0][i].size(); ++k)
      if (vs.ns[0][i][k] > 0) r.push_back(vs.ns[1][i][k] / vs.ns[0][i][k]);
    rows.push_back({i, percentile(vs.ns[0][i], 0.5) / 1e3, percentile(vs.ns[1][i], 0.5) / 1e3,
                    r.empty() ? 0.0 : percentile(r, 0.5)});
    ta += rows.back().a;
    tb += rows.back().b;
  }
  if (json) {
    nlohmann::ordered_json steps = nlohmann::ordered_json::array();
    for (const Row& r : rows)
      steps.push_back({{"nodes", a.steps()[r.i].nodes},
                       {"op", a.steps()[r.i].op},
                       {"kernel_a", a.steps()[r.i].kernel},
                       {"kernel_b", b.steps()[r.i].kernel},
                       {"a_us", r.a},
                       {"b_us", r.b},
                       {"ratio_b_over_a", r.ratio}});
    (*json)["steps"] = steps;
    return;
  }
  std::stable_sort(rows.begin(), rows.end(), [](const Row& x, const Row& y) {
    return std::abs(x.b - x.a) > std::abs(y.b - y.a);
  });
  std::cout << fmt::format(
      "steps: {:.1f} us (A) and {:.1f} us (B) summed, B/A {:.4f}; the 15 "
      "that changed most:\n",
      ta, tb, ta > 0 ? tb / ta : 0.0);
  std::cout << fmt::format("{:>5} {:>10} {:>10} {:>7}  {:<38} {}\n", "step", "A us", "B us", "B/A",
                           "kernel (A)", "nodes");
  for (size_t k = 0; k < rows.size() && k < 15; ++k) {
    const Row& r = rows[k];
    const auto& st = a.steps()[r.i];
    const std::string nodes = st.nodes.size() > 40 ? st.nodes.substr(0, 37) + "..." : st.nodes;
    std::cout << fmt::format("{:5} {:10.1f} {:10.1f} {:7.3f}  {:<38} {}\n", r.i, r.a, r.b, r.ratio,
                             st.kernel.substr(0, 38), nodes);
  }
}

/// --versus: A (MODEL) and B alternate in bursts of --burst runs, for --iters rounds (which of
/// the two goes first alternates too), with a pause before each burst so that the other's pool
/// workers, spinning after its last run, are asleep and do not take a core from it. On a shared
/// machine the host's load changes over seconds, so a ratio of two medians taken minutes apart
/// says little; the median of the rounds' ratios, each from bursts a few ms apart, holds.
/// With --profile (both built with it) the steps are compared the same way, round by round.
int runVersus(const BenchArgs& a, const std::vector<GivenInput>& given) {
  if (a.profile && !a.profileFile.empty())
    return fail("--versus takes --profile without a FILE (it prints a per-step table)");
  if (a.burst < 1) return fail("--burst must be at least 1");
  std::unique_ptr<LoadedModel> side[2];
  const std::string paths[2] = {a.model.path, a.versus};
  for (int s = 0; s < 2; ++s) {
    auto m = loadForBench(a, paths[s], given);
    if (!m.ok()) return fail(m.message());
    side[s] = std::move(*m);
  }
  constexpr auto kSettle = std::chrono::milliseconds(3);
  for (int s = 0; s < 2; ++s)
    for (int i = 0; i < 1 + a.warmup; ++i)
      if (auto t = timeRun(*side[s]); !t.ok()) return fail(t.message());
  VersusSteps vs;
  if (a.profile) {
    for (int s = 0; s < 2; ++s)
      if (!side[s]->profiled()) return fail(notProfiled(paths[s]));
    const auto &sa = side[0]->steps(), &sb = side[1]->steps();
    vs.paired = sa.size() == sb.size() &&
                std::equal(sa.begin(), sa.end(), sb.begin(),
                           [](const auto& x, const auto& y) { return x.nodes == y.nodes; });
    for (int s = 0; s < 2; ++s) vs.ns[s].assign(side[s]->steps().size(), {});
  }
  // A pool's workers stay awake for a while after create (kiln_runtime's start window).
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  std::vector<double> med[2], ratio;
  std::vector<double> burst(size_t(a.burst));
  for (int r = 0; r < a.iters; ++r) {
    for (int k = 0; k < 2; ++k) {
      const int s = (r + k) % 2;
      std::vector<double> stepSum(vs.paired ? side[s]->steps().size() : 0, 0.0);
      std::this_thread::sleep_for(kSettle);
      for (auto& t : burst) {
        auto ms = timeRun(*side[s]);
        if (!ms.ok()) return fail(ms.message());
        t = *ms;
        if (vs.paired)
          if (auto st = addLastRun(*side[s], &stepSum); !st.ok()) return fail(st.message());
      }
      med[s].push_back(percentile(burst, 0.5));
      for (size_t i = 0; i < stepSum.size(); ++i) vs.ns[s][i].push_back(stepSum[i] / a.burst);
    }
    ratio.push_back(med[1].back() / med[0].back());
  }
  const double ma = percentile(med[0], 0.5), mb = percentile(med[1], 0.5);
  const double r50 = percentile(ratio, 0.5), r25 = percentile(ratio, 0.25),
               r75 = percentile(ratio, 0.75);
  if (a.json) {
    nlohmann::ordered_json j;
    j["a"] = {{"model", paths[0]}, {"median_ms", ma}};
    j["b"] = {{"model", paths[1]}, {"median_ms", mb}};
    j["ratio_b_over_a"] = {{"median", r50}, {"q1", r25}, {"q3", r75}};
    j["rounds"] = a.iters;
    j["burst"] = a.burst;
    j["threads"] = side[0]->threads();
    j["host"] = describe(detectHost());
    if (a.profile) printVersusSteps(*side[0], *side[1], vs, &j);
    std::cout << j.dump() << "\n";
    return kExitOk;
  }
  std::cout << fmt::format(
      "A {}: median {:.3f} ms\nB {}: median {:.3f} ms\nB/A per round: median {:.4f} "
      "(quartiles {:.4f} - {:.4f}) over {} rounds of {} runs each\n",
      paths[0], ma, paths[1], mb, r50, r25, r75, a.iters, a.burst);
  if (a.profile) printVersusSteps(*side[0], *side[1], vs, nullptr);
  return kExitOk;
}

int runBench(const BenchArgs& a) {
  if (a.iters < 1) return fail("--iters must be at least 1");
  auto inputs = readGivenInputs(a.inputs, a.model.path);
  if (!inputs.ok()) return fail(inputs.message());
  if (!a.versus.empty()) return runVersus(a, *inputs);
  auto m = loadForBench(a, a.model.path, *inputs);
  if (!m.ok()) return fail(m.message());
  LoadedModel& model = **m;
  auto time = [&]() { return timeRun(model); };
  auto first = time();
  if (!first.ok()) return fail(first.message());
  for (int i = 0; i < a.warmup; ++i)
    if (auto t = time(); !t.ok()) return fail(t.message());
  if (a.profile && !model.profiled()) return fail(notProfiled(a.model.path));
  std::vector<double> samples, stepNs, idleNs;
  std::vector<std::pair<uint64_t, uint64_t>> last;
  for (int i = 0; i < a.iters; ++i) {
    auto t = time();
    if (!t.ok()) return fail(t.message());
    samples.push_back(*t);
    if (!a.profile) continue;
    auto prof = model.lastProfile();
    if (!prof.ok()) return fail(prof.message());
    stepNs.resize(prof->size(), 0.0);
    for (size_t k = 0; k < prof->size(); ++k) stepNs[k] += double((*prof)[k].second) / a.iters;
    last = std::move(*prof);
    auto idle = model.lastIdle();
    if (!idle.ok()) return fail(idle.message());
    idleNs.resize(idle->size(), 0.0);
    for (size_t k = 0; k < idle->size(); ++k) idleNs[k] += double((*idle)[k]) / a.iters;
  }
  double mn = *std::min_element(samples.begin(), samples.end());
  double med = percentile(samples, 0.5), p90 = percentile(samples, 0.9);
  if (a.json) {
    nlohmann::ordered_json j;
    j["latency_ms"] = {{"min", mn}, {"median", med}, {"p90", p90}};
    j["first_run_ms"] = *first;
    j["arena_bytes"] = model.arenaBytes();
    j["weights_bytes"] = model.weightsBytes();
    j["threads"] = model.threads();
    j["iters"] = a.iters;
    j["host"] = describe(detectHost());  // which machine the figures are from
    std::cout << j.dump() << "\n";
    return kExitOk;
  }
  if (a.profile)
    if (auto st = reportProfile(a, model, stepNs, idleNs, last); !st.ok())
      return fail(st.message());
  std::cout << fmt::format(
      "{}: first run {:.3f} ms; latency min {:.3f} / median {:.3f} / p90 {:.3f} ms over {} "
      "iterations ({} warm-up); arena {} bytes; weights {} bytes; threads {}\n",
      a.model.path, *first, mn, med, p90, a.iters, a.warmup, model.arenaBytes(),
      model.weightsBytes(), model.threads());
  return kExitOk;
}

}  // namespace

Verb addBenchVerb(CLI::App& app) {
  auto* cmd = app.add_subcommand("bench", "Measure a compiled model's latency");
  auto a = std::make_shared<BenchArgs>();
  a->model.addTo(cmd);
  a->codegen.addTo(cmd, /*withName=*/false);
  cmd->add_option("-i,--input", a->inputs, "[NAME=]FILE inputs (default: seeded random)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_option("--cache", a->cacheDir, "Compile cache folder (default ~/.cache/kiln)");
  cmd->add_option("--run-threads", a->runThreads,
                  "Run the compiled context at N threads ({P}_set_threads after create; at most "
                  "the compiled --threads), without recompiling")
      ->check(CLI::Range(1, 64));
  cmd->add_option("--iters", a->iters, "Timed iterations (default 20)");
  cmd->add_option("--warmup", a->warmup, "Untimed iterations after the first run (default 3)");
  cmd->add_option("--seed", a->seed, "Seed for random inputs (default 0)");
  cmd->add_flag("--json", a->json, "Print exactly one JSON line");
  cmd->add_option("--versus", a->versus,
                  "A/B: alternate MODEL and this second model or compiled folder in bursts, "
                  "--iters rounds; print each one's median and the median ratio of the rounds "
                  "(with --profile also the steps that changed most)")
      ->check(CLI::ExistingPath);
  cmd->add_option("--burst", a->burst, "Runs per model per round of --versus (default 5)");
  cmd->add_option("--profile", a->profileFile,
                  "Compile with timing hooks; print the top ops by time and % of peak, or with "
                  "FILE write the last run as a Chrome/Perfetto trace (JSON)")
      ->expected(0, 1)
      ->each([a](const std::string&) { a->profile = true; });
  cmd->callback([a, cmd] { a->profile = a->profile || cmd->count("--profile") > 0; });
  return {cmd, [a] { return runBench(*a); }};
}

}  // namespace kiln::cli
