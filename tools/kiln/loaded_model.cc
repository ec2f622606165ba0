// Loading compiled artifacts with dlopen, and host tensor files (.npy / .pb).
#include "loaded_model.h"

#include <dlfcn.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "kiln/frontend/onnx.h"
#include "kiln/support/file.h"
#include "kiln/support/npy.h"

namespace kiln::cli {

namespace fs = std::filesystem;

DType dtypeFromRuntimeCode(int code) {
  return code >= 1 && code <= 15 ? DType(code) : DType::Undefined;
}

template <typename Fn>
Status LoadedModel::resolve(Fn*& fn, const char* suffix) {
  std::string sym = prefix_ + suffix;
  fn = reinterpret_cast<Fn*>(dlsym(handle_, sym.c_str()));
  if (!fn) return makeError("{}: library lacks symbol {} — rebuild the artifact", dir_, sym);
  return Status();
}

Expected<std::unique_ptr<LoadedModel>> LoadedModel::open(const std::string& dir) {
  std::unique_ptr<LoadedModel> m(new LoadedModel());
  m->dir_ = dir;
  KILN_ASSIGN_OR_RETURN(std::string text,
                        readFile((fs::path(dir) / "manifest.json").string(), 1 << 28));
  nlohmann::json manifest = nlohmann::json::parse(text, nullptr, false);
  if (manifest.is_discarded() || !manifest.is_object() || !manifest.contains("name") ||
      !manifest["name"].is_string())
    return makeError("{}: manifest.json is not a kiln manifest — recompile with kiln compile", dir);
  m->prefix_ = manifest["name"].get<std::string>();
  m->arenaBytes_ = manifest.value("arena_bytes", int64_t(0));
  m->weightsBytes_ = manifest.value("weights_bytes", int64_t(0));
  m->weightsFile_ = manifest.value("weights_file", std::string());
  m->threads_ = manifest.value("threads", 1);
  if (manifest.contains("ops") && manifest["ops"].is_array())
    for (const auto& op : manifest["ops"]) {
      if (!op.is_object()) continue;
      Step st;
      st.kernel = op.value("kernel", std::string());
      st.op = op.value("op", std::string());
      st.flops = op.value("flops", int64_t(0));
      st.bytes = op.value("bytes", int64_t(0));
      if (op.contains("tuning") && op["tuning"].is_object()) {
        st.tuneKey = op["tuning"].value("key", std::string());
        st.tuneChoice = op["tuning"].value("choice", std::string());
      }
      if (op.contains("nodes") && op["nodes"].is_array())
        for (const auto& nm : op["nodes"])
          if (nm.is_string()) st.nodes += (st.nodes.empty() ? "" : ",") + nm.get<std::string>();
      m->steps_.push_back(std::move(st));
    }
  fs::path lib = fs::absolute(fs::path(dir) / ("lib" + m->prefix_ + ".so"));
  m->handle_ = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!m->handle_)
    return makeError("{}: cannot load {}: {} — was it built? (kiln compile builds it)", dir,
                     lib.string(), dlerror());
  int (*numInputs)() = nullptr, (*numOutputs)() = nullptr;
  const char* (*inName)(int) = nullptr, *(*outName)(int) = nullptr;
  int (*inDtype)(int) = nullptr, (*outDtype)(int) = nullptr;
  int (*inRank)(int) = nullptr, (*outRank)(int) = nullptr;
  const int64_t* (*inShape)(int) = nullptr, *(*outShape)(int) = nullptr;
  size_t (*inBytes)(int) = nullptr, (*outBytes)(int) = nullptr;
  KILN_RETURN_IF_ERROR(m->resolve(numInputs, "_num_inputs"));
  KILN_RETURN_IF_ERROR(m->resolve(numOutputs, "_num_outputs"));
  KILN_RETURN_IF_ERROR(m->resolve(inName, "_input_name"));
  KILN_RETURN_IF_ERROR(m->resolve(outName, "_output_name"));
  KILN_RETURN_IF_ERROR(m->resolve(inDtype, "_input_dtype"));
  KILN_RETURN_IF_ERROR(m->resolve(outDtype, "_output_dtype"));
  KILN_RETURN_IF_ERROR(m->resolve(inRank, "_input_rank"));
  KILN_RETURN_IF_ERROR(m->resolve(outRank, "_output_rank"));
  KILN_RETURN_IF_ERROR(m->resolve(inShape, "_input_shape"));
  KILN_RETURN_IF_ERROR(m->resolve(outShape, "_output_shape"));
  KILN_RETURN_IF_ERROR(m->resolve(inBytes, "_input_bytes"));
  KILN_RETURN_IF_ERROR(m->resolve(outBytes, "_output_bytes"));
  KILN_RETURN_IF_ERROR(m->resolve(m->createWithWeights_, "_create_with_weights"));
  KILN_RETURN_IF_ERROR(m->resolve(m->setThreads_, "_set_threads"));
  KILN_RETURN_IF_ERROR(m->resolve(m->destroy_, "_destroy"));
  KILN_RETURN_IF_ERROR(m->resolve(m->run_, "_run"));
  KILN_RETURN_IF_ERROR(m->resolve(m->setInput_, "_set_input"));
  KILN_RETURN_IF_ERROR(m->resolve(m->getOutput_, "_get_output"));
  KILN_RETURN_IF_ERROR(m->resolve(m->statusString_, "_status_string"));
  // Run-time shapes of data-dependent outputs; artifacts from before them lack the symbols.
  if (!m->resolve(m->runtimeShape_, "_output_runtime_shape").ok() ||
      !m->resolve(m->runtimeBytes_, "_output_runtime_bytes").ok()) {
    m->runtimeShape_ = nullptr;
    m->runtimeBytes_ = nullptr;
  }
  // Profiling hooks; artifacts from before them lack the symbols.
  if (!m->resolve(m->profileCount_, "_profile_count").ok() ||
      !m->resolve(m->profileLast_, "_profile_last").ok()) {
    m->profileCount_ = nullptr;
    m->profileLast_ = nullptr;
  }
  if (!m->resolve(m->profileIdle_, "_profile_idle").ok()) m->profileIdle_ = nullptr;
  auto specs = [](int n, auto name, auto dtype, auto rank, auto shape, auto bytes) {
    std::vector<TensorSpec> out;
    for (int i = 0; i < n; ++i) {
      TensorSpec s;
      s.name = name(i);
      s.dtype = dtypeFromRuntimeCode(dtype(i));
      s.dims.assign(shape(i), shape(i) + rank(i));
      s.bytes = bytes(i);
      out.push_back(std::move(s));
    }
    return out;
  };
  m->inputs_ = specs(numInputs(), inName, inDtype, inRank, inShape, inBytes);
  m->outputs_ = specs(numOutputs(), outName, outDtype, outRank, outShape, outBytes);
  return m;
}

LoadedModel::~LoadedModel() {
  if (ctx_ && destroy_) destroy_(ctx_);
  if (handle_) dlclose(handle_);
}

Expected<std::vector<std::pair<uint64_t, uint64_t>>> LoadedModel::lastProfile() const {
  if (!profiled()) return makeError("{}: not compiled with --profile", dir_);
  std::vector<std::pair<uint64_t, uint64_t>> out;
  for (int i = 0; i < profileCount_(); ++i) {
    uint64_t start = 0, ns = 0;
    int rc = profileLast_(ctx_, i, &start, &ns);
    if (rc != 0) return makeError("{}: profile step {}: {}", dir_, i, statusString_(rc));
    out.push_back({start, ns});
  }
  return out;
}

Expected<std::vector<uint64_t>> LoadedModel::lastIdle() const {
  std::vector<uint64_t> out;
  if (!profiled() || !profileIdle_) return out;
  for (int i = 0; i < profileCount_(); ++i) {
    uint64_t ns = 0;
    int rc = profileIdle_(ctx_, i, &ns);
    if (rc != 0) return makeError("{}: profile step {}: {}", dir_, i, statusString_(rc));
    out.push_back(ns);
  }
  return out;
}

Status LoadedModel::createContext() {
  std::string weights =
      weightsFile_.empty() ? std::string() : (fs::path(dir_) / weightsFile_).string();
  int rc = createWithWeights_(&ctx_, nullptr, 0, weights.empty() ? nullptr : weights.c_str());
  if (rc != 0) return makeError("{}: create failed: {}", dir_, statusString_(rc));
  return Status();
}

Status LoadedModel::setThreads(int threads) {
  if (threads < 1 || threads > threads_)
    return makeError("--run-threads {}: this artifact runs 1 to {} threads (compile it with "
                     "--threads {} or more)",
                     threads, threads_, threads);
  int rc = setThreads_(ctx_, threads);
  if (rc != 0) return makeError("{}: set_threads({}) failed: {}", dir_, threads, statusString_(rc));
  threads_ = threads;
  return Status();
}

Status LoadedModel::setInput(size_t index, const HostTensor& t) {
  int rc = setInput_(ctx_, int(index), t.data.data(), t.data.size());
  if (rc != 0) return makeError("input '{}': {}", inputs_[index].name, statusString_(rc));
  return Status();
}

Status LoadedModel::run() {
  int rc = run_(ctx_);
  if (rc != 0) return makeError("{}: run failed: {}", dir_, statusString_(rc));
  return Status();
}

Expected<HostTensor> LoadedModel::output(size_t index) const {
  HostTensor t;
  t.dtype = outputs_[index].dtype;
  t.dims = outputs_[index].dims;
  t.data.resize(outputs_[index].bytes);
  int rc = getOutput_(ctx_, int(index), t.data.data(), t.data.size());
  if (rc != 0) return makeError("output '{}': {}", outputs_[index].name, statusString_(rc));
  if (runtimeShape_ && runtimeBytes_) {
    // A data-dependent output is packed at its run-time shape at the start of its buffer.
    const int64_t* dims = runtimeShape_(ctx_, int(index));
    size_t bytes = runtimeBytes_(ctx_, int(index));
    if (!dims || bytes > t.data.size())
      return makeError("output '{}': run-time shape out of range", outputs_[index].name);
    t.dims.assign(dims, dims + t.dims.size());
    t.data.resize(bytes);
  }
  return t;
}

namespace {

struct NpyType {
  DType dtype;
  const char* descr;
};
constexpr NpyType kNpyTypes[] = {
    {DType::F32, "<f4"}, {DType::F64, "<f8"}, {DType::F16, "<f2"}, {DType::I8, "|i1"},
    {DType::U8, "|u1"},  {DType::I16, "<i2"}, {DType::U16, "<u2"}, {DType::I32, "<i4"},
    {DType::U32, "<u4"}, {DType::I64, "<i8"}, {DType::U64, "<u8"}, {DType::Bool, "|b1"},
};

}  // namespace

Expected<HostTensor> readTensorFile(const std::string& path) {
  HostTensor t;
  if (path.size() >= 4 && path.substr(path.size() - 4) == ".npy") {
    KILN_ASSIGN_OR_RETURN(NpyArray a, readNpyFile(path));
    std::string descr = a.descr;
    if (descr.size() == 3 && descr[0] == '=') descr[0] = '<';
    if (descr == "<i1" || descr == "<u1" || descr == "<b1") descr[0] = '|';
    for (const auto& n : kNpyTypes)
      if (descr == n.descr) t.dtype = n.dtype;
    if (t.dtype == DType::Undefined)
      return makeError("{}: .npy element type '{}' is not supported", path, a.descr);
    t.dims = a.shape;
    t.data = std::move(a.data);
    return t;
  }
  KILN_ASSIGN_OR_RETURN(Tensor pb, readTensorProtoFile(path));
  if (pb.dtype() == DType::String) return makeError("{}: string tensors are not supported", path);
  t.dtype = pb.dtype();
  t.dims = pb.dims();
  t.data.assign(reinterpret_cast<const char*>(pb.bytes()), pb.byteSize());
  return t;
}

Status writeNpy(const std::string& path, const HostTensor& t) {
  for (const auto& n : kNpyTypes)
    if (n.dtype == t.dtype)
      return writeNpyFile(path, n.descr, t.dims, t.data.data(), t.data.size());
  if (t.dtype == DType::BF16)  // numpy has no bfloat16: store raw 16-bit words
    return writeNpyFile(path, "<u2", t.dims, t.data.data(), t.data.size());
  return makeError("{}: cannot write {} as .npy", path, dtypeName(t.dtype));
}

}  // namespace kiln::cli
