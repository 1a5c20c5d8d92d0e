#pragma once
// A real short-text multi-label set built from local data: Debian's package index (`apt-cache dumpavail`, deb822
// stanzas). A query is a package, its name and one-line description ("libfoo-dev: development files for foo"):
// short, punctuation-heavy texts (names with dashes, dots and digits, versions, paths). Its labels are its debtags
// (the "Tag:" field, "facet::tag"), or its archive section. Plain C++.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "engine/core/progress.h"
#include "engine/data/dataset.h"

namespace xmc {

struct DebianPackage {
  std::string name;
  std::string description;  ///< the Description field's first line (the synopsis)
  std::string section;      ///< "games", "contrib/net", ... (empty when the stanza has none)
  std::vector<std::string> tags;  ///< debtags, in the stanza's order, without repeats
};

/// Parses a deb822 package index: stanzas separated by blank lines, "Field: value" lines, continuation lines that
/// start with a space or tab. Reads Package, Description (its first line), Section and Tag (comma-separated, over
/// continuation lines); a package listed again (another version or architecture) is kept once, as first listed.
/// InputError naming the file and line for: a continuation line with no field before it, a line with no colon, an
/// empty field name, a stanza with fields but no Package, a Package value that is empty or holds white space, or
/// text that is not UTF-8.
std::vector<DebianPackage> read_debian_packages(const std::filesystem::path& file);

struct DebianBuildOptions {
  std::filesystem::path packages;  ///< a package index (`apt-cache dumpavail > packages.txt`)
  std::string labels = "tags";     ///< "tags" (debtags) or "section"
  std::int64_t min_label_count = 2;  ///< labels on fewer training packages are dropped (then packages left without a label)
  double test_fraction = 0.3;
  std::int64_t max_items = 0;      ///< a seeded sample of the labelled packages (0 = all)
  std::uint64_t seed = 7;
};

/// Packages with at least one label, shuffled by the seed, split into training and test; labels are kept when at
/// least min_label_count training packages carry them, ids in byte order of their names, label text the name itself.
/// ConfigError naming the option for a value out of range or when no package is left; InputError from the reader.
Dataset build_debian_dataset(const DebianBuildOptions& options, Progress& progress = silent_progress());

}  // namespace xmc
