// core/page_allocator.hpp: small allocations are plain, large ones huge-page aligned; containers
// on it behave like std::vector; sizes past the address space are a shape_error.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include <minifloat/core/page_allocator.hpp>

using namespace minifloat;

namespace {

/// AnonHugePages (kB) of the mapping that holds p (a mapping may hold more than one buffer), from /proc/self/smaps; -1 where unknown.
long huge_kb_at(const void* p) {
  std::ifstream in("/proc/self/smaps");
  const auto a = reinterpret_cast<std::uintptr_t>(p);  // NOLINT: an address, compared only
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    std::uintptr_t lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%" SCNxPTR "-%" SCNxPTR, &lo, &hi) == 2 && line.find(' ') != std::string::npos && line.find('-') < line.find(' ')) {
      inside = lo <= a && a < hi;
    } else if (inside && line.rfind("AnonHugePages:", 0) == 0) {
      return std::stol(line.substr(14));
    }
  }
  return -1;
}

}  // namespace

TEST_CASE("page allocator: alignment, vector semantics, checked sizes", "[core][page_allocator]") {
  page_allocator<std::uint8_t> alloc;
  std::uint8_t* small = alloc.allocate(1000);
  REQUIRE(small != nullptr);
  alloc.deallocate(small, 1000);

  for (const std::size_t n : {huge_page_bytes, huge_page_bytes + 1, 3 * huge_page_bytes - 5}) {
    std::uint8_t* big = alloc.allocate(n);
    CHECK(reinterpret_cast<std::uintptr_t>(big) % huge_page_bytes == 0);  // NOLINT: an address
    big[0] = 1, big[n - 1] = 2;  // both ends are ours (ASan checks)
    alloc.deallocate(big, n);
  }

  std::vector<std::uint32_t, page_allocator<std::uint32_t>> v;
  for (std::uint32_t i = 0; i < (3U << 20); ++i) v.push_back(i);  // grows through the huge-page sizes
  CHECK(reinterpret_cast<std::uintptr_t>(v.data()) % huge_page_bytes == 0);  // NOLINT: an address
  CHECK(std::accumulate(v.begin(), v.end(), std::uint64_t{0}) == std::uint64_t{3U << 20} * ((3U << 20) - 1) / 2);
  const auto copy = v;
  CHECK(copy == v);
  v.resize(10);
  v.shrink_to_fit();
  CHECK(v.size() == 10);
  CHECK(v[9] == 9);

  page_allocator<std::uint64_t> wide;
  CHECK_THROWS_AS(wide.allocate(std::numeric_limits<std::size_t>::max() / 4), shape_error);
  page_allocator<std::uint8_t> bytes;
  CHECK_THROWS_AS(bytes.allocate(std::numeric_limits<std::size_t>::max() - 5), shape_error);

#if defined(__linux__)
  // Whether the kernel grants huge pages is its policy (/sys/kernel/mm/transparent_hugepage):
  // reported, not required.
  std::vector<std::uint8_t, page_allocator<std::uint8_t>> cache(8 * huge_page_bytes, 1);
  const long kb = huge_kb_at(cache.data());
  std::printf("page_allocator: the mapping holding an 8 MiB buffer has %ld kB on huge pages (-1: unknown)\n", kb);
#endif
}

TEST_CASE("page allocator: advise_huge_pages and assign_on_huge_pages", "[core][page_allocator]") {
  // advice only: any range is accepted, contents and ownership never change
  std::vector<float> v;
  assign_on_huge_pages(v, 6 * huge_page_bytes / sizeof(float) + 3, 1.5f);
  CHECK(v.size() == 6 * huge_page_bytes / sizeof(float) + 3);
  CHECK(std::all_of(v.begin(), v.end(), [](float x) { return x == 1.5f; }));
  const float* before = v.data();
  assign_on_huge_pages(v, 100, 2.0f);  // fits: the storage is kept, the values replaced
  CHECK(v.data() == before);
  CHECK(v.size() == 100);
  CHECK(v.back() == 2.0f);
  std::vector<float> empty;
  assign_on_huge_pages(empty, 0, 0.0f);
  CHECK(empty.empty());
  advise_huge_pages(nullptr, 0);
  advise_huge_pages(v.data(), 10);  // less than one whole huge page: nothing to advise
  advise_huge_pages(reinterpret_cast<const void*>(std::uintptr_t{UINTPTR_MAX - 4}), 100);  // NOLINT: past the end of the address space: ignored
  std::vector<float> big;
  assign_on_huge_pages(big, 8 * huge_page_bytes / sizeof(float), 0.0f);
  big[12345] = 3.0f;
#if defined(__linux__)
  // the advice covers the whole huge pages inside the storage: the mapping from the first of them
  const auto first = (reinterpret_cast<std::uintptr_t>(big.data()) + huge_page_bytes - 1) / huge_page_bytes * huge_page_bytes;  // NOLINT
  std::printf("assign_on_huge_pages: the advised part of an 8 MiB vector has %ld kB on huge pages (-1: unknown)\n",
              huge_kb_at(reinterpret_cast<const void*>(first)));  // NOLINT: an address, compared only
#endif
  CHECK(big[12345] == 3.0f);
}
