// detail::fork_join: every task runs exactly once, on the pool or (when the pool is busy, from
// a nested call or a concurrent one) on fresh threads; exceptions come back to the caller.
#include <catch2/catch.hpp>

#include <atomic>
#include <stdexcept>
#include <thread>
#include <vector>

#include <minifloat/core/threads.hpp>

using minifloat::detail::fork_join;

TEST_CASE("fork_join runs every task once, repeatedly", "[threads]") {
  for (const std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{2}, std::size_t{3}, std::size_t{8}}) {
    for (int rep = 0; rep < 50; ++rep) {
      std::vector<std::atomic<int>> hits(n);
      fork_join(n, [&](std::size_t i) { hits[i].fetch_add(1); });
      for (std::size_t i = 0; i < n; ++i) REQUIRE(hits[i].load() == 1);
    }
  }
}

TEST_CASE("fork_join: nested and concurrent calls neither deadlock nor lose tasks", "[threads]") {
  std::atomic<int> total{0};
  fork_join(3, [&](std::size_t) {
    fork_join(3, [&](std::size_t) { total.fetch_add(1); });  // from inside a task: fresh threads
  });
  CHECK(total.load() == 9);
  total = 0;
  std::vector<std::thread> callers;
  for (int c = 0; c < 4; ++c)
    callers.emplace_back([&] {
      for (int rep = 0; rep < 100; ++rep) fork_join(2, [&](std::size_t) { total.fetch_add(1); });
    });
  for (auto& t : callers) t.join();
  CHECK(total.load() == 4 * 100 * 2);
}

TEST_CASE("fork_join rethrows the first task's exception after all tasks finished", "[threads]") {
  std::atomic<int> done{0};
  CHECK_THROWS_WITH(fork_join(4,
                              [&](std::size_t i) {
                                done.fetch_add(1);
                                if (i == 2) throw std::runtime_error("task 2");
                                if (i == 3) throw std::logic_error("task 3");
                              }),
                    "task 2");
  CHECK(done.load() == 4);
  // The pool still works afterwards.
  std::atomic<int> after{0};
  fork_join(2, [&](std::size_t) { after.fetch_add(1); });
  CHECK(after.load() == 2);
}
