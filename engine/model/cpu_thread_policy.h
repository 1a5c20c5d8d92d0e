#pragma once
// Engine-internal (includes torch). How a process splits CPU work between LibTorch's OpenMP threads and the
// system BLAS's own threads (Debian's LibTorch hands matrix products to OpenBLAS). On 2 cores the two pools
// must not both be active: their spinning and yielding threads fight over the cores. Which pool gets them
// depends on the model:
//   - many small operations (the bag-of-words encoder, heads, losses): LibTorch's threads, BLAS on the calling
//     thread (a DEXML bow job on WordNet-60k: 22.8 s -> 11.3 s wall);
//   - a transformer's large products: the BLAS's threads, LibTorch on one (a decoder-encoder run of 12 steps
//     and its evaluation: 86 s -> 57 s wall).
#include <torch/torch.h>

namespace xmc {

/// Gives `threads` CPU threads to whichever pool suits `model` (a module holding an EncoderImpl, or one).
/// Does nothing to the BLAS where it has no thread switch.
void use_cpu_threads(torch::nn::Module& model, int threads);

}  // namespace xmc
