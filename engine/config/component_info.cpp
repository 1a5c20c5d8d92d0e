#include "engine/config/component_info.h"

namespace xmc {

std::vector<EpochMark> periodic_marks(std::int64_t first, std::int64_t step, std::int64_t end, const std::string& label) {
  constexpr std::int64_t kMaxMarks = 20;  // more than this and the lines hide the curves
  std::vector<EpochMark> out;
  if (step <= 1 || (end - first) / step > kMaxMarks) return out;
  for (std::int64_t e = first; e < end; e += step)
    if (e > 0) out.push_back({e, label});
  return out;
}

}  // namespace xmc
