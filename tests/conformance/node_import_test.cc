// Imports every ONNX backend node test with kiln and checks the inferred output types.
//
// Usage: kiln_node_import NODE_DIR [--report FILE] [--manifest FILE] [--filter SUBSTR]
//                         [--timeout SECONDS] [--no-fork] [-v]
// NODE_DIR holds <test>/model.onnx and <test>/test_data_set_0/output_K.pb, as written by
// scripts/gen_node_tests.sh; the manifest (default NODE_DIR/../manifest.json) names each test's
// ops and I/O kinds. Each test runs in a forked child with an alarm, so a crash or a hang is
// caught and attributed. Categories are documented in classify.h.
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "classify.h"

namespace fs = std::filesystem;
using kiln::conformance::Outcome;
using nlohmann::json;

namespace {

struct Args {
  std::string nodeDir, report, manifest, filter;
  int timeoutSeconds = 20;
  bool fork = true;
  bool verbose = false;
};

[[noreturn]] void usage(const std::string& why) {
  std::cerr << "kiln_node_import: " << why
            << "\nusage: kiln_node_import NODE_DIR [--report FILE] [--manifest FILE] "
               "[--filter SUBSTR] [--timeout SECONDS] [--no-fork] [-v]\n";
  std::exit(2);
}

Args parseArgs(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(s + " needs a value");
      return argv[++i];
    };
    if (s == "--report")
      a.report = value();
    else if (s == "--manifest")
      a.manifest = value();
    else if (s == "--filter")
      a.filter = value();
    else if (s == "--timeout")
      a.timeoutSeconds = std::max(1, std::atoi(value().c_str()));
    else if (s == "--no-fork")
      a.fork = false;
    else if (s == "-v" || s == "--verbose")
      a.verbose = true;
    else if (!s.empty() && s[0] == '-')
      usage("unknown option " + s);
    else if (a.nodeDir.empty())
      a.nodeDir = s;
    else
      usage("more than one NODE_DIR");
  }
  if (a.nodeDir.empty()) usage("missing NODE_DIR");
  if (a.manifest.empty()) a.manifest = (fs::path(a.nodeDir) / ".." / "manifest.json").string();
  return a;
}

json toJson(const Outcome& o) {
  return {{"category", o.category}, {"message", o.message}, {"detail", o.detail}};
}

Outcome fromJson(const json& j) {
  return {j.value("category", "crashed"), j.value("message", ""), j.value("detail", "")};
}

/// Runs classify() in a child process with an alarm; a signal or a bad exit is a crash.
Outcome runIsolated(const fs::path& dir, const json* info, int timeoutSeconds) {
  int fds[2];
  if (pipe(fds) != 0) return {"crashed", std::string("pipe: ") + std::strerror(errno), ""};
  std::fflush(stdout);
  std::fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) return {"crashed", std::string("fork: ") + std::strerror(errno), ""};
  if (pid == 0) {
    close(fds[0]);
    signal(SIGALRM, SIG_DFL);
    alarm(unsigned(timeoutSeconds));
    std::string out;
    try {
      out = toJson(kiln::conformance::classify(dir, info)).dump();
    } catch (const std::exception& e) {
      out = toJson({"crashed", std::string("uncaught exception: ") + e.what(), ""}).dump();
    }
    for (size_t done = 0; done < out.size();) {
      ssize_t n = write(fds[1], out.data() + done, out.size() - done);
      if (n <= 0) _exit(3);
      done += size_t(n);
    }
    _exit(0);
  }
  close(fds[1]);
  std::string buf;
  char chunk[4096];
  for (;;) {
    ssize_t n = read(fds[0], chunk, sizeof chunk);
    if (n > 0)
      buf.append(chunk, size_t(n));
    else if (n == 0 || errno != EINTR)
      break;
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    if (sig == SIGALRM)
      return {"crashed", "timed out after " + std::to_string(timeoutSeconds) + " s (hang?)", ""};
    return {"crashed",
            std::string("killed by signal ") + std::to_string(sig) + " (" + strsignal(sig) + ")",
            ""};
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || buf.empty())
    return {"crashed", "child exited with status " + std::to_string(WEXITSTATUS(status)), ""};
  json j = json::parse(buf, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return {"crashed", "child wrote an unreadable result", ""};
  return fromJson(j);
}

}  // namespace

int main(int argc, char** argv) {
  Args args = parseArgs(argc, argv);
  std::error_code ec;
  if (!fs::is_directory(args.nodeDir, ec)) {
    std::cerr << "kiln_node_import: " << args.nodeDir
              << " is not a directory; generate it with scripts/gen_node_tests.sh\n";
    return 2;
  }
  json manifest;
  if (std::ifstream mf(args.manifest); mf) {
    manifest = json::parse(mf, nullptr, /*allow_exceptions=*/false);
    if (manifest.is_discarded()) {
      std::cerr << "kiln_node_import: " << args.manifest << " is not valid JSON\n";
      return 2;
    }
  } else {
    std::cerr << "kiln_node_import: note: no manifest at " << args.manifest
              << "; ops are not attributed and sequence outputs are detected by read errors\n";
  }

  std::vector<fs::path> dirs;
  for (const auto& e : fs::directory_iterator(args.nodeDir))
    if (e.is_directory() && fs::exists(e.path() / "model.onnx") &&
        e.path().filename().string().find(args.filter) != std::string::npos)
      dirs.push_back(e.path());
  std::sort(dirs.begin(), dirs.end());
  if (dirs.empty()) {
    std::cerr << "kiln_node_import: no tests in " << args.nodeDir << "\n";
    return 2;
  }

  const std::vector<std::string> categories = {"inferred", "unsupported", "dynamic", "wrong",
                                               "crashed"};
  std::map<std::string, int> counts;
  for (const auto& c : categories) counts[c] = 0;
  json tests = json::object(), ops = json::object(), dynamic = json::array();
  std::map<std::string, int> detailCounts;
  std::vector<std::pair<std::string, Outcome>> failures;
  for (const fs::path& dir : dirs) {
    std::string name = dir.filename().string();
    const json* info = nullptr;
    if (manifest.contains("tests") && manifest["tests"].contains(name))
      info = &manifest["tests"][name];
    Outcome o = args.fork ? runIsolated(dir, info, args.timeoutSeconds)
                          : kiln::conformance::classify(dir, info);
    ++counts[o.category];
    if (!o.detail.empty()) ++detailCounts[o.category + ": " + o.detail];
    json entry = toJson(o);
    json opList = info ? info->value("ops", json::array()) : json::array();
    entry["ops"] = opList;
    tests[name] = entry;
    for (const auto& op : opList) {
      json& row = ops[op.get<std::string>()];
      if (row.is_null())
        for (const auto& c : categories) row[c] = 0;
      row[o.category] = row[o.category].get<int>() + 1;
    }
    if (o.category == "dynamic") dynamic.push_back(name);
    if (o.category == "wrong" || o.category == "crashed") failures.emplace_back(name, o);
    if (args.verbose)
      std::cout << o.category << "\t" << name << (o.message.empty() ? "" : "\t") << o.message
                << "\n";
  }

  int passed = counts["inferred"] + counts["unsupported"] + counts["dynamic"];
  int failed = counts["wrong"] + counts["crashed"];
  if (!args.report.empty()) {
    json report;
    report["node_dir"] = fs::absolute(args.nodeDir).lexically_normal().string();
    report["onnx_version"] = manifest.is_object() ? manifest.value("onnx_version", "") : "";
    report["total"] = int(dirs.size());
    report["counts"] = counts;
    report["passed"] = passed;
    report["failed"] = failed;
    report["details"] = detailCounts;
    report["dynamic"] = dynamic;
    report["ops"] = ops;
    report["tests"] = tests;
    std::ofstream rf(args.report);
    rf << report.dump(1) << "\n";
    if (!rf) {
      std::cerr << "kiln_node_import: cannot write " << args.report << "\n";
      return 2;
    }
  }

  for (const auto& [name, o] : failures)
    std::cout << o.category << "\t" << name << "\t" << o.message << "\n";
  std::cout << "node tests: " << dirs.size() << "\n";
  for (const auto& c : categories) std::cout << "  " << c << ": " << counts[c] << "\n";
  for (const auto& [d, n] : detailCounts) std::cout << "    " << d << ": " << n << "\n";
  std::cout << "node-import: " << passed << " passed, " << failed << " failed\n";
  return failed > 0 ? 1 : 0;
}
