// Invoking the system C++ compiler on an artifact folder.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "kiln/support/file.h"
#include "kiln/support/sha256.h"
#include "program.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

/// Runs argv in `cwd` with stdout/stderr appended to `log`; returns the exit status.
Expected<int> runTool(const std::vector<std::string>& argv, const fs::path& cwd,
                      const fs::path& log) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = fork();
  if (pid < 0) return makeError("cannot start {}: fork failed", argv[0]);
  if (pid == 0) {
    int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    if (chdir(cwd.c_str()) != 0) _exit(126);
    execvp(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return makeError("waiting for {} failed", argv[0]);
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

std::vector<std::string> splitFlags(const char* env) {
  std::vector<std::string> out;
  if (!env) return out;
  std::string cur;
  for (const char* c = env; *c; ++c) {
    if (*c == ' ') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(*c);
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

/// A file's text, or "" when it cannot be read.
std::string textOf(const fs::path& path) {
  auto text = readFile(path.string());
  return text.ok() ? *text : std::string();
}

/// `cxx --version`'s output when cxx is GCC (whose precompiled headers the -include below
/// finds); empty for any other compiler or one that does not run. Asked once per compiler.
std::string gccVersion(const std::string& cxx, const fs::path& scratch) {
  static std::mutex mu;
  static std::map<std::string, std::string> known;
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = known.find(cxx); it != known.end()) return it->second;
  fs::path log = scratch / ("version-" + std::to_string(getpid()) + ".txt");
  std::error_code ec;
  fs::remove(log, ec);
  std::string version;
  auto rc = runTool({cxx, "--version"}, scratch, log);
  if (rc.ok() && *rc == 0) version = textOf(log);
  fs::remove(log, ec);
  if (version.find("Free Software Foundation") == std::string::npos ||
      version.find("clang") != std::string::npos)
    version.clear();
  known[cxx] = version;
  return version;
}

/// The <...> headers model.cc in `dir` includes, directly or through the "..." headers of the
/// artifact folder (the including file's folder first, then `dir`: -I.).
std::set<std::string> systemHeaders(const fs::path& dir) {
  std::set<std::string> system;
  std::set<fs::path> seen;
  std::vector<fs::path> todo = {dir / "model.cc"};
  std::error_code ec;
  while (!todo.empty()) {
    fs::path file = todo.back();
    todo.pop_back();
    if (!seen.insert(file).second) continue;
    std::istringstream in(textOf(file));
    for (std::string line; std::getline(in, line);) {
      size_t at = line.find_first_not_of(" \t");
      if (at == std::string::npos || line.compare(at, 8, "#include") != 0) continue;
      size_t open = line.find_first_of("<\"", at + 8);
      if (open == std::string::npos) continue;
      size_t close = line.find(line[open] == '<' ? '>' : '"', open + 1);
      if (close == std::string::npos) continue;
      std::string name = line.substr(open + 1, close - open - 1);
      if (line[open] == '<') {
        system.insert(name);
        continue;
      }
      for (const fs::path& base : {file.parent_path(), dir})
        if (fs::exists(base / name, ec)) {
          todo.push_back(fs::weakly_canonical(base / name, ec));
          break;
        }
    }
  }
  return system;
}

/// The -O level GCC takes from these flags (the last -O wins; '0' without any).
char lastOptLevel(const std::vector<std::string>& flags) {
  char level = '0';
  for (const auto& f : flags)
    if (f.size() >= 2 && f[0] == '-' && f[1] == 'O') level = f.size() == 2 ? '1' : f[2];
  return level;
}

/// The smallest of two fixed supersets that holds `headers` (else `headers` as they are): the
/// reference kernels' headers, and those with the thread pool's (and <immintrin.h> where the
/// code includes it). One precompiled header then serves models whose kernels include different
/// subsets: the node tests needed 8-11 (0.6 s each to build, 2.8 s with <immintrin.h> and the
/// thread pool's headers), now 2-3 (-pthread is part of the key); loading the larger one costs
/// a few ms. Only where the code is optimized: at -O0 GCC emits a header's unused constants,
/// so an extra header would change the library's bytes (and a build with the precompiled header
/// must give the bytes of one without it).
std::set<std::string> canonicalHeaders(std::set<std::string> headers) {
  static const std::set<std::string> kReference = {
      "algorithm",  "cerrno",     "cfloat",      "cmath",   "cstdint",  "cstdlib",
      "cstring",    "fcntl.h",    "limits",      "link.h",  "stddef.h", "stdint.h",
      "sys/mman.h", "sys/stat.h", "type_traits", "unistd.h"};
  static const std::set<std::string> kThreads = {
      "atomic", "condition_variable", "mutex", "new", "pthread.h", "sched.h", "time.h"};
  auto within = [&](const std::set<std::string>& sup) {
    return std::includes(sup.begin(), sup.end(), headers.begin(), headers.end());
  };
  if (within(kReference)) return kReference;
  std::set<std::string> all = kReference;
  all.insert(kThreads.begin(), kThreads.end());
  if (headers.count("immintrin.h")) all.insert("immintrin.h");
  return within(all) ? all : headers;
}

/// `-include DIR/kiln_pch.h` when a GCC precompiled header of the system headers the generated
/// code includes exists or can be built under pchDir for exactly this compiler and these flags
/// (the key); else nothing, and the build parses the headers as before. Parsing them
/// (<immintrin.h>, <condition_variable>, <cmath>, ...) is about 1 s of a build of a model
/// that uses the CPU kernels, loading their precompiled form ~0.3 s (a model of reference loops
/// alone: 0.31 -> 0.21 s). Only system headers: the kiln headers are part of the artifact and
/// still parsed from its folder, so the artifact's own build (its CMakeLists.txt, no
/// precompiled header) compiles the same text. A header GCC finds unusable (-Winvalid-pch says
/// why in build.log) is parsed from kiln_pch.h instead: same code, slower.
std::vector<std::string> precompiledHeader(const Program& p, const CompileOptions& o,
                                           const std::string& cxx,
                                           const std::vector<std::string>& flags) {
  if (o.pchDir.empty() || std::getenv("KILN_NO_PCH")) return {};
  // The system headers the build would include (exactly those at -O0 and -Og: GCC emits a
  // header's unused constants there, so one more header would change the library's bytes; a
  // fixed superset where the code is optimized, canonicalHeaders), and only where they
  // include <cmath> (the reference kernels and the CPU kernels do): a model of data movement
  // alone parses its few headers about as fast as it would load them.
  std::set<std::string> headers = systemHeaders(o.outDir);
  if (p.target.kernelIsa() == "generic") headers.erase("immintrin.h");  // under #if there
  if (!headers.count("cmath")) return {};
  if (std::string_view("123s").find(lastOptLevel(flags)) != std::string_view::npos)
    headers = canonicalHeaders(std::move(headers));
  std::error_code ec;
  fs::path root = fs::absolute(o.pchDir, ec);
  if (ec || (fs::create_directories(root, ec), ec)) return {};
  std::string version = gccVersion(cxx, root);
  if (version.empty()) return {};
  std::string text = "// System headers of kiln's generated code, precompiled (kiln run/bench).\n";
  for (const auto& h : headers) text += fmt::format("#include <{}>\n", h);
  std::string key = version + "|" + cxx + "|" + text;
  for (const auto& f : flags) key += "|" + f;
  fs::path dir = root / sha256Hex(key).substr(0, 32);
  fs::path header = dir / "kiln_pch.h", gch = dir / "kiln_pch.h.gch";
  if (!fs::exists(gch, ec)) {
    // Built under a private name, renamed into place: concurrent builds never see half a file.
    fs::create_directories(dir, ec);
    std::string tag = ".tmp-" + std::to_string(getpid());
    fs::path tmpHeader = dir / ("kiln_pch.h" + tag), tmpGch = dir / ("kiln_pch.h.gch" + tag);
    if (!writeFile(tmpHeader.string(), text.data(), text.size()).ok()) return {};
    std::vector<std::string> argv = {cxx};
    argv.insert(argv.end(), flags.begin(), flags.end());
    argv.insert(argv.end(), {"-x", "c++-header", tmpHeader.string(), "-o", tmpGch.string()});
    fs::path log = dir / ("build.log" + tag);
    auto rc = runTool(argv, dir, log);
    bool built = rc.ok() && *rc == 0;
    if (built) fs::rename(tmpHeader, header, ec);
    if (built && !ec) fs::rename(tmpGch, gch, ec);
    fs::remove(tmpHeader, ec);
    fs::remove(tmpGch, ec);
    fs::remove(log, ec);
    if (!built) return {};
  }
  if (!fs::exists(header, ec) || !fs::exists(gch, ec)) return {};
  return {"-Winvalid-pch", "-include", header.string()};
}

}  // namespace

std::vector<std::string> modelCxxFlags(const Program& p, const CompileOptions& o) {
  // -O3 (kiln's default level): GCC then unrolls the Winograd transforms' 6x6 loops, so their
  // arrays stay in registers (ResNet-50's Winograd layers 10-15% faster, the whole model 1.8%
  // at 1 thread). The same floating-point semantics at every level (no fast-math,
  // -ffp-contract=off), so the outputs are bit-identical; lower levels keep -O2 (faster builds).
  // Without any -O the kernels run about 25x slower (MobileNetV2 65 ms against 2.5).
  std::vector<std::string> flags = {o.optLevel >= 3 ? "-O3" : "-O2", "-ffp-contract=off",
                                    "-fno-exceptions"};
  for (const auto& f : p.target.compilerFlags()) flags.push_back(f);
  return flags;
}

Expected<std::string> buildArtifact(const Program& p, const CompileOptions& o) {
  fs::path dir = fs::absolute(o.outDir);
  std::string cxx = o.cxx;
  if (cxx.empty()) cxx = std::getenv("CXX") ? std::getenv("CXX") : "c++";
  fs::path log = dir / "build.log";
  fs::path tmp = dir / ".kiln-build";
  std::error_code ec;
  fs::remove(log, ec);
  fs::create_directories(tmp, ec);
  std::vector<std::string> flags = {"-std=c++17", "-fPIC", "-I."};
  for (const auto& f : modelCxxFlags(p, o)) flags.push_back(f);
  if (p.usesThreadPool) flags.push_back("-pthread");
  for (const auto& f : splitFlags(std::getenv("KILN_CXXFLAGS"))) flags.push_back(f);
  std::vector<std::string> objects;
  auto step = [&](std::vector<std::string> argv) -> Status {
    KILN_ASSIGN_OR_RETURN(int rc, runTool(argv, dir, log));
    if (rc != 0)
      return makeError("building the generated library failed ({} exited with {}) — see {}",
                       argv[0], rc, log.string());
    return Status();
  };
  std::vector<std::string> cc = {cxx};
  cc.insert(cc.end(), flags.begin(), flags.end());
  auto compileModel = cc;
  for (const auto& f : precompiledHeader(p, o, cxx, flags)) compileModel.push_back(f);
  compileModel.insert(compileModel.end(), {"-c", "model.cc", "-o", ".kiln-build/model.o"});
  KILN_RETURN_IF_ERROR(step(compileModel));
  objects.push_back(".kiln-build/model.o");
  if (o.weights == WeightsMode::Embedded && p.weightsBytes > 0) {
    KILN_RETURN_IF_ERROR(step({cxx, "-c", "-Wa,-I.", "weights.S", "-o", ".kiln-build/weights.o"}));
    objects.push_back(".kiln-build/weights.o");
  }
  std::string so = "lib" + p.prefix + ".so";
  std::string ar = "lib" + p.prefix + ".a";
  // -static-libstdc++: the generated code needs nothing from the C++ library (no exceptions,
  // no heap), and the linker then reads libstdc++.a's index instead of the shared library's
  // whole symbol table: 70 -> 50 ms a link, a node test's library being ~0.45 s in all. If
  // some code ever did need it, the library would carry its own copy, not fail to load.
  std::vector<std::string> link = {cxx, "-shared", "-static-libstdc++", "-o", so};
  if (p.usesThreadPool) link.push_back("-pthread");
  link.insert(link.end(), objects.begin(), objects.end());
  KILN_RETURN_IF_ERROR(step(link));
  fs::remove(dir / ar, ec);
  if (o.archive) {
    std::vector<std::string> archive = {"ar", "rcsD", ar};
    archive.insert(archive.end(), objects.begin(), objects.end());
    KILN_RETURN_IF_ERROR(step(archive));
  }
  fs::remove_all(tmp, ec);
  fs::remove(log, ec);
  return (dir / so).string();
}

}  // namespace kiln
