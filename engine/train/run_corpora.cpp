#include "engine/train/run_corpora.h"

#include <memory>
#include <utility>
#include <vector>

#include "engine/data/dataset.h"
#include "engine/method/method.h"
#include "engine/model/cpu_thread_policy.h"

namespace xmc {

RunCorpora build_and_tokenize(Method& method, Dataset& dataset, const std::filesystem::path& run_dir, int threads, Progress& progress,
                              const std::function<void(const std::string&)>& phase) {
  {
    // A copy of every training and label text: freed once the vocabulary is made, before the corpora are.
    std::vector<std::string> vocabulary_texts = dataset.train_text;
    vocabulary_texts.insert(vocabulary_texts.end(), dataset.label_text.begin(), dataset.label_text.end());
    method.build(vocabulary_texts, run_dir);
  }
  use_cpu_threads(method.module(), threads);
  RunCorpora corpora;
  corpora.train = method.tokenizer().tokenize(dataset.train_text);
  corpora.test = method.tokenizer().tokenize(dataset.test_text);
  corpora.labels = method.tokenizer().tokenize(dataset.label_text);
  std::vector<std::string>().swap(dataset.test_text);  // only its tokens are read from here on
  corpora.train.images = dataset.train_images;  // null without banks; only an encoder that fuses images reads them
  corpora.test.images = dataset.test_images;
  corpora.labels.images = dataset.label_images;
  if (method.ranks_given_features()) {
    phase("reading the dataset's given features");
    load_given_features(dataset, progress);
    corpora.train.features = std::make_shared<const CsrMatrix>(std::move(*dataset.train_features));  // held once, by the corpora
    corpora.test.features = std::make_shared<const CsrMatrix>(std::move(*dataset.test_features));
    dataset.train_features.reset();
    dataset.test_features.reset();
  }
  return corpora;
}

}  // namespace xmc
