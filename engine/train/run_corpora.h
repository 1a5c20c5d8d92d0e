#pragma once
// Engine-internal (includes torch). What a run's method reads of its dataset: the method built on the dataset's
// training and label texts (its vocabulary), and every text tokenized by it, with the image banks and the given
// features the corpora carry.
#include <filesystem>
#include <functional>
#include <string>

#include "engine/core/progress.h"
#include "engine/text/tokenized_corpus.h"

namespace xmc {

class Method;
struct Dataset;

struct RunCorpora {
  TokenizedCorpus train, test, labels;
};

/// Builds `method` on `dataset`'s texts (files in `run_dir`), gives its module `threads` CPU threads and tokenizes the texts. The test texts, and the given
/// features (moved into the corpora, which then hold them once), are freed from `dataset`; its training texts stay
/// (the t-SNE snapshot reads one) for the caller to free.
RunCorpora build_and_tokenize(Method& method, Dataset& dataset, const std::filesystem::path& run_dir, int threads, Progress& progress,
                              const std::function<void(const std::string&)>& phase);

}  // namespace xmc
