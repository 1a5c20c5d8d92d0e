#pragma once
// Imports a mulan multi-label benchmark (sparse or dense ARFF + labels XML), e.g. Bibtex, Delicious.
// Label attributes are the ones named in the XML; every other attribute name is a word. Each point's
// query text is the words it contains (in attribute order) and its BoW features are those attributes.
#include <filesystem>

#include "engine/core/progress.h"
#include "engine/data/dataset.h"

namespace xmc {

struct MulanImportOptions {
  std::filesystem::path train_arff;
  std::filesystem::path test_arff;
  std::filesystem::path labels_xml;
  std::string name;  ///< dataset name; default: the ARFF @relation of the train file
  /// Prefix stripped from label names for the label text (mulan tags are "TAG_xxx").
  std::string label_prefix = "TAG_";
};

Dataset import_mulan(const MulanImportOptions& options, Progress& progress = silent_progress());

/// Label names listed in a mulan labels XML file (`<label name="...">`, nested hierarchies included),
/// in file order. XML entities (&amp; &lt; &gt; &quot; &apos;) are decoded.
std::vector<std::string> read_mulan_label_names(const std::filesystem::path& xml);

}  // namespace xmc
