#pragma once
// An allocator for large buffers that are read end to end over and over (a KV cache, which every
// decode step streams in full). On Linux, allocations of at least one huge page (2 MiB) are
// aligned to it, rounded up to whole huge pages and marked MADV_HUGEPAGE, so that transparent
// huge pages back them where the kernel offers them on request ("madvise", the common default;
// "always" needs no advice, "never" ignores it). Smaller allocations are plain operator new.
//
// Why: on 4 KiB pages a decode step misses the TLB on every page it reads, and the software
// prefetches the kernels issue ahead of their loads waited on those page walks (on Zen 4, 40 %
// of the P V loop sat on one prefetch instruction). Measured effect: docs/attention.md#kv-cache-and-decode.
// The cost: at most one huge page of padding per allocation above 2 MiB.
#include <cstddef>
#include <cstdint>
#include <new>
#include <vector>

#include "checked.hpp"

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace minifloat {

inline constexpr std::size_t huge_page_bytes = std::size_t{2} << 20;

template <class T>
struct page_allocator {
  using value_type = T;
  page_allocator() noexcept = default;
  template <class U>
  page_allocator(const page_allocator<U>& /*other*/) noexcept {}  // NOLINT(google-explicit-constructor): allocators convert

  [[nodiscard]] T* allocate(std::size_t n) {
    const std::size_t bytes = checked_product({n, sizeof(T)}, "page_allocator: elements x element size");
    if (bytes < huge_page_bytes) return static_cast<T*>(::operator new(bytes));
    const std::size_t whole = checked_add(bytes, huge_page_bytes - 1, "page_allocator: bytes rounded to huge pages") / huge_page_bytes * huge_page_bytes;
    void* p = ::operator new(whole, std::align_val_t{huge_page_bytes});
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    (void)::madvise(p, whole, MADV_HUGEPAGE);  // advice: where refused, the pages stay small
#endif
    return static_cast<T*>(p);
  }

  void deallocate(T* p, std::size_t n) noexcept {
    // unsized forms: clang declares the sized ones only with -fsized-deallocation
    if (n * sizeof(T) < huge_page_bytes) ::operator delete(p);  // allocate(n) succeeded: no overflow
    else ::operator delete(p, std::align_val_t{huge_page_bytes});
  }

  friend bool operator==(const page_allocator& /*a*/, const page_allocator& /*b*/) noexcept { return true; }
};

/// Advises that the whole huge pages inside [p, p + bytes) be backed by transparent huge pages
/// (nothing where less than one whole huge page lies inside, or off Linux). For storage whose type
/// cannot carry page_allocator, such as a std::vector<float> an API returns: advised before it is
/// first written, a large buffer takes one page fault per 2 MiB instead of per 4 KiB (on the Zen 5
/// VM measured here a fresh 32 MiB vector took 89-96 ms to fill on 4 KiB pages, 11 us a fault,
/// and 8-18 ms advised).
inline void advise_huge_pages(const void* p, std::size_t bytes) noexcept {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  const auto begin = reinterpret_cast<std::uintptr_t>(p);  // NOLINT: an address, never dereferenced
  if (begin > UINTPTR_MAX - bytes) return;
  const std::uintptr_t first = (begin + huge_page_bytes - 1) / huge_page_bytes * huge_page_bytes;
  const std::uintptr_t last = (begin + bytes) / huge_page_bytes * huge_page_bytes;
  if (last > first) (void)::madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);  // NOLINT: see above
#else
  (void)p, (void)bytes;
#endif
}

/// v.assign(n, value), with new storage advised for huge pages before it is first written.
template <class T>
void assign_on_huge_pages(std::vector<T>& v, std::size_t n, const T& value) {
  if (v.capacity() < n) {
    std::vector<T> fresh;
    fresh.reserve(n);
    advise_huge_pages(fresh.data(), checked_product({n, sizeof(T)}, "assign_on_huge_pages: elements x element size"));
    v.swap(fresh);
  }
  v.assign(n, value);
}

}  // namespace minifloat
