#include "engine/core/blas_threads.h"

#include <initializer_list>

#if defined(__unix__)
#include <dlfcn.h>
#endif

namespace xmc {

bool run_blas_on_calling_thread() { return set_blas_threads(1); }

bool set_blas_threads(int threads) {
  bool found = false;
#if defined(__unix__)
  for (const char* setter : {"openblas_set_num_threads", "bli_thread_set_num_threads"}) {
    if (void* symbol = dlsym(RTLD_DEFAULT, setter)) {
      reinterpret_cast<void (*)(int)>(symbol)(threads);
      found = true;
    }
  }
#endif
  return found;
}

}  // namespace xmc
