// Resolving and mapping ONNX external data files, confined to the model's folder.
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "onnx_import.h"

namespace kiln::onnx_import {
namespace {

// realpath(3) without a fixed-size buffer; nullopt (errno set) on failure.
std::optional<std::string> realPath(const std::string& path) {
  std::unique_ptr<char, decltype(&std::free)> p(::realpath(path.c_str(), nullptr), &std::free);
  if (!p) return std::nullopt;
  return std::string(p.get());
}

// Why a location is not a plain relative path below the model folder, or "" if it is.
std::string_view lexicalProblem(const std::string& location) {
  if (location.empty()) return "is empty";
  if (location.find('\0') != std::string::npos) return "contains a NUL byte";
  if (location.front() == '/') return "is an absolute path";
  size_t start = 0;
  while (start <= location.size()) {
    size_t end = location.find('/', start);
    if (end == std::string::npos) end = location.size();
    if (location.compare(start, end - start, "..") == 0) return "contains a '..' component";
    start = end + 1;
  }
  return {};
}

}  // namespace

Expected<std::shared_ptr<MappedFile>> ImportContext::mapExternal(const std::string& location,
                                                                 std::string_view what) {
  const char* kTodo =
      "external data must be a relative path to a file inside the model's folder; re-save the "
      "model with its data beside it";
  if (baseDir.empty())
    return fail(fmt::format("{}: uses external data '{}', which a model read from memory cannot "
                            "reference",
                            what, printableName(location)),
                "load the model from its file");
  if (std::string_view problem = lexicalProblem(location); !problem.empty())
    return fail(
        fmt::format("{}: external data location '{}' {}", what, printableName(location), problem),
        kTodo);
  if (realBaseDir_.empty()) {
    auto base = realPath(baseDir);
    if (!base)
      return fail(fmt::format("cannot resolve the model folder '{}': {}", printableName(baseDir),
                              std::strerror(errno)));
    realBaseDir_ = *base;
  }
  auto resolved = realPath(baseDir + "/" + location);
  if (!resolved)
    return fail(fmt::format("{}: cannot open external data file '{}': {}", what,
                            printableName(location), std::strerror(errno)),
                "put the data file next to the model");
  // Symbolic links inside the folder may point anywhere; only the resolved path counts.
  std::string prefix = realBaseDir_ == "/" ? realBaseDir_ : realBaseDir_ + "/";
  if (resolved->compare(0, prefix.size(), prefix) != 0)
    return fail(fmt::format("{}: external data location '{}' resolves outside the model's folder "
                            "(through a symbolic link)",
                            what, printableName(location)),
                kTodo);
  if (auto it = mapped_.find(*resolved); it != mapped_.end()) return it->second;
  auto file = MappedFile::open(*resolved);
  if (!file)
    return fail(fmt::format("{}: external data file '{}': {}", what, printableName(location),
                            file.message()),
                "put the data file next to the model");
  mapped_.emplace(*resolved, *file);
  return *file;
}

}  // namespace kiln::onnx_import
