#pragma once
// Engine-internal (includes torch). Two independent parts of a training step run at the same time on two of
// LibTorch's intra-op threads. On the CPU the system BLAS runs on the calling thread (core/blas_threads.h), so
// while a step makes a matrix product the other threads wait: a step whose work splits into two branches that
// share no parameters (UniDEC's DE and CLF heads over one encoder output) gets the second core for the second
// branch's products instead. Each part's own operations run serially on its thread (an at::parallel_for inside
// an OpenMP region does not nest).
#include <functional>

namespace xmc {

/// Whether running two parts side by side can gain here: LibTorch has at least two intra-op threads and is
/// not already inside a parallel region.
bool side_by_side_available();

/// Runs `first` and `second` to completion, on two threads when side_by_side_available(), one after the
/// other otherwise. Both threads carry the calling thread's LibTorch state (grad mode, dispatch keys), so
/// forward and backward passes work in either. The parts must not touch the same tensors' gradients or the
/// same random generator: their order between themselves is not fixed. Both always run; an exception from
/// either is rethrown once both have ended (the first part's when both throw).
void run_side_by_side(const std::function<void()>& first, const std::function<void()>& second);

}  // namespace xmc
