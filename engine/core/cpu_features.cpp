#include "engine/core/cpu_features.h"

namespace xmc {

bool cpu_has_native_bfloat16_products() {
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
  static const bool native = __builtin_cpu_supports("avx512bf16") || __builtin_cpu_supports("amx-bf16");
  return native;
#else
  return false;  // unknown here: float32, which every CPU multiplies at full speed
#endif
}

}  // namespace xmc
