#pragma once
// Zero-shot splits of a dataset (IRENE / EMMETT setting): a fraction of the labels is made novel — no
// training point keeps them — and, optionally, a further fraction of observed labels is withheld from base
// training as pseudo-novel labels, on which a classifier generator is trained and selected. The output is a
// canonical dataset folder (any method trains on it, with observed labels only) plus:
//   trn_X_Y_observed.txt   train positives of every observed label (pseudo-novel ones included)
//   tst_X_Y_full.txt       every test positive (the generalized setting; the same as tst_X_Y.txt)
//   tst_X_Y_zero.txt       test rows with at least one novel positive, novel positives only (global label ids)
//   tst_zero.raw.txt       those rows' texts
//   tst_zero_rows.txt      their row numbers in tst.raw.txt
//   novel_labels.txt, pseudo_novel_labels.txt   label ids, one per line, ascending
//   filter_labels_test_full.txt, filter_labels_test_zero.txt   the filter pairs of either setting
#include <cstdint>
#include <filesystem>
#include <vector>

#include "engine/core/progress.h"
#include "engine/data/csr_matrix.h"
#include "engine/data/filter_pairs.h"

namespace xmc {

namespace zero_shot_files {
inline constexpr const char* kNovelLabels = "novel_labels.txt";
inline constexpr const char* kPseudoNovelLabels = "pseudo_novel_labels.txt";
inline constexpr const char* kTrainObservedLabels = "trn_X_Y_observed.txt";
inline constexpr const char* kTestFullLabels = "tst_X_Y_full.txt";
inline constexpr const char* kTestZeroLabels = "tst_X_Y_zero.txt";
inline constexpr const char* kTestZeroText = "tst_zero.raw.txt";
inline constexpr const char* kTestZeroRows = "tst_zero_rows.txt";
inline constexpr const char* kFilterFull = "filter_labels_test_full.txt";
inline constexpr const char* kFilterZero = "filter_labels_test_zero.txt";
}  // namespace zero_shot_files

struct ZeroShotSplitOptions {
  std::filesystem::path in;
  std::filesystem::path out;
  double novel_frac = 0.1;   ///< of all labels, drawn among labels with a test positive
  double val_frac = 0.0;     ///< of all labels, pseudo-novel, drawn among the other labels with a train positive
  std::uint64_t seed = 0;
};

struct ZeroShotSplitSummary {
  std::int64_t labels = 0, novel = 0, pseudo_novel = 0;
  std::int64_t zero_shot_test_rows = 0;   ///< test rows with a novel positive
  std::int64_t train_rows_without_labels = 0;  ///< train rows left with no observed positive
};

/// Writes the split of `options.in` into `options.out`. Throws ConfigError for fractions out of range or
/// too few eligible labels, InputError for the input dataset's problems.
ZeroShotSplitSummary split_zero_shot(const ZeroShotSplitOptions& options, Progress& progress = silent_progress());

/// The zero-shot parts of a split folder, checked against each other and the dataset's label count.
struct ZeroShotSplit {
  std::vector<std::int32_t> novel, pseudo_novel;  ///< ascending label ids
  CsrMatrix train_observed;   ///< [train rows x L]
  CsrMatrix test_zero;        ///< [zero rows x L], novel labels only
  std::vector<std::int64_t> test_zero_rows;  ///< rows of the test set
  CsrMatrix test_full;        ///< [test rows x L]
  FilterPairs filter_zero;    ///< in zero-row coordinates
  FilterPairs filter_full;
};

/// True when `dir` holds a zero-shot split (novel_labels.txt is there).
bool is_zero_shot_split(const std::filesystem::path& dir);
/// Reads the split's files of a dataset folder with `num_train`/`num_test` rows and `num_labels` labels.
ZeroShotSplit read_zero_shot_split(const std::filesystem::path& dir, std::int64_t num_train, std::int64_t num_test, std::int64_t num_labels);

}  // namespace xmc
