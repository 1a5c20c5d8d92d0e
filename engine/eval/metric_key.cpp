#include "engine/eval/metric_key.h"

#include <array>
#include <charconv>

namespace xmc {

MetricKey MetricKey::parse(std::string_view name) {
  MetricKey key;
  if (const auto slash = name.rfind('/'); slash != std::string_view::npos) {
    key.mode = std::string(name.substr(0, slash));
    name.remove_prefix(slash + 1);
  }
  key.family = std::string(name);
  if (const auto at = name.rfind('@'); at != std::string_view::npos) {
    int k = 0;
    const char* first = name.data() + at + 1;
    const char* last = name.data() + name.size();
    const auto r = std::from_chars(first, last, k);
    if (r.ec == std::errc() && r.ptr == last && first != last) {
      key.family = std::string(name.substr(0, at));
      key.k = k;
    }
  }
  return key;
}

std::string MetricKey::str() const {
  std::string out = mode.empty() ? std::string() : mode + "/";
  out += family;
  if (k >= 0) out += "@" + std::to_string(k);
  return out;
}

int MetricKey::family_rank() const {
  static const std::array<const char*, 5> order = {"P", "nDCG", "PSP", "PSnDCG", "R"};
  for (std::size_t i = 0; i < order.size(); ++i)
    if (family == order[i]) return static_cast<int>(i);
  return static_cast<int>(order.size());
}

}  // namespace xmc
