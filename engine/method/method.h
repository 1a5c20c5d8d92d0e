#pragma once
// Engine-internal (includes torch). A training method — DEXML, NGAME, UniDEC, IRENE — behind one small
// interface made of capabilities, so that the generic trainer runs every method's loop and a new method is
// one folder plus a registration (engine/registry/component_list.h), never a branch elsewhere.
//
//   - TrainingStages (training_stages.h): its stages, in order; each is trained by one of
//       - GradientSteps (gradient_steps.h): what each stage optimises, an epoch's batches, one step; the trainer
//         clips, schedules and steps the optimiser (a GradientMethod);
//       - StageFitting (stage_fitting.h): a stage fitted in parts without gradients (xrlinear).
//   - LabelRanking (label_ranking.h): its inference modes (a label matrix and the query encoder that
//     searches it) and new labels' vectors; the evaluator and the Predictor use only this.
//   - MethodState (method_state.h): its parameters and own state in checkpoints.
//   - LabelSynthesis (label_synthesis.h), optional: classifiers for labels its base run never saw.
// What a method declares without being built (its options, extra stages' epochs, plot marks, loss series,
// resume checks) is its registration, MethodInfo (engine/config/component_info.h).
#include <filesystem>
#include <string>
#include <vector>

#include "engine/method/gradient_steps.h"
#include "engine/method/label_ranking.h"
#include "engine/method/label_synthesis.h"
#include "engine/method/method_state.h"
#include "engine/method/stage_fitting.h"
#include "engine/method/training_stages.h"
#include "engine/text/text_tokenizer.h"

namespace xmc {

class RunStore;

class Method : public TrainingStages, public LabelRanking, public MethodState {
 public:
  ~Method() override = default;

  virtual std::string name() const = 0;

  /// True for a method that takes its encoder and tokenizer from another run (IRENE): its own folder has
  /// no vocabulary.
  virtual bool builds_on_another_run() const { return false; }
  /// Whether it ranks by the dataset's given sparse features (trn/tst_X_Xf.txt): the trainer then reads them and
  /// hands them over with the training and test corpora (TokenizedCorpus::features).
  virtual bool ranks_given_features() const { return false; }
  /// The run store the run lives in, given before build() and open while it runs: a method built on another
  /// run (IRENE on its base run) loads that run from it.
  virtual void use_store(const RunStore& /*store*/) {}
  /// Builds the model: tokenizer, encoder and heads (run_dir keeps files such as the vocabulary).
  /// `vocabulary_texts` are the training queries and label texts (empty when the vocabulary is loaded).
  virtual void build(const std::vector<std::string>& vocabulary_texts, const std::filesystem::path& run_dir) = 0;
  /// "bow encoder: 21,304 words, d=256" for logs.
  virtual std::string description() const = 0;
  virtual const TextTokenizer& tokenizer() const = 0;

  /// The method's label synthesis, or null when it has none.
  virtual LabelSynthesis* label_synthesis() { return nullptr; }

  /// How its stages train: by gradient steps (a GradientMethod) or by fitting (StageFitting). Exactly one is not null.
  virtual GradientSteps* gradient_steps() { return nullptr; }
  virtual StageFitting* stage_fitting() { return nullptr; }
};

/// A method whose stages train by gradient steps.
class GradientMethod : public Method, public GradientSteps {
 public:
  GradientSteps* gradient_steps() final { return this; }
};

}  // namespace xmc
