#pragma once
// The threads every parallel call of the library runs on, in one place: thread_count() (what
// "0 threads" means), the process-wide pool behind fork_join() and parallel_for() on top of it.
//
// fork_join(n, body): body(0) on the calling thread and body(1) .. body(n - 1) on worker
// threads, returning when all are done. The workers are a process-wide pool, started on first
// use and parked on a condition variable between calls: starting and joining a std::thread costs
// about 45 us on the project's VM, which is a tenth of a 2-thread GEMV or of a 512^3 GEMM.
//
// When the pool is busy (another thread's call is running, or body itself calls fork_join) the
// tasks run on fresh std::threads instead, so calls never wait for each other and never
// deadlock; if a thread cannot be started, its task runs on the calling thread. The results do
// not depend on which of these happened: each task is a fixed piece of work.
//
// The first exception thrown by a task (lowest index) is rethrown after all tasks finished.
// The pool is never destroyed (its threads stay parked until the process exits), so calls from
// static destructors remain safe.
#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

namespace minifloat::detail {

class worker_pool {
 public:
  static worker_pool& instance() {
    static worker_pool* const pool = new worker_pool();  // never deleted, see the header comment
    return *pool;
  }

  /// Runs task(i) for i in [1, n) on the workers while the caller runs task(0); false (nothing
  /// run) if the pool is busy or cannot start its threads.
  template <class Task>
  bool run(std::size_t n, Task& task) {
    if (inside_worker()) return false;
    std::unique_lock<std::mutex> busy(busy_, std::try_to_lock);
    if (!busy.owns_lock()) return false;
    {
      std::lock_guard<std::mutex> lk(m_);
      try {
        while (workers_.size() < n - 1) {
          const std::size_t w = workers_.size();
          workers_.emplace_back([this, w] { loop(w); });
        }
      } catch (const std::system_error&) {
        if (workers_.size() < n - 1) return false;
      }
      call_ = [](void* ctx, std::size_t i) { (*static_cast<Task*>(ctx))(i); };
      ctx_ = &task;
      tasks_ = n - 1;
      pending_ = n - 1;
      ++generation_;
    }
    wake_.notify_all();
    task(0);
    std::unique_lock<std::mutex> lk(m_);
    done_.wait(lk, [this] { return pending_ == 0; });
    return true;
  }

 private:
  worker_pool() = default;

  static bool& inside_worker() {
    thread_local bool inside = false;
    return inside;
  }

  void loop(std::size_t w) {
    inside_worker() = true;
    std::uint64_t seen = 0;
    std::unique_lock<std::mutex> lk(m_);
    for (;;) {
      wake_.wait(lk, [&] { return generation_ != seen; });
      seen = generation_;
      if (w >= tasks_) continue;  // not needed by this call
      void (*const call)(void*, std::size_t) = call_;
      void* const ctx = ctx_;
      lk.unlock();
      call(ctx, w + 1);
      lk.lock();
      if (--pending_ == 0) done_.notify_one();
    }
  }

  std::mutex busy_;  // one call at a time
  std::mutex m_;     // guards everything below
  std::condition_variable wake_, done_;
  std::vector<std::thread> workers_;
  std::uint64_t generation_ = 0;
  std::size_t tasks_ = 0, pending_ = 0;
  void (*call_)(void*, std::size_t) = nullptr;
  void* ctx_ = nullptr;
};

/// See the header comment. body(i) for i in [0, n); body must be safe to call concurrently.
template <class Body>
void fork_join(std::size_t n, Body&& body) {
  if (n == 0) return;
  if (n == 1) {
    body(std::size_t{0});
    return;
  }
  std::vector<std::exception_ptr> errors(n);
  auto task = [&](std::size_t i) noexcept {
    try {
      body(i);
    } catch (...) {
      errors[i] = std::current_exception();
    }
  };
  if (!worker_pool::instance().run(n, task)) {
    std::vector<std::thread> threads;
    threads.reserve(n - 1);
    for (std::size_t i = 1; i < n; ++i) {
      try {
        threads.emplace_back(task, i);
      } catch (const std::system_error&) {
        task(i);
      }
    }
    task(0);
    for (auto& t : threads) t.join();
  }
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

/// Threads a call uses when asked for `requested`: `requested` itself, or for 0 every hardware
/// thread (std::thread::hardware_concurrency(), asked once: glibc reads /sys for it, ~10 us a
/// call; 1 when the platform does not say).
[[nodiscard]] inline unsigned thread_count(unsigned requested) noexcept {
  if (requested != 0) return requested;
  static const unsigned hardware = [] {
    const unsigned h = std::thread::hardware_concurrency();
    return h == 0 ? 1U : h;
  }();
  return hardware;
}

}  // namespace minifloat::detail

namespace minifloat {

using detail::thread_count;

/// Calls f(begin, end) for contiguous chunks covering [0, n), at most thread_count(threads) of
/// them, each boundary a multiple of `grain` (>= 1), concurrently; returns when all are done.
/// f must be safe to call from several threads at once.
template <class F>
void parallel_for(std::size_t n, unsigned threads, std::size_t grain, F&& f) {
  if (n == 0) return;
  grain = grain == 0 ? 1 : grain;
  const std::size_t units = (n + grain - 1) / grain;
  const std::size_t chunks = std::min<std::size_t>(thread_count(threads), units);
  const auto bound = [&](std::size_t k) { return std::min(n, (units * k / chunks) * grain); };
  detail::fork_join(chunks, [&](std::size_t k) { f(bound(k), bound(k + 1)); });
}

}  // namespace minifloat
