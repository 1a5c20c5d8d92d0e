#include "engine/core/allocator_tuning.h"

#include <mutex>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace xmc {

void keep_freed_memory_for_reuse() {
  static std::once_flag once;
  std::call_once(once, [] {
#if defined(__GLIBC__)
    mallopt(M_MMAP_MAX, 0);                          // large blocks come from the heap, so they are reused
    mallopt(M_TRIM_THRESHOLD, 1024 * 1024 * 1024);   // keep up to 1 GiB of free heap top
    mallopt(M_TOP_PAD, 64 * 1024 * 1024);            // grow the heap in 64 MiB steps
#endif
  });
}

void return_freed_memory() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

}  // namespace xmc
