// Internal to the library (not part of the public API): mapped blocks and
// an allocator of them, for the verifier's per-transfer and per-set arrays
// (verify.cpp, happens_before.cpp, contribution_sets.hpp), the simulator's
// arena blocks (huge_alloc.cpp) and its preparation's scratch arrays
// (simulate.cpp, simulation.cpp).
//
// Blocks of 1 MiB or more are mapped from the system and unmapped when
// freed, so that memory the verifier gives up (a list outgrown as it
// doubles, an outgrown index table) stops being resident at once. Through
// malloc it did not: after a build has freed large arrays, glibc serves
// requests of up to 32 MiB from its heap (its mmap threshold rises to the
// largest block freed), and freed heap blocks stay resident. Measured on the
// ring allreduce of 1024 ranks (2.1 M transfers): 20 MB of the verifier's
// 95 MB growth during its forward pass were such blocks. Blocks of 2 MiB or
// more are aligned to 2 MiB; with kHuge (the set index, probed at random)
// they are, on Linux, offered for transparent huge pages. The verifier's
// other arrays are not: they are walked in order, and offered too they
// verified no faster (TTO 16 x 16 and ring allreduce of 10^7 transfers,
// alternated cold runs on a loaded machine, within the noise; from 64 MiB
// on, ring(4096)'s verification took more system time, a huge-page fault
// sometimes waiting for the kernel to compact memory). The simulator's
// scratch arrays (ScratchVector) are offered them from kHugeFrom on, which
// took about 1.5 s off simulating ring(4096)'s 33.5 M transfers (see
// ScratchVector). Unlike the simulator's arena
// (huge_alloc.hpp) nothing is kept for reuse: the verifier's arrays are
// sized by the schedule, and a kept block is resident beside the next
// phase's; so are the simulator's scratch arrays, made and dropped within
// its preparation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

#include "wafercoll/default_init.hpp"

#if defined(__unix__) || defined(__APPLE__)
#include <sys/mman.h>
#define WAFERCOLL_MMAP 1
#endif

#if defined(__GNUC__)
#pragma GCC visibility push(hidden)
#endif

namespace wafercoll {

inline constexpr std::size_t kMapFrom = std::size_t{1} << 20;
inline constexpr std::size_t kHugePageBytes = std::size_t{2} << 20;
// ScratchVector's blocks of this size or more are offered for huge pages
// (a block's unused tail, at most 2 MiB, is then under 3 %).
inline constexpr std::size_t kHugeFrom = std::size_t{64} << 20;

#if defined(WAFERCOLL_MMAP)
// `bytes` (a multiple of the page size) of fresh zeroed memory; with `huge`,
// from 2 MiB on, 2 MiB aligned and offered for huge pages (the mapping is
// 2 MiB longer and its unaligned ends go back).
inline void* map_block(std::size_t bytes, bool huge) {
  const std::size_t extra = huge && bytes >= kHugePageBytes ? kHugePageBytes : 0;
  // MAP_NORESERVE: a reservation is address space, to be touched as used
  // (the records and sets reserve room for bounds they rarely reach).
#if defined(MAP_NORESERVE)
  constexpr int kFlags = MAP_PRIVATE | MAP_ANON | MAP_NORESERVE;
#else
  constexpr int kFlags = MAP_PRIVATE | MAP_ANON;
#endif
  void* raw = mmap(nullptr, bytes + extra, PROT_READ | PROT_WRITE, kFlags, -1, 0);
  if (raw == MAP_FAILED) throw std::bad_alloc();
  auto* p = static_cast<char*>(raw);
  if (extra != 0) {
    const auto at = reinterpret_cast<std::uintptr_t>(p);
    const std::size_t head = (kHugePageBytes - at % kHugePageBytes) % kHugePageBytes;
    if (head != 0) munmap(p, head);
    if (extra - head != 0) munmap(p + head + bytes, extra - head);
    p += head;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    madvise(p, bytes, MADV_HUGEPAGE);  // advice only: failure is harmless
#endif
  }
  return p;
}
#endif

// resize() default-initialises, as with the simulator's arena
// (default_init.hpp). kHugeLarge: blocks of kHugeFrom or more are offered
// for huge pages too (ScratchVector).
template <typename T, bool kHuge = false, bool kHugeLarge = false>
struct MappedAlloc : DefaultInitConstruct {
  using value_type = T;
  MappedAlloc() = default;
  template <typename U>
  struct rebind {
    using other = MappedAlloc<U, kHuge, kHugeLarge>;
  };
  template <typename U>
  MappedAlloc(const MappedAlloc<U, kHuge, kHugeLarge>&) {}

  static std::size_t mapped_bytes(std::size_t n) {
    constexpr std::size_t kPage = 4096;
    return (n * sizeof(T) + kPage - 1) / kPage * kPage;
  }
  // Whether a block of n is mapped from the system (from kMapFrom bytes):
  // then allocate(n) gives fresh memory, zero until written and address
  // space only until touched, and deallocate() unmaps it.
  static bool maps(std::size_t n) {
#if defined(WAFERCOLL_MMAP)
    return n <= std::numeric_limits<std::size_t>::max() / sizeof(T) / 2 &&
           n * sizeof(T) >= kMapFrom;
#else
    (void)n;
    return false;
#endif
  }
  T* allocate(std::size_t n) {
    if (n > std::numeric_limits<std::size_t>::max() / sizeof(T) / 2) throw std::bad_alloc();
#if defined(WAFERCOLL_MMAP)
    if (maps(n)) {
      const bool huge = kHuge || (kHugeLarge && n * sizeof(T) >= kHugeFrom);
      return static_cast<T*>(map_block(mapped_bytes(n), huge));
    }
#endif
    return static_cast<T*>(::operator new(n * sizeof(T)));
  }
  void deallocate(T* p, std::size_t n) noexcept {
#if defined(WAFERCOLL_MMAP)
    if (maps(n)) {
      munmap(p, mapped_bytes(n));
      return;
    }
#endif
    ::operator delete(p);
  }
  template <typename U>
  bool operator==(const MappedAlloc<U, kHuge, kHugeLarge>&) const { return true; }
  template <typename U>
  bool operator!=(const MappedAlloc<U, kHuge, kHugeLarge>&) const { return false; }
};

template <typename T>
using MappedVector = std::vector<T, MappedAlloc<T>>;

// The simulator's preparation's scratch arrays: from kHugeFrom on, offered
// huge pages, one fault per 2 MiB instead of 512. Ring allreduce on
// ring(4096) simulated in 6.41 and 6.58 s against 8.23 and 7.97 s without
// (alternated pairs); recursive doubling on 2^20 ranks and TTO 16 x 16
// alike either way.
template <typename T>
using ScratchVector = std::vector<T, MappedAlloc<T, false, true>>;

}  // namespace wafercoll

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif
