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
// more are aligned to 2 MiB.
//
// Transparent huge pages: the blocks that are read at random (the set
// index, kHuge; the simulator's arena; its large scratch arrays,
// ScratchVector) can be offered for them, one fault per 2 MiB instead of
// 512 and fewer TLB misses, but only when the environment variable
// WAFERCOLL_HUGE_PAGES is 1 (huge_pages_offered()). By default they are
// not: where memory is fresh to the process, a huge page's first touch was
// measured to cost far more than 512 small ones on a virtual machine whose
// host backs guest memory lazily (2 vCPUs, nested, free page reporting:
// 0.3-0.6 GB/s against 1.2-1.6 GB/s for 4 KiB pages, a C program writing
// 336 MiB), and every bench/scale.py case simulated as fast or faster
// without them (alternated fresh processes: recursive doubling on 262,144
// ranks 1.60-1.81 s against 2.01-2.26 s, ring(4096) 4.51-4.56 s against
// 6.50-8.20 s, TTO 16 x 16 15.0-15.7 s against 17.2-17.3 s). On a machine
// whose huge-page faults are cheap (bare metal), offering them may gain in
// the event loop, whose state they cover with fewer TLB entries: the
// repeated runs of bench/scale.py's hops cases, whose blocks the arena
// reuses, were within 10 % either way here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
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
// ScratchVector's blocks of this size or more may be offered for huge pages
// (a block's unused tail, at most 2 MiB, is then under 3 %).
inline constexpr std::size_t kHugeFrom = std::size_t{64} << 20;

// Whether blocks asked for with `huge` are offered for transparent huge
// pages: WAFERCOLL_HUGE_PAGES=1 (see above; read once per process, and
// checked by the Python package on import: "0", "1" or unset).
inline bool huge_pages_offered() {
  static const bool offered = [] {
    const char* v = std::getenv("WAFERCOLL_HUGE_PAGES");
    return v != nullptr && std::strcmp(v, "1") == 0;
  }();
  return offered;
}

#if defined(WAFERCOLL_MMAP)
// `bytes` (a multiple of the page size) of fresh zeroed memory; with `huge`,
// from 2 MiB on, 2 MiB aligned (the mapping is 2 MiB longer and its
// unaligned ends go back) and, if huge_pages_offered(), offered for huge
// pages.
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
    if (huge_pages_offered()) madvise(p, bytes, MADV_HUGEPAGE);  // advice: failure is harmless
#endif
  }
  return p;
}
#endif

// Faults the pages of [p, p + bytes) in for writing at once, where the
// system can (Linux 5.14 and later, MADV_POPULATE_WRITE; elsewhere, or when
// refused, nothing happens and the pages fault as they are touched). The
// range is widened to whole pages of the mapping that holds it (populating
// writes nothing: other data on those pages is left as it was). For an
// array probed before it is written (SetIndex): each page would otherwise
// map the shared zero page at its first read and fault again at its first
// write, copying it and flushing it from the other threads' TLBs (an
// interrupt to each CPU; on a virtual machine, exits to the host).
inline void populate_for_write(void* p, std::size_t bytes) {
#if defined(__linux__) && defined(WAFERCOLL_MMAP)
#if defined(MADV_POPULATE_WRITE)
  constexpr int kPopulateWrite = MADV_POPULATE_WRITE;
#else
  constexpr int kPopulateWrite = 23;  // linux/mman.h, since 5.14
#endif
  constexpr std::uintptr_t kPage = 4096;
  const auto at = reinterpret_cast<std::uintptr_t>(p);
  const std::uintptr_t lo = at / kPage * kPage;
  const std::uintptr_t hi = (at + bytes + kPage - 1) / kPage * kPage;
  if (bytes != 0) madvise(reinterpret_cast<void*>(lo), hi - lo, kPopulateWrite);  // a hint
#else
  (void)p;
  (void)bytes;
#endif
}

// resize() default-initialises, as with the simulator's arena
// (default_init.hpp). kHuge: blocks are asked for with `huge` (map_block);
// kHugeLarge: blocks of kHugeFrom or more are (ScratchVector).
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

// The simulator's preparation's scratch arrays: from kHugeFrom on, asked
// for with `huge`. With huge pages offered, ring allreduce on ring(4096)
// simulated in 6.41 and 6.58 s against 8.23 and 7.97 s when only the
// arena's blocks were (alternated pairs); with none offered (the default,
// see above), in 4.51 and 4.56 s.
template <typename T>
using ScratchVector = std::vector<T, MappedAlloc<T, false, true>>;

}  // namespace wafercoll

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif
