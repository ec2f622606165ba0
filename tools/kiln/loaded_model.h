// A compiled artifact opened with dlopen: its C API resolved by symbol prefix.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kiln/ir/dtype.h"
#include "kiln/support/status.h"

namespace kiln::cli {

/// One input or output of a compiled model, read back through its C API.
struct TensorSpec {
  std::string name;
  DType dtype = DType::Undefined;
  std::vector<int64_t> dims;
  size_t bytes = 0;
};

/// A host tensor: element type, dims and bytes (from .npy / .pb files or random).
struct HostTensor {
  DType dtype = DType::Undefined;
  std::vector<int64_t> dims;
  std::string data;
};

/// An artifact folder's library, loaded once; contexts are created from it.
class LoadedModel {
 public:
  /// Opens OUTDIR (reads manifest.json for the prefix, dlopens lib<prefix>.so).
  static Expected<std::unique_ptr<LoadedModel>> open(const std::string& dir);
  ~LoadedModel();
  LoadedModel(const LoadedModel&) = delete;
  LoadedModel& operator=(const LoadedModel&) = delete;

  const std::vector<TensorSpec>& inputs() const { return inputs_; }
  const std::vector<TensorSpec>& outputs() const { return outputs_; }
  int64_t arenaBytes() const { return arenaBytes_; }
  int64_t weightsBytes() const { return weightsBytes_; }
  /// Threads the context runs (the artifact's --threads); 1 for older artifacts.
  int threads() const { return threads_; }

  /// One kernel call of run as manifest.json "ops" describes it.
  struct Step {
    std::string kernel, op, nodes;  ///< nodes: the source node names, comma-separated
    int64_t flops = 0, bytes = 0;
    std::string tuneKey, tuneChoice;  ///< a tunable op's signature and emitted candidate
  };
  const std::vector<Step>& steps() const { return steps_; }
  /// Whether the artifact was compiled with --profile.
  bool profiled() const { return profileLast_ != nullptr && profileCount_ && profileCount_() > 0; }
  /// Per step of the last run: {start, duration} in ns (profiled artifacts only).
  Expected<std::vector<std::pair<uint64_t, uint64_t>>> lastProfile() const;
  /// Per step of the last run: the threads' idle time in thread-ns ({P}_profile_idle); empty
  /// for artifacts from before it.
  Expected<std::vector<uint64_t>> lastIdle() const;

  /// Creates a context (external weights resolved beside the library).
  Status createContext();
  /// Lowers the created context's thread count ({P}_set_threads): 1..threads().
  Status setThreads(int threads);
  Status setInput(size_t index, const HostTensor& t);
  Status run();
  /// Copies output i out of the context, at its run-time shape (data-dependent sizes).
  Expected<HostTensor> output(size_t index) const;

 private:
  LoadedModel() = default;
  template <typename Fn>
  Status resolve(Fn*& fn, const char* suffix);

  void* handle_ = nullptr;
  void* ctx_ = nullptr;
  std::string dir_, prefix_, weightsFile_;
  std::vector<TensorSpec> inputs_, outputs_;
  int64_t arenaBytes_ = 0, weightsBytes_ = 0;
  int threads_ = 1;
  std::vector<Step> steps_;
  int (*profileCount_)() = nullptr;
  int (*profileLast_)(const void*, int, uint64_t*, uint64_t*) = nullptr;
  int (*profileIdle_)(const void*, int, uint64_t*) = nullptr;
  int (*createWithWeights_)(void**, void*, size_t, const char*) = nullptr;
  void (*destroy_)(void*) = nullptr;
  int (*setThreads_)(void*, int) = nullptr;
  int (*run_)(void*) = nullptr;
  int (*setInput_)(void*, int, const void*, size_t) = nullptr;
  int (*getOutput_)(const void*, int, void*, size_t) = nullptr;
  const char* (*statusString_)(int) = nullptr;
  const int64_t* (*runtimeShape_)(const void*, int) = nullptr;  // null: all shapes static
  size_t (*runtimeBytes_)(const void*, int) = nullptr;
};

/// Maps KILN_DTYPE_* codes of the runtime to IR dtypes.
DType dtypeFromRuntimeCode(int code);

/// Reads an input file: .npy, or an ONNX TensorProto .pb.
Expected<HostTensor> readTensorFile(const std::string& path);
/// Writes a tensor as .npy.
Status writeNpy(const std::string& path, const HostTensor& t);

}  // namespace kiln::cli
