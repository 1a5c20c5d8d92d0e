#pragma once
// JSON from outside (config files, --set values, dataset.json, xc-json lines, safetensors headers,
// tokenizer.json, a model's config.json) is parsed through parse_bounded_json. nlohmann::json parses
// iteratively but destroys and dumps its values recursively, so a document nested 100,000 levels deep
// crashed the process with a stack overflow; real files nest a handful of levels.
#include <nlohmann/json.hpp>

#include <string>
#include <utility>

namespace xmc {

inline constexpr int kMaxJsonDepth = 256;

/// nlohmann::json::parse(input), refusing documents nested deeper than kMaxJsonDepth with the same
/// nlohmann::json::parse_error a syntax error gives (so callers report both alike).
/// A number past double's range (1e400) is reported the same way, not as nlohmann's out_of_range.
template <typename Input>
nlohmann::json parse_bounded_json(Input&& input) {
  try {
    return nlohmann::json::parse(std::forward<Input>(input), [](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
      if (depth > kMaxJsonDepth)
        throw nlohmann::json::parse_error::create(101, 0, "values nested deeper than " + std::to_string(kMaxJsonDepth) + " levels", nullptr);
      return true;
    });
  } catch (const nlohmann::json::out_of_range& e) {
    throw nlohmann::json::parse_error::create(101, 0, e.what(), nullptr);
  }
}

/// The same over the bytes [first, last).
inline nlohmann::json parse_bounded_json(const char* first, const char* last) { return parse_bounded_json(std::string(first, last)); }

}  // namespace xmc
