#include "engine/method/trained_run.h"

#include "engine/core/error.h"
#include "engine/data/dataset.h"
#include "engine/data/text_lines.h"
#include "engine/method/method_registry.h"
#include "engine/store/run_files.h"
#include "engine/store/run_store.h"
#include "engine/method/checkpoint.h"
#include "engine/model/encoder_factory.h"
#include "engine/model/image_fusion.h"
#include "engine/model/random_state.h"

namespace xmc {
namespace {

/// Puts torch's generators (the CPU's and `device`'s) back, on leaving the scope, as they were on entering it.
class KeepRandomStreams {
 public:
  explicit KeepRandomStreams(torch::Device device) : before_(RandomState::of(device)) {}
  KeepRandomStreams(const KeepRandomStreams&) = delete;
  KeepRandomStreams& operator=(const KeepRandomStreams&) = delete;
  ~KeepRandomStreams() {
    try {
      before_.restore();
    } catch (...) {  // a device gone since; the run itself loaded or reported its own error
    }
  }

 private:
  RandomState before_;
};

}  // namespace

TrainedRun load_trained_run(const RunStore& store, std::int64_t run_id, const std::string& device) {
  const std::filesystem::path& db_path = store.path();
  const RunInfo info = store.get_run(run_id);
  TrainedRun run;
  run.run_id = run_id;
  run.config = parse_train_config(info.config_json, "run " + std::to_string(run_id) + " config");
  if (!device.empty()) run.config.device = device;
  // Building the model draws its initial parameters and the checkpoint sets the generators to the run's: the
  // caller's random stream is put back afterwards, so an IRENE run seeded 1 or 2 trains from its own seed, not
  // from where its base run's checkpoint left the generators.
  const KeepRandomStreams keep_random_streams(parse_device(run.config.device));
  const auto run_dir = verified_run_directory(db_path, run_id);  // never another run's files
  const auto checkpoint = checkpoint_file(run_dir);
  if (!std::filesystem::exists(checkpoint))
    throw ConfigError("run " + std::to_string(run_id) + " has no checkpoint yet (" + checkpoint.string() + ")");
  run.label_texts = read_text_lines(run.config.dataset / dataset_files::kLabelText);
  run.method = make_method(component_config(run.config));
  run.method->use_store(store);
  run.method->build({}, run_dir);  // no texts: an encoder with a vocabulary of its own reads it from the run's folder
  load_checkpoint(checkpoint, *run.method, static_cast<std::int64_t>(run.label_texts.size()), store.store_id(), run_id);
  run.method->module().eval();
  if (image_fusion_for(component_config(run.config)).max_images > 0) {
    const auto bank = image_files::bank(run.config.dataset, "lbl");
    std::error_code error;
    if (std::filesystem::exists(bank, error)) {
      run.label_images = std::make_shared<const ImageBank>(ImageBank::open(bank, image_files::counts(run.config.dataset, "lbl")));
      if (run.label_images->rows() != static_cast<std::int64_t>(run.label_texts.size()))
        throw InputError(bank.string(), "has " + std::to_string(run.label_images->rows()) + " rows, but the dataset has " +
                                            std::to_string(run.label_texts.size()) + " labels");
    }
  }
  return run;
}

TokenizedCorpus TrainedRun::label_corpus() const {
  TokenizedCorpus corpus = method->tokenizer().tokenize(label_texts);
  if (label_images && label_images->rows() == corpus.size()) corpus.images = label_images;
  return corpus;
}

TrainedRun load_trained_run(const std::filesystem::path& db_path, std::int64_t run_id, const std::string& device) {
  const RunStore store(db_path);
  return load_trained_run(store, run_id, device);
}

}  // namespace xmc
