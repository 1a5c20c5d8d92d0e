#pragma once
// Engine-internal (includes torch). What a run trains on and with: its dataset (checked against the one the run
// started on), its method built on the dataset's training and label texts (its vocabulary) and the method's
// stages, every text tokenized by it (with the image banks and the given features the corpora carry), and the
// training rows it trains on.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/config/train_config.h"
#include "engine/core/progress.h"
#include "engine/data/dataset.h"
#include "engine/method/method.h"
#include "engine/text/tokenized_corpus.h"

namespace xmc {

class RunStore;

struct RunInputs {
  Dataset dataset;  ///< its test texts and given features are moved into the corpora; its training texts stay
  std::unique_ptr<Method> method;
  std::vector<StageSpec> stages;
  TokenizedCorpus train_corpus, test_corpus, label_corpus;
  std::vector<std::int64_t> training_rows;  ///< the labelled training rows that train (ascending)
  std::vector<std::int64_t> held_out_rows;  ///< the labelled training rows the method holds out of training (ascending)
};

struct RunInputsRequest {
  std::int64_t run_id = 0;                ///< named when the dataset changed
  std::string expected_fingerprint;       ///< the dataset's when the run started ("" = not known)
  std::filesystem::path run_dir;          ///< the method's files (its vocabulary)
  const RunStore* store = nullptr;        ///< where a method built on another run finds it (null = none)
  bool distributed = false;               ///< the run is one process of several (refused for a method built on another run)
  int threads = 1;                        ///< the CPU threads of the method's module
};

/// Loads `config`'s dataset and builds its method on it, as `request` says; throws Error when the dataset
/// changed since the run started (resuming would mix data).
RunInputs load_run_inputs(const TrainConfig& config, const RunInputsRequest& request, Progress& progress,
                          const std::function<void(const std::string&)>& phase);

}  // namespace xmc
