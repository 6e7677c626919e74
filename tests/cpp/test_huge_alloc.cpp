// The simulator's allocator (huge_alloc.hpp): blocks of 2 MiB or more are
// aligned to 2 MiB, and a freed one is reused by the next block of its size.
#include <gtest/gtest.h>

#include <cstdint>

#include "wafercoll/simulate/huge_alloc.hpp"

using namespace wafercoll::sim;

TEST(HugeAlloc, FreedBlockIsReusedBySameSize) {
  // 40 MiB: above glibc's largest mmap threshold (32 MiB), so without the
  // cache the block would go back to the kernel and come back zeroed.
  const std::size_t n = std::size_t{40} << 20;
  const std::uint8_t* first = nullptr;
  {
    BigVector<std::uint8_t> a(n);
    first = a.data();
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(first) % kHugePage, 0u);
    a[n - 1] = 0xA5;
  }
  {
    // Default-initialised: the block is handed back as it was left (an
    // unsigned char may be read before it is written).
    BigVector<std::uint8_t> b(n);
    EXPECT_EQ(b.data(), first);
    EXPECT_EQ(b[n - 1], 0xA5);
  }
  // A size of another number of huge pages does not take the cached block
  // (it gives it back to the system instead: see the next test).
  release_huge_blocks();
}

TEST(HugeAlloc, MissGivesBackCachedBlocks) {
  release_huge_blocks();
  const std::size_t n = std::size_t{40} << 20;
  { BigVector<std::uint8_t> a(n), b(n); }
  EXPECT_EQ(cached_huge_bytes(), 2 * n);
  {
    // Same size: taken from the cache, nothing given back.
    BigVector<std::uint8_t> a(n);
    EXPECT_EQ(cached_huge_bytes(), n);
  }
  EXPECT_EQ(cached_huge_bytes(), 2 * n);
  {
    // No cached block has its size, so
    // the oldest cached blocks of at least its size go back to the system
    // (here one of the two): the cache does not hold memory beside the new
    // block's.
    BigVector<std::uint8_t> c(n / 2 - kHugePage);
    EXPECT_EQ(cached_huge_bytes(), n);
    BigVector<std::uint8_t> d(n + kHugePage);  // larger than the rest: all of it goes
    EXPECT_EQ(cached_huge_bytes(), 0u);
  }
  EXPECT_EQ(cached_huge_bytes(), n / 2 + n);
  EXPECT_EQ(release_huge_blocks(), n / 2 + n);
  EXPECT_EQ(cached_huge_bytes(), 0u);
}

TEST(HugeAlloc, SmallBlocksComeFromOperatorNew) {
  BigVector<std::int32_t> v(1000, 7);
  EXPECT_EQ(v[999], 7);
  v.resize(2000);  // default-initialised ints: written before read here
  for (std::size_t i = 1000; i < v.size(); ++i) v[i] = static_cast<std::int32_t>(i);
  EXPECT_EQ(v[1999], 1999);
}
