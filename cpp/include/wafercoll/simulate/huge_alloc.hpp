// Internal to the simulator (not part of the public API): an allocator for
// its large arrays.
//
// The per-stage, per-trie-node and per-transfer arrays are read by the event
// loop in no particular order (events of one time are processed by data
// position, which scatters them over the transfers). With hundreds of
// thousands of concurrent streams these arrays span hundreds of MiB, and
// with 4 KiB pages nearly every access would also miss the TLB. So blocks of
// 2 MiB or more are aligned to 2 MiB and, on Linux with
// WAFERCOLL_HUGE_PAGES=1, offered to the kernel for transparent huge pages
// (not by default: their first touch can cost more than the misses they
// save, mapped_alloc.hpp). Smaller blocks come from operator new.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <limits>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

#include "wafercoll/default_init.hpp"
#include "wafercoll/mapped_alloc.hpp"

// Internal to the library: hidden symbols are resolved within it, so calls
// between the simulator's parts are direct and the compiler may optimise
// across them as it does for functions local to one file.
#if defined(__GNUC__)
#pragma GCC visibility push(hidden)
#endif

namespace wafercoll::sim {

constexpr std::size_t kHugePage = kHugePageBytes;

// One arena for the simulations of a process: freed blocks of 2 MiB or more
// are kept, up to kMaxCachedBytes in all (the oldest freed first beyond
// that), and a later block of the same size reuses one (finding none, the
// request first gives the oldest
// cached blocks of at least its size back to the system, so that blocks
// freed by one phase, such as a verifier, do not stay resident beside the
// next phase's: on the 32 x 32 torus ring allreduce of bench/scale.py the
// peak of build + verify + simulate fell from 0.414 to 0.379 GB). Repeated runs of
// similar schedules (a sweep, a benchmark's repeats) then skip the kernel's
// page faults and zeroing of fresh memory: measured, 8 % of the CPU time
// (13 % of the wall time) of a repeated single-packet ring allreduce on
// 1024 ranks. Thread-safe.
constexpr std::size_t kMaxCachedBytes = std::size_t{1} << 30;
// A fresh block of `bytes` (a multiple of kHugePage), 2 MiB aligned and
// asked for with `huge` (map_block); unmap_huge_block() gives it back.
void* map_huge_block(std::size_t bytes);
void unmap_huge_block(void* p, std::size_t bytes);
// A cached block of exactly `bytes` (a multiple of kHugePage), else one of
// at most 2 * `bytes` (given back later at its own size), or nullptr after
// giving the oldest cached blocks of at least `bytes` back to the system.
void* take_huge_block(std::size_t bytes);
// Keeps p (from map_huge_block, of `bytes`), or gives it back.
void give_huge_block(void* p, std::size_t bytes);
// Frees every cached block; returns the bytes given back.
std::size_t release_huge_blocks();
// Bytes of the blocks cached now.
std::size_t cached_huge_bytes();

// resize() default-initialises (default_init.hpp).
template <typename T>
struct HugeAlloc : DefaultInitConstruct {
  using value_type = T;
  HugeAlloc() = default;
  template <typename U>
  HugeAlloc(const HugeAlloc<U>&) {}
  // Blocks are whole huge pages.
  static std::size_t rounded(std::size_t n) {
    return (n * sizeof(T) + kHugePage - 1) / kHugePage * kHugePage;
  }
  T* allocate(std::size_t n) {
    if (n > std::numeric_limits<std::size_t>::max() / sizeof(T) / 2) throw std::bad_alloc();
    if (n * sizeof(T) < kHugePage) return static_cast<T*>(::operator new(n * sizeof(T)));
    if (void* cached = take_huge_block(rounded(n))) return static_cast<T*>(cached);
    return static_cast<T*>(map_huge_block(rounded(n)));
  }
  // The size decides which of the two allocators a block came from.
  void deallocate(T* p, std::size_t n) noexcept {
    if (n * sizeof(T) < kHugePage) {
      ::operator delete(p);
    } else {
      give_huge_block(p, rounded(n));
    }
  }
  template <typename U>
  bool operator==(const HugeAlloc<U>&) const { return true; }
  template <typename U>
  bool operator!=(const HugeAlloc<U>&) const { return false; }
};

template <typename T>
using BigVector = std::vector<T, HugeAlloc<T>>;

}  // namespace wafercoll::sim

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif
