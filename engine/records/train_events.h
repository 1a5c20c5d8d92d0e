#pragma once
// What a training run publishes while it runs (plain C++; the GUI and CLI subscribe). The trainer never
// writes the run store itself: the run recorder (run_recorder.h) subscribes and writes every event, so a
// process that follows the store sees the same story.
#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "engine/eval/metrics.h"

namespace xmc {

struct TrainEvent {
  enum class Kind {
    Started,     ///< the run (re)starts training: status running
    Paused,      ///< held between steps: status paused
    Resumed,     ///< released after a pause: status running
    Phase,       ///< a new phase starts: message = "encoding", "clustering", "training M1", ... 
    Step,        ///< one optimiser step: loss (stored as `loss_series`), lr, samples_per_s
    EpochEnd,    ///< an epoch of `stage` finished: samples_per_s over the whole epoch
    Evaluation,  ///< metrics (fractions) and decile-wise P@5 after an epoch
    Checkpoint,  ///< a checkpoint of `step` is being written to `message` (subscribers record every step before it first)
    Restored,    ///< training continues from a checkpoint at `step` and `epoch`: anything recorded after them is void
    SystemUse,   ///< a sample of the training process's CPU and memory use: metrics = ("system/cpu_cores", ...)
    SettingChosen,  ///< the run chose a config value while training: message = the key, value (chosen_settings.h)
    Snapshot,    ///< a t-SNE of one query's negatives (also stored): message = its JSON (analysis/negatives_snapshot.h)
    SnapshotForming,  ///< the same map while its t-SNE converges, for views that draw it as it forms (not stored)
    Finished,    ///< the run completed (metrics = final evaluation)
    Stopped,     ///< the user stopped the run; a checkpoint to resume from was written
    Failed,      ///< the run failed; message = the error
  };
  Kind kind = Kind::Step;
  std::int64_t run_id = 0;
  std::int64_t step = 0;         ///< optimiser steps so far
  std::int64_t total_steps = 0;  ///< planned steps of the current phase's schedule
  double epoch = 0;              ///< fractional epoch
  double loss = 0;
  double lr = 0;
  double samples_per_s = 0;
  double value = 0;              ///< SettingChosen: the value chosen for the key in `message`
  std::string stage;             ///< the method's stage of a Step/EpochEnd ("encoder", "m1", "m4")
  std::string loss_series = "loss";  ///< the scalar key a Step's loss is stored under
  std::int64_t query = -1;       ///< Snapshot: the training query it is centred on
  std::string message;
  std::vector<std::pair<std::string, double>> metrics;  ///< the primary inference mode's (unprefixed); SystemUse: its samples
  std::vector<std::pair<std::string, double>> mode_metrics;  ///< Evaluation: every mode's, the primary's too, as "emb/P@5"
  std::vector<std::pair<std::string, std::vector<double>>> decile_tables;  ///< Evaluation: every decile-wise metric
  std::array<double, 10> deciles{};  ///< decile-wise P@5 (bin 1 = head) with Evaluation/Finished
  /// Evaluation: the collapse signal of the training space — std of a query's label scores (mean over
  /// test queries) and the mean score; a spread near 0 means every label scores alike.
  double score_spread = 0;
  double score_mean = 0;
  double seconds = 0;  ///< Evaluation: wall time of encoding, ranking and metrics of every mode
};

/// The collapse warning's rule: label scores of a query spread less than 0.004 around a mean cosine above
/// 0.99. Collapsed Bibtex runs measured 0.001-0.003 around 0.996-0.999 (P@1 under 21%); healthy ones keep
/// 0.005 and more, and usually about 0.1, once trained a few epochs.
inline bool embeddings_collapsed(double score_spread, double score_mean) { return score_spread < 0.004 && score_mean > 0.99; }

/// How a run's run() ended.
enum class RunOutcome { Completed, Stopped };

struct TrainResult {
  RunOutcome outcome = RunOutcome::Completed;
  EvalResult metrics;  ///< final evaluation (the last one made, when stopped) of the primary inference mode
  /// The same evaluation of every inference mode, by mode name ("concat", "de", "clf"), primary first.
  std::vector<std::pair<std::string, EvalResult>> modes;
};

}  // namespace xmc
