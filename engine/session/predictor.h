#pragma once
// Query a trained run (plain C++; used by `xmc predict` and the workbench's search panel): encode texts
// and rank all labels, in each inference mode the run supports.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "engine/core/progress.h"

#include "engine/records/run_records.h"

namespace xmc {

struct LabelScore {
  std::int64_t label = 0;
  float score = 0;
  std::string text;  ///< the label's text
};

struct LabelRank {
  std::int64_t rank = 0;  ///< 1-based
  float score = 0;
};

/// One inference mode's part of a search.
struct ModeAnswer {
  std::string mode;
  std::vector<LabelScore> top;  ///< the top labels, best first (from the mode's index)
  /// The rank of each label asked about, in the order asked (from the exact scores); rank 0 = the mode does
  /// not rank that label (a mode of a label subset, such as IRENE's zero-shot one).
  std::vector<LabelRank> ranks;
  double search_ms = 0;  ///< searching the mode's index and ranking the labels asked about
};

/// A search of one text in every mode of a run.
struct SearchAnswer {
  std::vector<ModeAnswer> modes;  ///< in the order of Predictor::modes()
  double encode_ms = 0;           ///< encoding the text, once for all modes (modes share query encoders)
};

class Predictor {
 public:
  /// Loads run `run_id` of the store at `db_path` from its latest checkpoint and encodes every label
  /// (reported to `progress`). `device` "" = the run's.
  static Predictor open(const std::filesystem::path& db_path, std::int64_t run_id, const std::string& device = "",
                        Progress& progress = silent_progress(), const std::string& index_spec = "exact");
  ~Predictor();
  Predictor(Predictor&&) noexcept;
  Predictor& operator=(Predictor&&) noexcept;

  /// "embedding" for every run; NGAME runs add "classifier" and "fused" (their default).
  const std::vector<std::string>& modes() const;
  const std::string& default_mode() const;
  /// The index every mode is searched with ("exact", "hnsw", "faiss:IVF256,Flat", ...).
  const std::string& index_spec() const;

  /// Top `top` labels of each text, best first. Throws ConfigError for an unknown mode.
  std::vector<std::vector<LabelScore>> predict(const std::vector<std::string>& texts, std::int64_t top,
                                               const std::string& mode = "") const;

  /// The vectors `mode` ("" = primary) ranks labels with, [num_labels x d] row-major (the dataset's labels,
  /// then added ones); `dim` gets d.
  std::vector<float> label_vectors(const std::string& mode, std::int64_t& dim) const;
  /// The query vectors of `texts` in `mode`, [texts x d] row-major.
  std::vector<float> query_vectors(const std::vector<std::string>& texts, const std::string& mode, std::int64_t& dim) const;

  /// For each text, how many of its tokens the run's vocabulary knows: a text with none is ranked from
  /// nothing the encoder learned (every such text gets the same ranking), worth a warning.
  std::vector<std::int64_t> known_token_counts(const std::vector<std::string>& texts) const;

  /// Searches `text` in every mode from one encoding of it: each mode's top `top` labels, the ranks of
  /// `labels` (e.g. a dataset query's true labels, a label just added) and the time each part took.
  /// Throws ConfigError for a label out of range.
  SearchAnswer search(const std::string& text, std::int64_t top, const std::vector<std::int64_t>& labels = {}) const;

  /// Where `label` ranks for `text` in `mode` among all labels: rank 1 = best; equal scores are ordered
  /// by lower label id first, as predict() orders them. Throws ConfigError for an unknown mode or label.
  LabelRank rank_of(const std::string& text, std::int64_t label, const std::string& mode = "") const;

  /// Adds a label that the run never saw, by its text, to every inference mode, and keeps it in the run
  /// store so that every later Predictor of the run ranks it too. Its vectors are the run's zero-shot ones
  /// (its embedding; for NGAME's classifiers w = Φ(z)), or IRENE's synthesized classifier when the run is an
  /// IRENE run or a completed IRENE run is built on it (synthesized_by() says which). Returns its label id
  /// (num_labels() before the call). Throws ConfigError for an empty or multi-line text, or a text the run
  /// already has as a label or as an added label (naming it).
  std::int64_t add_label(const std::string& text);
  /// Adds several labels at once (one encoding and synthesis pass): the first one's id.
  std::int64_t add_labels(const std::vector<std::string>& texts);
  /// "embedding", the method of a run that synthesizes its added labels' classifiers itself (IRENE), or "<method> run N" (the run of such a method built on this one).
  const std::string& synthesized_by() const;
  /// Whether the run's encoder fuses images (its labels are encoded with theirs); queries given as text have none.
  bool fuses_images() const;
  /// The labels added to this run (its store rows), oldest first; their ids follow the dataset's labels.
  std::vector<AddedLabel> added_labels() const;

  std::int64_t num_labels() const;
  const std::vector<std::string>& label_texts() const;
  std::int64_t run_id() const;

 private:
  struct Impl;
  explicit Predictor(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace xmc
