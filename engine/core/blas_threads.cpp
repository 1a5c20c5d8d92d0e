#include "engine/core/blas_threads.h"

#include <mutex>

#if defined(__unix__)
#include <dlfcn.h>
#endif

namespace xmc {

bool run_blas_on_calling_thread() {
  static bool found = false;
  static std::once_flag once;
  std::call_once(once, [] {
#if defined(__unix__)
    // Looked up at run time: the BLAS behind libblas.so.3 is chosen by the system, not at link time.
    for (const char* setter : {"openblas_set_num_threads", "bli_thread_set_num_threads"}) {
      if (void* symbol = dlsym(RTLD_DEFAULT, setter)) {
        reinterpret_cast<void (*)(int)>(symbol)(1);
        found = true;
      }
    }
#endif
  });
  return found;
}

}  // namespace xmc
