#pragma once
// Filter expressions over stored runs, as experiment trackers' query boxes take them:
//   method == "unidec" and P@1 > 0.6
//   lr < 0.01 or not (encoder.type == "bert")
//   "bibtex" in dataset and PSP@5 >= 45%
// Names are run fields (id, name, status, method, dataset, tags, notes), config keys (`lr`, `encoder.dim`, a
// former name reads as today's) and metrics, the primary mode's or a mode's ("P@5", "emb/P@5", fractions: 45% is
// 0.45). `in` finds text in text (a tag among the tags). A run that lacks a value (a metric never evaluated) fails the
// comparison. Plain C++, no Qt: the Runs tab and `xmc runs list --where` share it; a fuzz target reads it.
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "engine/core/error.h"

namespace xmc {

/// A value a filter reads of a run: nothing (the run lacks it), a number or a text.
using FilterValue = std::variant<std::monostate, double, std::string>;

/// What a name is: unknown (an error when parsing), or the kind of value it reads.
enum class FilterNameKind { unknown, number, text };

/// The kind of a name the filter reads: a run field, a config key (by its type) or a metric ("P@5", "emb/PSP@3").
FilterNameKind filter_name_kind(const std::string& name);

/// A filter that does not parse: what() names the position (1-based character) and what was expected or found.
class FilterError : public Error {
 public:
  FilterError(std::size_t position, const std::string& reason);
  std::size_t position() const { return position_; }

 private:
  std::size_t position_;
};

class RunFilter {
 public:
  /// Parses `expression`; throws FilterError for a malformed one, an unknown name or a comparison of a number with
  /// a text. At most 200 nested parentheses or `not`s (deeper is refused, not a stack overflow).
  static RunFilter parse(const std::string& expression);

  /// What a run's value of a name is (`kind` is filter_name_kind(name), worked out once when the filter was parsed).
  using Lookup = std::function<FilterValue(const std::string& name, FilterNameKind kind)>;
  /// Whether the run whose values `lookup` gives passes.
  bool matches(const Lookup& lookup) const;
  /// The names it reads, each once, in order of first use.
  const std::vector<std::string>& names() const { return names_; }

  struct Node;

 private:
  std::shared_ptr<const Node> root_;
  std::vector<std::string> names_;
};

/// Whether `text` is meant as an expression (it compares: ==, !=, <, >, <=, >=, or ` in `) rather than words to find
/// in the runs' names, datasets, tags and notes.
bool looks_like_filter_expression(const std::string& text);

/// The value `name` has in a run, from its flattened config value (as text), for filter_name_kind(name).
FilterValue filter_value_from_text(FilterNameKind kind, const std::string& text);

}  // namespace xmc
