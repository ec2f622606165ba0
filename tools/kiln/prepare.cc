// Artifact preparation for run/bench: cache keys, compiling on demand, binding inputs.
#include "prepare.h"

#include <cctype>
#include <charconv>
#include <climits>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <random>
#include <set>

#include "kiln/support/file.h"
#include "kiln/support/sha256.h"
#include "kiln/codegen/tuning.h"
#include "tune.h"

namespace kiln::cli {

namespace fs = std::filesystem;

void CodegenArgs::addTo(CLI::App* cmd, bool withName) {
  cmd->add_option("--target", target,
                  "Target: host (this CPU's level), x86-64-v4 (AVX-512), x86-64-v3 (AVX2+FMA), "
                  "x86-64 (SSE2), generic (portable C++)")
      ->check(CLI::IsMember(targetNames()));
  cmd->add_option("--threads", threads,
                  "Threads the generated context runs (default: this machine's cores for "
                  "--target host, else 1); {P}_set_threads lowers it at run time")
      ->check(CLI::Range(1, 64));
  cmd->add_option("-O", optLevel, "Optimization level 0-3 (default 3)")->check(CLI::Range(0, 3));
  if (withName)
    cmd->add_option("--name", name, "C symbol prefix (default: from the model file name)");
  cmd->add_option("--weights", weights, "embedded (default) or external (a mappable file)")
      ->check(CLI::IsMember({"embedded", "external"}));
  cmd->add_option("--cc", cxx, "C++ compiler for the generated code (default: $CXX or c++)");
  cmd->add_option("--passes", passes,
                  "Run these passes (comma-separated) instead of the -O pipeline; see `kiln opt "
                  "--list-passes`");
  cmd->add_flag("--fast-math", fastMath,
                "Allow rewrites that change results in the last bits (x/c -> x*(1/c))");
  cmd->add_option("--amx", amx,
                  "On a CPU with AMX: f32 1x1 convs and GEMMs with constant weights on AMX tiles, "
                  "each operand in bf16 pieces: exact (3 pieces: each product within f32's "
                  "rounding) or fast (2 pieces: about 2^-16 a product); default off (f32 FMAs)")
      ->check(CLI::IsMember({"fast", "exact"}));
  cmd->add_option("--memory-pool", memoryPools,
                  "Place buffers across memories: NAME:BYTES (K/M/G), repeatable, fastest first")
      ->take_all();
  cmd->add_option("--max-loop-iterations", maxLoopIterations,
                  "Loops stop with a run-time error beyond this many iterations (default "
                  "1000000)")
      ->check(CLI::Range(int64_t(1), int64_t(1) << 62));
  cmd->add_option("--tuning-cache", tuningCache,
                  "Use the implementations `kiln compile --tune` measured fastest on this CPU "
                  "(a JSON tuning cache; ops it lacks take the cost model's)");
  cmd->add_option("--max-dim", maxDims,
                  "NAME=N: at most N for the data-decided dims of value NAME where no op bounds "
                  "them (Range on run-time inputs); repeatable")
      ->take_all();
}

Expected<CompileOptions> CodegenArgs::toOptions(const std::string& modelPath,
                                                const std::string& outDir,
                                                const std::vector<std::string>& shapeFlags) const {
  CompileOptions o;
  o.outDir = outDir;
  o.target = target;
  o.threads = threads;
  o.optLevel = optLevel;
  o.name = name.empty() ? symbolPrefixFor(modelPath) : name;
  o.weights = weights == "external" ? WeightsMode::External : WeightsMode::Embedded;
  o.cxx = cxx;
  o.sourceFile = fs::path(modelPath).filename().string();
  o.shapeFlags = shapeFlags;
  KILN_ASSIGN_OR_RETURN(o.passList, parsePassList(passes));
  o.passes.context.options.fastMath = fastMath;
  o.amxPieces = amx == "fast" ? 2 : amx == "exact" ? 3 : 0;
  o.profile = profile;
  o.maxLoopIterations = maxLoopIterations;
  if (!tuningCache.empty()) {
    KILN_ASSIGN_OR_RETURN(TuningCache cache, readTuningCache(tuningCache, tuningCpuName()));
    o.tuning = cache.choices();
  }
  for (const auto& spec : memoryPools) {
    // NAME:BYTES, BYTES with an optional K, M or G (powers of 1024).
    auto colon = spec.rfind(':');
    MemoryPool pool;
    if (colon == std::string::npos || colon == 0)
      return makeError("--memory-pool '{}': expected NAME:BYTES, e.g. dtcm:512K", spec);
    pool.name = spec.substr(0, colon);
    std::string size = spec.substr(colon + 1);
    int64_t scale = 1;
    if (!size.empty() && std::string("KkMmGg").find(size.back()) != std::string::npos) {
      char unit = char(std::toupper(static_cast<unsigned char>(size.back())));
      scale = unit == 'K' ? 1024 : unit == 'M' ? 1024 * 1024 : int64_t(1024) * 1024 * 1024;
      size.pop_back();
    }
    int64_t n = 0;
    auto [end, ec] = std::from_chars(size.data(), size.data() + size.size(), n);
    if (size.empty() || ec != std::errc() || end != size.data() + size.size() || n <= 0 ||
        n > INT64_MAX / scale)
      return makeError("--memory-pool '{}': the size must be a positive number of bytes", spec);
    pool.capacityBytes = n * scale;
    for (const auto& other : o.memoryPools)
      if (other.name == pool.name)
        return makeError("--memory-pool: pool '{}' is given twice", pool.name);
    o.memoryPools.push_back(std::move(pool));
  }
  for (const auto& spec : maxDims) {
    auto eq = spec.rfind('=');
    int64_t n = -1;
    if (eq != std::string::npos && eq > 0) {
      auto [end, ec] = std::from_chars(spec.data() + eq + 1, spec.data() + spec.size(), n);
      if (ec != std::errc() || end != spec.data() + spec.size()) n = -1;
    }
    if (n < 0) return makeError("--max-dim '{}': expected NAME=N with N >= 0", spec);
    if (!o.maxDims.emplace(spec.substr(0, eq), n).second)
      return makeError("--max-dim: '{}' is given twice", spec.substr(0, eq));
  }
  return o;
}

std::string defaultCacheDir() {
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/kiln";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/kiln";
  return "/tmp/kiln-cache";
}

Expected<std::vector<GivenInput>> readGivenInputs(const std::vector<std::string>& specs,
                                                  const std::string& modelPath) {
  (void)modelPath;
  std::vector<GivenInput> out;
  for (const auto& spec : specs) {
    GivenInput g;
    auto eq = spec.find('=');
    // NAME=FILE unless the whole argument is an existing file.
    if (eq != std::string::npos && eq > 0 && !fs::exists(spec)) {
      g.name = spec.substr(0, eq);
      g.path = spec.substr(eq + 1);
    } else {
      g.path = spec;
    }
    auto t = readTensorFile(g.path);
    if (!t.ok()) return makeError("input {}: {}", g.name.empty() ? g.path : g.name, t.message());
    g.tensor = std::move(*t);
    out.push_back(std::move(g));
  }
  return out;
}

namespace {

bool isArtifactDir(const std::string& path) {
  return fs::is_directory(path) && fs::exists(fs::path(path) / "manifest.json");
}

std::string dimsText(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "]";
}

}  // namespace

Expected<std::string> prepareArtifact(const ModelArgs& model, const CodegenArgs& codegen,
                                      const std::string& cacheDir,
                                      const std::vector<GivenInput>& inputs) {
  if (isArtifactDir(model.path)) return model.path;
  // Specialize dynamic input dims from the given input files when --shape is silent.
  ModelArgs args = model;
  {
    auto raw = model.load(/*infer=*/false);
    if (!raw.ok()) return raw.error();
    std::set<std::string> fixed;
    for (const auto& s : model.shapes) fixed.insert(s.substr(0, s.rfind('=')));
    const auto& gin = raw->graph->inputs();
    for (size_t i = 0; i < inputs.size(); ++i) {
      const Value* v = nullptr;
      if (inputs[i].name.empty())
        v = i < gin.size() ? gin[i] : nullptr;
      else
        for (const Value* c : gin)
          if (c->name() == inputs[i].name) v = c;
      if (!v || v->shape().isStatic() || fixed.count(v->name())) continue;
      std::string flag = v->name() + "=";
      for (size_t d = 0; d < inputs[i].tensor.dims.size(); ++d)
        flag += (d ? "," : "") + std::to_string(inputs[i].tensor.dims[d]);
      args.shapes.push_back(flag);
    }
  }
  KILN_ASSIGN_OR_RETURN(std::string bytes, readFile(model.path));
  // The compiler itself is part of the key (its size, inode and modification time, cheaper
  // than hashing its bytes on every run): a rebuilt kiln never reuses an older one's artifacts.
  static const std::string self = [] {
    std::error_code ec;
    fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    struct stat st {};
    if (ec || ::stat(exe.c_str(), &st) != 0) return std::string();
    return fmt::format("{}:{}:{}.{}", st.st_size, st.st_ino, st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
  }();
  // KILN_CXXFLAGS (extra flags for the generated C++: sanitizers, a level) builds other code.
  const char* extra_flags = std::getenv("KILN_CXXFLAGS");
  std::string key = fmt::format(
      "{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}", sha256Hex(bytes), KILN_VERSION, self,
      extra_flags ? extra_flags : "", codegen.target, codegen.threads, codegen.profile,
      codegen.optLevel, codegen.name, codegen.weights, codegen.cxx, fmt::join(args.shapes, ";"),
      fmt::join(codegen.memoryPools, ";"), codegen.passes, codegen.fastMath,
      codegen.maxLoopIterations, fmt::join(codegen.maxDims, ";"), codegen.amx);
  if (!codegen.tuningCache.empty()) {
    // The choices, not the file's name, decide the code.
    KILN_ASSIGN_OR_RETURN(TuningCache tc, readTuningCache(codegen.tuningCache, tuningCpuName()));
    for (const auto& [k, c] : tc.choices()) key += "|" + k + "=" + c;
  }
  std::string hash = sha256Hex(key).substr(0, 32);
  fs::path dir = fs::path(cacheDir) / hash;
  if (isArtifactDir(dir.string())) return dir.string();
  std::error_code ec;
  fs::create_directories(cacheDir, ec);
  if (ec)
    return makeError("{}: cannot create the cache folder: {} — pass --cache DIR", cacheDir,
                     ec.message());
  fs::path tmp = fs::path(cacheDir) / (hash + ".tmp-" + std::to_string(getpid()));
  fs::remove_all(tmp, ec);
  auto loaded = args.load();
  if (!loaded.ok()) return loaded.error();
  KILN_ASSIGN_OR_RETURN(CompileOptions options,
                        codegen.toOptions(model.path, tmp.string(), args.shapes));
  options.archive = false;  // run and bench load the shared library only
  options.pchDir = (fs::path(cacheDir) / "pch").string();
  auto compiled = compileModel(*loaded, options);
  if (!compiled.ok()) {
    // Keep a failed build's folder (its build.log is what the error points to) beside the
    // cache entries, under a name that is never mistaken for a finished artifact.
    if (!fs::exists(tmp / "build.log", ec)) {
      fs::remove_all(tmp, ec);
      return compiled.error();
    }
    fs::path failed = fs::path(cacheDir) / (hash + ".failed");
    fs::remove_all(failed, ec);
    fs::rename(tmp, failed, ec);
    std::string message = compiled.error().message();
    for (size_t at; !ec && (at = message.find(tmp.string())) != std::string::npos;)
      message.replace(at, tmp.string().size(), failed.string());
    return Error(message);
  }
  fs::rename(tmp, dir, ec);
  if (ec) {  // another process finished first; use its copy
    fs::remove_all(tmp, ec);
    if (!isArtifactDir(dir.string()))
      return makeError("{}: cannot store the compiled model in the cache", dir.string());
  }
  return dir.string();
}

Status bindInputs(LoadedModel& m, const std::vector<GivenInput>& inputs) {
  const auto& specs = m.inputs();
  std::vector<bool> bound(specs.size(), false);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const GivenInput& g = inputs[i];
    size_t index = specs.size();
    if (g.name.empty()) {
      index = i;
      if (index >= specs.size())
        return makeError("input {} ({}): the model has only {} inputs", i + 1, g.path,
                         specs.size());
    } else {
      for (size_t k = 0; k < specs.size(); ++k)
        if (specs[k].name == g.name) index = k;
      if (index == specs.size()) {
        std::string names;
        for (const auto& s : specs) names += (names.empty() ? "" : ", ") + s.name;
        return makeError("input '{}': the model has no such input (inputs: {})", g.name, names);
      }
    }
    const TensorSpec& s = specs[index];
    if (bound[index]) return makeError("input '{}' is given twice", s.name);
    // numpy has no bfloat16: bf16 inputs come as 16-bit words (u16), as kiln writes them.
    bool bf16Words = s.dtype == DType::BF16 && g.tensor.dtype == DType::U16;
    if ((g.tensor.dtype != s.dtype && !bf16Words) || g.tensor.dims != s.dims)
      return makeError("input '{}': {} holds {}{} but the model expects {}{}", s.name, g.path,
                       dtypeName(g.tensor.dtype), dimsText(g.tensor.dims), dtypeName(s.dtype),
                       dimsText(s.dims));
    KILN_RETURN_IF_ERROR(m.setInput(index, g.tensor));
    bound[index] = true;
  }
  for (size_t k = 0; k < specs.size(); ++k)
    if (!bound[k])
      return makeError("input '{}' ({}{}) is missing — pass -i {}=FILE", specs[k].name,
                       dtypeName(specs[k].dtype), dimsText(specs[k].dims), specs[k].name);
  return Status();
}

/// Seeded inputs: floats uniform in [-1, 1], integers in [0, 8), bools fair.
HostTensor randomInput(const TensorSpec& s, std::mt19937_64& rng) {
  HostTensor t;
  t.dtype = s.dtype;
  t.dims = s.dims;
  t.data.assign(s.bytes, '\0');
  int64_t n = 1;
  for (int64_t d : s.dims) n *= d;
  std::uniform_real_distribution<float> uf(-1.f, 1.f);
  auto fill = [&](auto tag) {
    using T = decltype(tag);
    T* p = reinterpret_cast<T*>(t.data.data());
    for (int64_t i = 0; i < n; ++i) {
      if constexpr (std::is_floating_point_v<T>)
        p[i] = T(uf(rng));
      else if constexpr (std::is_same_v<T, bool>)
        p[i] = (rng() & 1) != 0;
      else
        p[i] = T(rng() % 8);
    }
  };
  switch (s.dtype) {
    case DType::F32:
      fill(float{});
      break;
    case DType::F64:
      fill(double{});
      break;
    case DType::I8:
      fill(int8_t{});
      break;
    case DType::U8:
      fill(uint8_t{});
      break;
    case DType::I16:
      fill(int16_t{});
      break;
    case DType::U16:
      fill(uint16_t{});
      break;
    case DType::I32:
      fill(int32_t{});
      break;
    case DType::U32:
      fill(uint32_t{});
      break;
    case DType::I64:
      fill(int64_t{});
      break;
    case DType::U64:
      fill(uint64_t{});
      break;
    case DType::Bool:
      fill(bool{});
      break;
    default:
      break;  // zeros
  }
  return t;
}

}  // namespace kiln::cli
