// Internal to the library: what the core's allocators of large arrays
// share. resize() through them default-initialises, so records without
// member initialisers (per-transfer and per-destination state, the
// verifier's records and tables, each written in full before it is read)
// are not first zeroed: a pass over memory that is not yet in cache (a
// freshly mapped block is zero already).
#pragma once

#include <new>
#include <type_traits>
#include <utility>

namespace wafercoll {

// Base of an allocator whose resize() default-initialises.
struct DefaultInitConstruct {
  template <typename U>
  void construct(U* p) noexcept(std::is_nothrow_default_constructible_v<U>) {
    ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};

}  // namespace wafercoll
