#include "engine/train/run_inputs.h"

#include <algorithm>
#include <iterator>
#include <memory>
#include <utility>
#include <vector>

#include "engine/core/error.h"
#include "engine/method/method_registry.h"
#include "engine/model/image_options.h"
#include "engine/model/cpu_thread_policy.h"

namespace xmc {
namespace {

/// The labelled training rows `method` trains on, and those it holds out of training (both ascending).
void split_training_rows(RunInputs& in) {
  std::vector<std::int64_t> labelled;
  for (std::int64_t r = 0; r < in.dataset.num_train(); ++r)
    if (in.dataset.train_labels.row_size(r) > 0) labelled.push_back(r);
  in.held_out_rows = in.method->held_out_queries(labelled);
  std::set_difference(labelled.begin(), labelled.end(), in.held_out_rows.begin(), in.held_out_rows.end(), std::back_inserter(in.training_rows));
}

/// Builds `in.method` on the dataset's texts (files in `run_dir`), gives its module `threads` CPU threads and
/// tokenizes the texts. The test texts, and the given features (moved into the corpora, which then hold them
/// once), are freed from the dataset; its training texts stay (the t-SNE snapshot reads one) for the caller to free.
void build_and_tokenize(RunInputs& in, const std::filesystem::path& run_dir, int threads, Progress& progress,
                        const std::function<void(const std::string&)>& phase) {
  Dataset& dataset = in.dataset;
  Method& method = *in.method;
  {
    // A copy of every training and label text: freed once the vocabulary is made, before the corpora are.
    std::vector<std::string> vocabulary_texts = dataset.train_text;
    vocabulary_texts.insert(vocabulary_texts.end(), dataset.label_text.begin(), dataset.label_text.end());
    method.build(vocabulary_texts, run_dir);
  }
  use_cpu_threads(method.module(), threads);
  in.train_corpus = method.tokenizer().tokenize(dataset.train_text);
  in.test_corpus = method.tokenizer().tokenize(dataset.test_text);
  in.label_corpus = method.tokenizer().tokenize(dataset.label_text);
  std::vector<std::string>().swap(dataset.test_text);  // only its tokens are read from here on
  in.train_corpus.images = dataset.train_images;  // null without banks; only an encoder that fuses images reads them
  in.test_corpus.images = dataset.test_images;
  in.label_corpus.images = dataset.label_images;
  if (method.ranks_given_features()) {
    phase("reading the dataset's given features");
    load_given_features(dataset, progress);
    in.train_corpus.features = std::make_shared<const CsrMatrix>(std::move(*dataset.train_features));  // held once, by the corpora
    in.test_corpus.features = std::make_shared<const CsrMatrix>(std::move(*dataset.test_features));
    dataset.train_features.reset();
    dataset.test_features.reset();
  }
}

}  // namespace

RunInputs load_run_inputs(const TrainConfig& config, const RunInputsRequest& request, Progress& progress,
                          const std::function<void(const std::string&)>& phase) {
  phase("loading dataset");
  RunInputs in;
  in.dataset = load_dataset(config.dataset, {.load_features = false, .load_images = reads_image_banks(config)}, progress);
  const auto fingerprint = dataset_fingerprint(config.dataset);
  if (!request.expected_fingerprint.empty() && request.expected_fingerprint != fingerprint)
    throw Error("dataset " + config.dataset.string() + " changed since run " + std::to_string(request.run_id) + " started (fingerprint " +
                request.expected_fingerprint + " -> " + fingerprint + "); resuming would mix data");
  phase("tokenizing");
  in.method = make_method(component_config(config));
  if (request.distributed && in.method->builds_on_another_run())
    throw ConfigError("method " + in.method->name() + " builds on another run and trains in one process: start it without --nproc/--world-size");
  in.stages = in.method->stages();
  if (request.store != nullptr) in.method->use_store(*request.store);
  build_and_tokenize(in, request.run_dir, request.threads, progress, phase);
  phase(in.method->description());
  split_training_rows(in);
  return in;
}

}  // namespace xmc
