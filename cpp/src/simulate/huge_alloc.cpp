// The process-wide cache of large blocks behind HugeAlloc (huge_alloc.hpp).
#include "wafercoll/simulate/huge_alloc.hpp"

#include <cstdlib>
#include <mutex>
#include <new>
#include <vector>

#include "wafercoll/mapped_alloc.hpp"

namespace wafercoll::sim {

// Blocks are mapped from the system and unmapped when given back (where
// mmap exists; map_block in mapped_alloc.hpp), not taken from malloc: glibc
// serves requests of up to 32 MiB from its heap once large blocks have been
// freed (its mmap threshold rises to the largest block freed), and freed
// heap blocks stay resident. A block the cache gives back would then still
// count in the peak of what follows (measured: ring allreduce on the 32 x 32
// torus, 4 bytes per transfer of the run's 47).
void* map_huge_block(std::size_t bytes) {
#if defined(WAFERCOLL_MMAP)
  return map_block(bytes, /*huge=*/true);
#else
  void* p = std::aligned_alloc(kHugePage, bytes);
  if (p == nullptr) throw std::bad_alloc();
  return p;
#endif
}

void unmap_huge_block(void* p, std::size_t bytes) {
#if defined(WAFERCOLL_MMAP)
  munmap(p, bytes);
#else
  (void)bytes;
  std::free(p);
#endif
}

namespace {

struct CachedBlock {
  void* p;
  std::size_t bytes;
};

// Freed blocks, oldest first, and their total size.
class BlockCache {
 public:
  // A block of exactly `bytes`, the most recently freed; when there is none,
  // the oldest blocks of at least `bytes` in all go back to the system first,
  // so that memory cached by one phase (a verifier, a smaller run) is not
  // held while the next allocates blocks of other sizes: the peak resident
  // memory then stays near the larger phase's, not their sum. (Lending a
  // cached block of up to twice the size as well was measured to lower no
  // peak further, bench/scale.py's torus ring: 0.379 GB either way.)
  void* take(std::size_t bytes) {
    std::vector<CachedBlock> evicted;
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      for (std::size_t i = blocks_.size(); i-- > 0;) {
        if (blocks_[i].bytes != bytes) continue;
        void* p = blocks_[i].p;
        blocks_.erase(blocks_.begin() + static_cast<std::ptrdiff_t>(i));
        total_ -= bytes;
        return p;
      }
      std::size_t drop = 0, freed = 0;
      for (; drop < blocks_.size() && freed < bytes; ++drop) {
        evicted.push_back(blocks_[drop]);
        freed += blocks_[drop].bytes;
      }
      total_ -= freed;
      blocks_.erase(blocks_.begin(), blocks_.begin() + static_cast<std::ptrdiff_t>(drop));
    }
    for (const CachedBlock& b : evicted) unmap_huge_block(b.p, b.bytes);  // outside the lock
    return nullptr;
  }

  void give(void* p, std::size_t bytes) {
    std::vector<CachedBlock> evicted;
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      if (bytes > kMaxCachedBytes) {
        evicted.push_back({p, bytes});
      } else {
        blocks_.push_back({p, bytes});
        total_ += bytes;
        std::size_t drop = 0;
        for (; total_ > kMaxCachedBytes; ++drop) {
          evicted.push_back(blocks_[drop]);
          total_ -= blocks_[drop].bytes;
        }
        blocks_.erase(blocks_.begin(), blocks_.begin() + static_cast<std::ptrdiff_t>(drop));
      }
    }
    for (const CachedBlock& b : evicted) unmap_huge_block(b.p, b.bytes);  // outside the lock
  }

  std::size_t release() {
    std::vector<CachedBlock> all;
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      all.swap(blocks_);
      total_ = 0;
    }
    std::size_t bytes = 0;
    for (const CachedBlock& b : all) {
      unmap_huge_block(b.p, b.bytes);
      bytes += b.bytes;
    }
    return bytes;
  }

  std::size_t total() {
    const std::lock_guard<std::mutex> lock(mutex_);
    return total_;
  }

 private:
  std::mutex mutex_;
  std::vector<CachedBlock> blocks_;
  std::size_t total_ = 0;
};

// Never destroyed, so that a block freed during exit (after the static
// destructors have run) still finds it; the process's memory goes back to
// the system at exit anyway.
BlockCache& block_cache() {
  static BlockCache* cache = new BlockCache;
  return *cache;
}

}  // namespace

void* take_huge_block(std::size_t bytes) { return block_cache().take(bytes); }

void give_huge_block(void* p, std::size_t bytes) { block_cache().give(p, bytes); }

std::size_t release_huge_blocks() { return block_cache().release(); }

std::size_t cached_huge_bytes() { return block_cache().total(); }

}  // namespace wafercoll::sim
