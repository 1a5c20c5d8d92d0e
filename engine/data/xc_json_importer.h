#pragma once
// Imports the Extreme Classification Repository's raw-text JSON datasets (LF-AmazonTitles-131K,
// LF-WikiSeeAlso-320K, ...): gzip'd files with one JSON object per line,
//   {"uid": ..., "title": "...", "content": "...", "target_ind": [label indices]}
// for train and test, and {"uid", "title", "content"} per label in the label file.
#include <filesystem>

#include "engine/core/progress.h"
#include "engine/data/dataset.h"

namespace xmc {

struct XcJsonImportOptions {
  std::filesystem::path train;   ///< trn.json.gz (plain .json is accepted too)
  std::filesystem::path test;    ///< tst.json.gz
  std::filesystem::path labels;  ///< lbl.json.gz
  bool title_only = false;       ///< texts are titles only (the "Titles" datasets); else "title content"
  std::string name;              ///< dataset name; default: the name of the train file's folder
};

Dataset import_xc_json(const XcJsonImportOptions& options, Progress& progress = silent_progress());

}  // namespace xmc
