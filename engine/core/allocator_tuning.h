#pragma once
// Plain C++. Tells the C allocator to keep freed memory for reuse instead of handing it back to the
// kernel. Tensor code allocates and frees large temporaries (a 2048 × 13,550 score block is 111 MB) at
// every step and every evaluation chunk; by default glibc serves each from a fresh mmap and unmaps it on
// free, so every page is faulted in and zeroed by the kernel again: a 2-epoch WordNet run spent 34 of its
// 41 s wall in the kernel (4.3 million minor faults). Kept in the heap, the same run takes 10 s with
// 0.1 million faults. The cost: the process keeps its peak heap (up to a 1 GiB free tail) until it exits, or
// until return_freed_memory() hands the free pages back.

namespace xmc {

/// Idempotent and thread-safe; call early in any process that trains, evaluates or searches. Does
/// nothing where the C library has no such switches (non-glibc).
void keep_freed_memory_for_reuse();

/// Hands the free pages the allocator keeps back to the kernel (glibc: every arena, free chunks inside the heap
/// too, not only its top): for the moment a phase's large blocks are gone for good, e.g. the optimiser's moments
/// once training ends, so that the next phase's peak is not this one's plus that one's. Does nothing elsewhere.
void return_freed_memory();

}  // namespace xmc
