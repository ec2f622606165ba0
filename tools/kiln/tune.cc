// The tuner: per tunable op signature (EmitContext::tuned), candidate k of every signature is
// compiled into one profiled build ("sweep" k), so K builds measure everything; the per-step
// profile attributes time to signatures, and the fastest candidate of each wins.
#include "tune.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <random>

#include "kiln/codegen/tuning.h"
#include "prepare.h"

namespace kiln::cli {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

/// A one-line progress bar on a terminal; plain lines otherwise (logs, CI).
class Progress {
 public:
  explicit Progress(int total) : total_(total), tty_(isatty(2) != 0) {}
  void show(int done, const std::string& what, double elapsed) {
    if (tty_) {
      const int width = 24, fill = total_ > 0 ? done * width / total_ : width;
      std::cerr << fmt::format("\r\x1b[K[tune] [{}{}] {}/{} {} ({:.0f} s)", std::string(size_t(fill), '#'),
                               std::string(size_t(width - fill), '.'), done, total_, what, elapsed)
                << std::flush;
    } else {
      std::cerr << fmt::format("[tune] {}/{} {} ({:.0f} s)\n", done, total_, what, elapsed);
    }
  }
  void finish() {
    if (tty_) std::cerr << "\n";
  }

 private:
  int total_;
  bool tty_;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

/// Runs a profiled artifact and returns, per tuning key, the median over runs of the summed
/// time (µs) of its steps, and the candidate each key was built with.
Status measure(const std::string& dir, std::map<std::string, std::map<std::string, double>>& out) {
  KILN_ASSIGN_OR_RETURN(auto model, LoadedModel::open(dir));
  KILN_RETURN_IF_ERROR(model->createContext());
  std::mt19937_64 rng(0);
  for (size_t i = 0; i < model->inputs().size(); ++i)
    KILN_RETURN_IF_ERROR(model->setInput(i, randomInput(model->inputs()[i], rng)));
  const auto& steps = model->steps();
  std::map<std::string, std::vector<double>> samples;
  for (int i = 0; i < 2; ++i) KILN_RETURN_IF_ERROR(model->run());  // warm-up
  // At least 5 runs, then until 0.5 s of runs or 40 runs.
  const auto t0 = Clock::now();
  for (int iter = 0; iter < 40 && (iter < 5 || secondsSince(t0) < 0.5); ++iter) {
    KILN_RETURN_IF_ERROR(model->run());
    KILN_ASSIGN_OR_RETURN(auto prof, model->lastProfile());
    if (prof.size() != steps.size())
      return makeError("{}: the manifest lists {} ops but the library timed {}", dir,
                       steps.size(), prof.size());
    std::map<std::string, double> us;
    for (size_t k = 0; k < steps.size(); ++k)
      if (!steps[k].tuneKey.empty()) us[steps[k].tuneKey] += double(prof[k].second) / 1000.0;
    for (const auto& [key, t] : us) samples[key].push_back(t);
  }
  std::map<std::string, std::string> choiceOf;
  for (const auto& st : steps)
    if (!st.tuneKey.empty()) choiceOf[st.tuneKey] = st.tuneChoice;
  for (const auto& [key, v] : samples) {
    const std::string& choice = choiceOf[key];
    auto [it, fresh] = out[key].emplace(choice, median(v));
    if (!fresh) it->second = std::min(it->second, median(v));
  }
  return Status();
}

}  // namespace

std::string tuningCpuName() {
  return tuningMachineName(detectHost());
}

std::string defaultTuningCachePath() {
  return (fs::path(defaultCacheDir()) / "tuning-cache.json").string();
}

Status tuneModel(const ModelArgs& model, CompileOptions& options, const TuneArgs& args) {
  const auto t0 = Clock::now();
  const std::string cachePath = args.cachePath.empty() ? defaultTuningCachePath() : args.cachePath;
  KILN_ASSIGN_OR_RETURN(TuningCache cache, readTuningCache(cachePath, tuningCpuName()));
  for (const auto& [key, choice] : cache.choices()) options.tuning[key] = choice;
  const fs::path work = fs::path(options.outDir) / ".kiln-tune";
  std::error_code ec;
  fs::remove_all(work, ec);
  struct Cleanup {
    fs::path dir;
    ~Cleanup() {
      std::error_code e;
      fs::remove_all(dir, e);
    }
  } cleanup{work};
  // Which ops are tunable: lower once without building.
  CompileOptions probe = options;
  probe.outDir = (work / "probe").string();
  probe.build = false;
  KILN_ASSIGN_OR_RETURN(Model m0, model.load());
  KILN_ASSIGN_OR_RETURN(CompileResult r0, compileModel(m0, probe));
  std::map<std::string, std::vector<std::string>> todo;
  size_t sweeps = 0;
  for (const auto& [key, cands] : r0.tunables)
    if (cands.size() > 1 && !cache.entries.count(key)) {
      todo[key] = cands;
      sweeps = std::max(sweeps, cands.size());
    }
  if (todo.empty()) {
    std::cerr << fmt::format("[tune] all {} tunable op signatures are in the tuning cache {}\n",
                             r0.tunables.size(), cachePath);
    return Status();
  }
  std::map<std::string, std::map<std::string, double>> measured;
  Progress progress{int(sweeps)};
  size_t done = 0;
  for (; done < sweeps; ++done) {
    if (secondsSince(t0) > args.budgetSeconds) {
      progress.finish();
      std::cerr << fmt::format("[tune] the budget of {:.0f} s is spent: {} of {} candidate "
                               "builds measured; unmeasured candidates are not chosen\n",
                               args.budgetSeconds, done, sweeps);
      break;
    }
    progress.show(int(done), fmt::format("building candidate set {}", done + 1), secondsSince(t0));
    CompileOptions o = options;
    o.outDir = (work / ("sweep" + std::to_string(done))).string();
    o.profile = true;
    o.build = true;  // measured even when the result is --no-build
    o.archive = false;
    o.tuneSweep = int(done);
    o.pchDir = (work / "pch").string();  // the sweeps' builds share one precompiled header
    KILN_ASSIGN_OR_RETURN(Model m, model.load());
    KILN_RETURN_IF_ERROR(compileModel(m, o).status());
    progress.show(int(done), fmt::format("measuring candidate set {}", done + 1), secondsSince(t0));
    KILN_RETURN_IF_ERROR(measure(o.outDir, measured));
    fs::remove_all(o.outDir, ec);
  }
  if (done == sweeps) {
    progress.show(int(done), "done", secondsSince(t0));
    progress.finish();
  }
  int changed = 0;
  double before = 0, after = 0;
  for (const auto& [key, cands] : todo) {
    auto it = measured.find(key);
    if (it == measured.end() || it->second.empty()) continue;
    TuningEntry e;
    e.microseconds = it->second;
    e.choice = std::min_element(e.microseconds.begin(), e.microseconds.end(),
                                [](const auto& a, const auto& b) { return a.second < b.second; })
                   ->first;
    if (e.choice != cands.front()) ++changed;
    if (e.microseconds.count(cands.front())) before += e.microseconds.at(cands.front());
    after += e.microseconds.at(e.choice);
    options.tuning[key] = e.choice;
    cache.entries[key] = std::move(e);
  }
  KILN_RETURN_IF_ERROR(writeTuningCache(cachePath, cache));
  std::cerr << fmt::format(
      "[tune] {} op signatures measured ({} builds) in {:.0f} s; {} differ from the cost model; "
      "their kernel time {:.3f} -> {:.3f} ms per run; cache {}\n",
      todo.size(), done, secondsSince(t0), changed, before / 1000.0, after / 1000.0, cachePath);
  return Status();
}

}  // namespace kiln::cli
