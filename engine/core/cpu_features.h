#pragma once
// What the processor this runs on can do natively, for choices a slower fallback would make unwise.

namespace xmc {

/// Whether the CPU multiplies bfloat16 matrices natively (AVX512-BF16 or AMX-BF16): there, LibTorch's bfloat16
/// products run several times faster than float32 ones; elsewhere they are emulated and slower.
bool cpu_has_native_bfloat16_products();

}  // namespace xmc
