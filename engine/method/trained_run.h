#pragma once
// Engine-internal (includes torch). A stored run's trained method, ready to use: its config, the method
// built as the run built it (the run's own vocabulary), its latest checkpoint loaded, in eval mode.
// Serves the predictor (`xmc predict`, the workbench's search panel) and later IRENE's synthesis.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "engine/config/train_config.h"
#include "engine/data/image_bank.h"
#include "engine/method/method.h"

namespace xmc {

struct TrainedRun {
  std::int64_t run_id = 0;
  TrainConfig config;
  std::unique_ptr<Method> method;
  std::vector<std::string> label_texts;  ///< the dataset's labels, in id order
  /// The labels' image bank, when the run's encoder fuses images (images/lbl.npy); null otherwise.
  std::shared_ptr<const ImageBank> label_images;

  /// The dataset's labels as the run's encoder reads them: tokenized, with their images.
  TokenizedCorpus label_corpus() const;
};

class RunStore;

/// Loads run `run_id` of `store` (its run, and any run it builds on, read through that one handle).
/// `device` "" = the run's own. Errors (no such run, no checkpoint yet, missing vocabulary, a checkpoint
/// that does not fit) name the run and the file.
TrainedRun load_trained_run(const RunStore& store, std::int64_t run_id, const std::string& device = "");
/// The same from the store at `db_path`, opened for the call.
TrainedRun load_trained_run(const std::filesystem::path& db_path, std::int64_t run_id, const std::string& device = "");

}  // namespace xmc
