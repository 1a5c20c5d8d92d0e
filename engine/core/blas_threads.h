#pragma once
// Plain C++. Keeps the system BLAS on the calling thread. Debian's LibTorch hands matrix products to the
// system BLAS (OpenBLAS behind libblas.so.3), which keeps a thread pool of its own next to LibTorch's
// OpenMP pool; on 2 cores the two pools' spinning and yielding threads fought over the cores (the
// reference DEXML job on WordNet-60k: 22.8 s wall, 8.3 s of it in the kernel; with BLAS on the calling
// thread 11.3 s and 0.9 s). LibTorch's own pool already runs the work around each product in
// parallel, and the products a training step makes are small.

namespace xmc {

/// Idempotent. Returns whether a BLAS with such a switch (OpenBLAS, BLIS) was found in the process; a
/// BLAS without threads of its own (the reference BLAS) needs none.
bool run_blas_on_calling_thread();

/// Lets the system BLAS run each product on `threads` threads of its own (OpenBLAS, BLIS); false when it has
/// no such switch.
bool set_blas_threads(int threads);

}  // namespace xmc
