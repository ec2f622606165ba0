// libFuzzer target: the C API of a generated artifact (models/shapes_cnn.onnx compiled at build
// time with --name fuzzmodel, linked in) driven by fuzzed calls: create with caller arenas of
// any size and alignment, set/bind inputs and outputs with fuzzed indices, names and byte
// counts, run, read outputs, set threads, destroy. Every call must return a status, never
// touch memory outside what it was given (each buffer is allocated at exactly the size
// passed), and a run must succeed once every input is set.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "model.h"

namespace {

struct Free {
  void operator()(void* p) const { std::free(p); }
};
using Buffer = std::unique_ptr<uint8_t, Free>;

// A heap buffer ending exactly after `bytes` bytes, so ASan sees any access past them.
// The offset shifts its start off the allocator's alignment.
uint8_t* newBuffer(std::vector<Buffer>& keep, size_t bytes, size_t offset, FuzzedDataProvider& in) {
  keep.emplace_back(static_cast<uint8_t*>(std::malloc(offset + bytes ? offset + bytes : 1)));
  uint8_t* p = keep.back().get() + offset;
  std::vector<uint8_t> fill = in.ConsumeBytes<uint8_t>(bytes);
  for (size_t i = 0; i < bytes; ++i) p[i] = i < fill.size() ? fill[i] : uint8_t(i);
  return p;
}

// A byte count near the tensor's: exact most often, else off by a little or wildly wrong.
size_t byteCount(FuzzedDataProvider& in, size_t exact) {
  switch (in.ConsumeIntegralInRange(0, 3)) {
    case 0:
      return exact;
    case 1:
      return exact + in.ConsumeIntegralInRange<size_t>(0, 8) - 4;
    case 2:
      return in.ConsumeIntegralInRange<size_t>(0, 4 * exact + 64);
    default:
      return in.ConsumeIntegral<size_t>();
  }
}

int anyIndex(FuzzedDataProvider& in, int count) {
  return in.ConsumeBool() ? in.ConsumeIntegralInRange(-1, count) : in.ConsumeIntegral<int>();
}

// A real input/output name, a prefix or extension of one, or arbitrary bytes.
std::string anyName(FuzzedDataProvider& in, const char* real) {
  std::string name = real ? real : "";
  switch (in.ConsumeIntegralInRange(0, 2)) {
    case 0:
      return name;
    case 1:
      return name.substr(0, in.ConsumeIntegralInRange<size_t>(0, name.size())) +
             in.ConsumeRandomLengthString(4);
    default:
      return in.ConsumeRandomLengthString(32);
  }
}

// Sizes are only ever claimed up to what a buffer really holds: a caller who lies about a
// buffer's size is outside any C API's contract.
class Session {
 public:
  explicit Session(FuzzedDataProvider& in) : in_(in) {}
  ~Session() { fuzzmodel_destroy(ctx_); }

  void step() {
    int nin = fuzzmodel_num_inputs(), nout = fuzzmodel_num_outputs();
    switch (in_.ConsumeIntegralInRange(0, 11)) {
      case 0:
        create();
        break;
      case 1:
        fuzzmodel_destroy(ctx_);  // NULL is allowed
        ctx_ = nullptr;
        break;
      case 2: {
        int i = anyIndex(in_, nin);
        size_t bytes = byteCount(in_, fuzzmodel_input_bytes(i));
        markSet(i, fuzzmodel_set_input(ctx_, i, sized(bytes), bytes));
        break;
      }
      case 3: {
        std::string name = anyName(in_, fuzzmodel_input_name(in_.ConsumeIntegralInRange(0, nin)));
        size_t bytes = byteCount(in_, fuzzmodel_input_bytes(fuzzmodel_input_index(name.c_str())));
        markSet(fuzzmodel_input_index(name.c_str()),
                fuzzmodel_set_input_by_name(ctx_, in_.ConsumeBool() ? name.c_str() : nullptr,
                                            sized(bytes), bytes));
        break;
      }
      case 4: {
        int i = anyIndex(in_, nin);
        size_t bytes = byteCount(in_, fuzzmodel_input_bytes(i));
        markSet(i, fuzzmodel_bind_input(ctx_, i, sized(bytes), bytes));
        break;
      }
      case 5: {
        int i = anyIndex(in_, nout);
        size_t bytes = byteCount(in_, fuzzmodel_output_bytes(i));
        check(fuzzmodel_bind_output(ctx_, i, sized(bytes), bytes));
        break;
      }
      case 6: {
        int i = anyIndex(in_, nout);
        size_t bytes = byteCount(in_, fuzzmodel_output_bytes(i));
        check(fuzzmodel_get_output(ctx_, i, sized(bytes), bytes));
        std::string name = anyName(in_, fuzzmodel_output_name(i));
        check(fuzzmodel_get_output_by_name(ctx_, name.c_str(), sized(bytes), bytes));
        break;
      }
      case 7:
        run();
        break;
      case 8:
        check(fuzzmodel_set_threads(ctx_, in_.ConsumeIntegralInRange(-2, 70)));
        break;
      case 9:
        signature(anyIndex(in_, nin), anyIndex(in_, nout));
        break;
      case 10: {
        int i = anyIndex(in_, nout);
        if (const int64_t* dims = fuzzmodel_output_runtime_shape(ctx_, i))
          for (int d = 0; d < fuzzmodel_output_rank(i); ++d) sink_ += uint64_t(dims[d]);
        sink_ += fuzzmodel_output_runtime_bytes(ctx_, i);
        uint64_t start = 0, duration = 0;
        check(fuzzmodel_profile_last(ctx_, anyIndex(in_, 8), &start, &duration));
        check(fuzzmodel_profile_idle(ctx_, anyIndex(in_, 8), &duration));
        break;
      }
      default:
        sink_ += fuzzmodel_status_string(in_.ConsumeIntegral<int>())[0];
        break;
    }
  }

 private:
  // With a caller arena of fuzzed size and alignment, or NULL (allocated by create).
  void create() {
    fuzzmodel_destroy(ctx_);
    ctx_ = nullptr;
    set_.assign(size_t(fuzzmodel_num_inputs()), false);
    void* arena = nullptr;
    size_t bytes = 0;
    if (in_.ConsumeBool()) {
      bytes = byteCount(in_, fuzzmodel_arena_bytes());
      if (bytes > (size_t(1) << 24)) bytes = fuzzmodel_arena_bytes();
      size_t offset = in_.ConsumeBool() ? 0 : in_.ConsumeIntegralInRange<size_t>(1, 63);
      keep_.emplace_back(
          static_cast<uint8_t*>(std::aligned_alloc(64, (bytes + offset + 64) & ~size_t(63))));
      arena = keep_.back().get() + offset;
    }
    check(fuzzmodel_create(in_.ConsumeBool() ? &ctx_ : nullptr, arena, bytes));
  }

  void run() {
    int st = fuzzmodel_run(ctx_);
    check(st);
    bool allSet = ctx_ != nullptr;
    for (bool b : set_) allSet = allSet && b;
    if (allSet && st != KILN_OK) __builtin_trap();  // every input set: the run must succeed
  }

  void signature(int i, int o) {
    const char* name = fuzzmodel_input_name(i);
    if (name) sink_ += uint64_t(fuzzmodel_input_index(name) == i ? 0 : 1);
    sink_ += uint64_t(fuzzmodel_input_dtype(i) + fuzzmodel_input_rank(i) +
                      fuzzmodel_output_dtype(o) + fuzzmodel_output_rank(o));
    if (const int64_t* dims = fuzzmodel_input_shape(i))
      for (int d = 0; d < fuzzmodel_input_rank(i); ++d) sink_ += uint64_t(dims[d]);
    sink_ += fuzzmodel_input_bytes(i) + fuzzmodel_output_bytes(o);
    sink_ += uint64_t(fuzzmodel_num_pools()) + fuzzmodel_pool_bytes(anyIndex(in_, 3));
    if (const char* pool = fuzzmodel_pool_name(anyIndex(in_, 3))) sink_ += pool[0];
  }

  // A buffer of `bytes`, or NULL (allowed only where the API says so). Above 1 MiB (more than
  // any tensor of the model) the buffer is empty: the API must refuse the size unread.
  uint8_t* sized(size_t bytes) {
    if (in_.ConsumeIntegralInRange(0, 15) == 0) return nullptr;
    if (bytes > (size_t(1) << 20)) bytes = 0;
    return newBuffer(keep_, bytes, in_.ConsumeIntegralInRange<size_t>(0, 7), in_);
  }

  // Every status is one of the documented codes.
  static void check(int status) {
    if (status < KILN_OK || status > KILN_ERR_DATA) __builtin_trap();
  }

  void markSet(int input, int status) {
    check(status);
    if (status == KILN_OK) {
      if (!ctx_ || input < 0 || input >= int(set_.size())) __builtin_trap();  // OK for what?
      set_[size_t(input)] = true;
    }
  }

  FuzzedDataProvider& in_;
  fuzzmodel_context* ctx_ = nullptr;
  std::vector<Buffer> keep_;
  std::vector<bool> set_ = std::vector<bool>(size_t(fuzzmodel_num_inputs()), false);
  uint64_t sink_ = 0;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  Session s(in);
  for (int steps = 0; steps < 64 && in.remaining_bytes() > 0; ++steps) s.step();
  return 0;
}
