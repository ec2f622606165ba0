// kiln optimized CPU kernels: the thread pool of a generated model's context. Created once
// (at create or {P}_set_threads), never during a run; a run hands each parallel kernel's work
// units to the pool's threads and the calling thread, which all take units from one counter.
// Kernels split work only over independent outputs and use per-thread scratch only as a
// temporary, so which thread computes a unit never changes its result: outputs are
// bit-identical at any thread count.
#pragma once

#include <pthread.h>
#include <sched.h>
#include <time.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace kiln_cpu {

class ThreadPool {
 public:
  static constexpr int kMaxThreads = 64;

  ThreadPool() = default;
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;
  ~ThreadPool() { stop(); }

  /// Starts threads - 1 workers (the caller of run is the last one). False when the system
  /// cannot create them; the pool then runs everything on the caller.
  bool start(int threads) {
    stop();
    if (threads < 1) threads = 1;
    if (threads > kMaxThreads) threads = kMaxThreads;
    quit_.store(false);
    generation_.store(0);
    state_.store(0);
#ifdef KILN_CPU_POOL_PROFILE
    caller_wait_ns_ = 0;
    for (Busy& b : busy_) b.ns.store(0, std::memory_order_relaxed);
#endif
    for (int t = 1; t < threads; ++t) {
      args_[t - 1] = Arg{this, t};
      if (pthread_create(&workers_[t - 1], nullptr, &ThreadPool::main, &args_[t - 1]) != 0) {
        stop();
        return false;
      }
      started_ = t;
    }
    size_ = threads;
    // Returns once every worker runs, and the workers then stay awake (spinning) for
    // kAwakeAfterStartNs before they first sleep: a pool is ready at create, so a first run
    // soon after create is not left to the caller while the workers' CPUs wake up. On a VM an
    // idle vCPU can take milliseconds to wake: MobileNetV2's first run at 2 threads in a fresh
    // process was 6.7-9.9 ms against a 3.7 ms median, its worker joining late or never.
    awake_until_ns_.store(now_ns() + kAwakeAfterStartNs, std::memory_order_relaxed);
    while (running_.load(std::memory_order_acquire) < started_) sched_yield();
    return true;
  }

  void stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      quit_.store(true);
    }
    wake_.notify_all();
    for (int t = 0; t < started_; ++t) pthread_join(workers_[t], nullptr);
    started_ = 0;
    running_.store(0);
    size_ = 1;
  }

  int size() const { return size_; }

#ifdef KILN_CPU_POOL_PROFILE
  /// `kiln compile --profile`: thread-nanoseconds the pool's threads were idle during the
  /// `wall_ns` that just passed (a step of the run): the caller's waits for the workers' last
  /// units, and each worker's time outside units, which includes the steps (or parts of them)
  /// that run on the caller alone. Resets the count.
  uint64_t take_idle_ns(uint64_t wall_ns) {
    uint64_t idle = caller_wait_ns_;
    caller_wait_ns_ = 0;
    for (int t = 1; t < size_; ++t) {
      const uint64_t busy = busy_[t].ns.exchange(0, std::memory_order_relaxed);
      idle += busy < wall_ns ? wall_ns - busy : 0;
    }
    return idle;
  }
#endif

  /// Calls f(unit, thread) for unit in [0, units), thread in [0, size()).
  template <class F>
  void run(int64_t units, F& f) {
    if (size_ == 1 || units <= 1) {
      for (int64_t u = 0; u < units; ++u) f(u, 0);
      return;
    }
    job_ = &f;
    invoke_ = [](const void* job, int64_t u, int t) {
      (*static_cast<F*>(const_cast<void*>(job)))(u, t);
    };
    // Each thread owns an even share of the units, [t * units / size, (t + 1) * units / size),
    // and takes it in ascending order before it takes what is left of the others' shares. A
    // kernel's units are laid out so that neighbours share data (a panel of weights, a band of
    // rows) and a unit prefetches the next one's: with one shared counter the next unit often
    // ran on the other core (ResNet-50 at 2 threads: ~3-30 us a layer). Units are claimed in
    // chunks of at most a quarter share (see work: smaller towards a share's end): fine-grained
    // kernels (a pooling unit per channel plane) would otherwise spend more time passing the
    // counters' cache lines between cores than computing.
    chunk_ = units / (int64_t(size_) * 4) > 1 ? units / (int64_t(size_) * 4) : 1;
    for (int t = 0; t < size_; ++t) {
      shares_[t].next.store(t * units / size_, std::memory_order_relaxed);
      shares_[t].end = (t + 1) * units / size_;
    }
    {
      // Under the lock, so a worker deciding to sleep cannot miss the new generation.
      std::lock_guard<std::mutex> lock(mu_);
      const uint64_t g = generation_.fetch_add(1, std::memory_order_relaxed) + 1;
      state_.store((g & 0xffffffffu) << kGenShift | kOpen, std::memory_order_release);
    }
    wake_.notify_all();
    work(0);
#ifdef KILN_CPU_POOL_PROFILE
    const int64_t done_ns = now_ns();
#endif
    // Every unit is taken. Close the job: a worker that has not joined yet (asleep, or
    // preempted on a shared machine) no longer can, so it is not waited for; the ones that
    // joined finish the unit they hold. Spin first (kernels are short), then yield.
    uint64_t s = state_.load(std::memory_order_relaxed);
    while (!state_.compare_exchange_weak(s, s & ~kOpen, std::memory_order_acq_rel)) {
    }
    for (int spin = 0; (state_.load(std::memory_order_acquire) & kActive) != 0; ++spin) {
      if (spin < kSpins)
        pause();
      else
        sched_yield();
    }
    job_ = nullptr;
#ifdef KILN_CPU_POOL_PROFILE
    caller_wait_ns_ += uint64_t(now_ns() - done_ns);
#endif
  }

 private:
  struct Arg {
    ThreadPool* pool;
    int id;
  };

  // Spins before sleeping: back-to-back kernels then hand out work in microseconds.
  static constexpr int kSpins = 1 << 14;
  // How long workers stay awake after start() (see start).
  static constexpr int64_t kAwakeAfterStartNs = 50'000'000;

  static int64_t now_ns() {
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return int64_t(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
  }

  static void pause() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }

  static void* main(void* arg) {
    const Arg* a = static_cast<const Arg*>(arg);
    a->pool->loop(a->id);
    return nullptr;
  }

  // Generations count jobs from 0 at start(), so a worker that starts late still sees the
  // job posted before it ran.
  void loop(int id) {
    running_.fetch_add(1, std::memory_order_release);
    uint64_t seen = 0;
    for (;;) {
      uint64_t g = generation_.load(std::memory_order_acquire);
      for (int spin = 0; g == seen; ++spin) {
        if (spin >= kSpins) {
          // Past the spins: sleep, unless still in start()'s awake window.
          if (now_ns() >= awake_until_ns_.load(std::memory_order_relaxed)) break;
          spin = 0;
        }
        if (quit_.load(std::memory_order_relaxed)) return;
        pause();
        g = generation_.load(std::memory_order_acquire);
      }
      if (g == seen) {
        std::unique_lock<std::mutex> lock(mu_);
        wake_.wait(lock, [&] {
          return quit_.load(std::memory_order_relaxed) ||
                 generation_.load(std::memory_order_acquire) != seen;
        });
        g = generation_.load(std::memory_order_acquire);
      }
      if (quit_.load(std::memory_order_relaxed)) return;
      // Join the open job (the newest one: it may already be past generation g), unless the
      // caller has closed it; then wait for the next. The caller publishes the job right after
      // bumping the generation.
      uint64_t s = state_.load(std::memory_order_acquire);
      // The state keeps the generation's low 32 bits: compare them with wrap-around.
      auto ahead = [&](uint64_t st) { return uint32_t(uint32_t(st >> kGenShift) - uint32_t(g)); };
      for (int spin = 0; int32_t(ahead(s)) < 0; ++spin) {
        if (spin < kSpins)
          pause();
        else
          sched_yield();
        s = state_.load(std::memory_order_acquire);
      }
      while ((s & kOpen) != 0 &&
             !state_.compare_exchange_weak(s, s + 1, std::memory_order_acq_rel)) {
      }
      seen = g + ahead(s);
      if ((s & kOpen) == 0) continue;
#ifdef KILN_CPU_POOL_PROFILE
      const int64_t start_ns = now_ns();
#endif
      work(id);
#ifdef KILN_CPU_POOL_PROFILE
      busy_[id].ns.fetch_add(uint64_t(now_ns() - start_ns), std::memory_order_relaxed);
#endif
      state_.fetch_sub(1, std::memory_order_release);
    }
  }

  void work(int id) {
    for (int k = 0; k < size_; ++k) {
      Share& sh = shares_[(id + k) % size_];
      for (;;) {
        // Guided claims: a quarter of what the share has left (at most chunk_), so a job ends
        // in single units and no thread is left running a large claim while the others wait.
        // With claims of chunk_ to the end, ResNet-50 at 2 threads had the caller wait ~0.7 ms
        // a run (2.3%) for the worker's last claim.
        const int64_t left = sh.end - sh.next.load(std::memory_order_relaxed);
        if (left <= 0) break;
        int64_t c = left / 4;
        c = c < 1 ? 1 : c > chunk_ ? chunk_ : c;
        const int64_t u0 = sh.next.fetch_add(c, std::memory_order_relaxed);
        if (u0 >= sh.end) break;
        const int64_t u1 = u0 + c < sh.end ? u0 + c : sh.end;
        for (int64_t u = u0; u < u1; ++u) invoke_(job_, u, id);
      }
    }
  }

  std::mutex mu_;
  std::condition_variable wake_;
  const void* job_ = nullptr;
  void (*invoke_)(const void*, int64_t, int) = nullptr;
  int64_t chunk_ = 1;
  // A thread's share of the current job: the next unit to claim, and the share's end.
  struct alignas(64) Share {
    std::atomic<int64_t> next{0};
    int64_t end = 0;
  };
  Share shares_[kMaxThreads];
  // The current job: its generation (upper bits), whether workers may still join it (kOpen),
  // and how many are working on it (kActive bits).
  static constexpr int kGenShift = 32;
  static constexpr uint64_t kOpen = uint64_t(1) << 31;
  static constexpr uint64_t kActive = kOpen - 1;
  std::atomic<uint64_t> state_{0};
  std::atomic<uint64_t> generation_{0};
  std::atomic<bool> quit_{false};
  int size_ = 1, started_ = 0;
  std::atomic<int> running_{0};  ///< workers that have entered loop()
  std::atomic<int64_t> awake_until_ns_{0};  ///< CLOCK_MONOTONIC end of start()'s awake window
  pthread_t workers_[kMaxThreads] = {};
  Arg args_[kMaxThreads] = {};
#ifdef KILN_CPU_POOL_PROFILE
  uint64_t caller_wait_ns_ = 0;  ///< caller's waits since take_idle_ns
  struct alignas(64) Busy {
    std::atomic<uint64_t> ns{0};  ///< a worker's time in units since take_idle_ns
  };
  Busy busy_[kMaxThreads];
#endif
};

/// Runs f(unit, thread) over [0, units) on the pool (serially without one).
template <class F>
inline void parallel_for(ThreadPool* pool, int64_t units, F f) {
  if (!pool) {
    for (int64_t u = 0; u < units; ++u) f(u, 0);
    return;
  }
  pool->run(units, f);
}

}  // namespace kiln_cpu
