#pragma once
// Interactive query-to-label search over a trained run: type a query, see the top-k labels with scores
// for each inference mode of the run and the latency of each; when the text is a dataset query, its true
// labels are highlighted. New labels can be added by text and are ranked from then on: each search says
// where the newest added label ranks in every mode, and added labels are marked in the result tables.
//
// Loading and searching run on worker threads, so a large label index never freezes the window. One
// search runs at a time (the predictor is not shared between threads); a query typed while one runs
// waits, and replaces any query waiting before it: results land in the order typed, and a query
// superseded while it ran is never shown.
#include <QFuture>
#include <QWidget>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/session/predictor.h"

class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QTableView;
class QHBoxLayout;

namespace xmc::gui {

class QtProgress;
class SearchResultsModel;

class SearchPanel : public QWidget {
  Q_OBJECT
 public:
  explicit SearchPanel(QWidget* parent = nullptr);
  ~SearchPanel() override;

  /// Loads run `run` of the store `db` in the background (model, label index, dataset queries).
  void open_run(const QString& db, std::int64_t run);
  bool ready() const { return predictor_ != nullptr; }
  /// The run searched (0 before one is loaded).
  std::int64_t run_id() const { return predictor_ ? predictor_->run_id() : 0; }

  /// Searches for `text` in the background (also what pressing Enter does); the results land in the
  /// per-mode tables, then search_finished() is emitted. Returns at once.
  void search(const QString& text);
  /// The text in the query box: what the shown results are for (search() puts its text there).
  QString query_text() const;
  /// Adds a label by its text (after the running search, if any, ends); returns its id (-1 when no run
  /// is loaded).
  std::int64_t add_label(const QString& text);

  /// For tests and scripting: mode names shown, and the rows of a mode's table.
  QStringList modes() const;
  /// The image files shown for the last searched query (a dataset query with images), in order.
  QStringList query_image_files() const;
  QStringList result_texts(const QString& mode) const;
  /// Labels highlighted as ground truth in the last search.
  int highlighted_count() const { return highlighted_; }
  /// Where the newest added label ranked in `mode` in the last search (0 = no label added).
  std::int64_t added_label_rank(const QString& mode) const;
  /// Shows a second run's ranking of every query beside this run's (its primary mode; true labels of a
  /// dataset query green by their text). `run` 0 removes it. Loads in the background: compared_run_loaded().
  void compare_with(std::int64_t run);
  /// The compared run's results of the last search (label texts), empty when none.
  QStringList compared_results() const;
  /// For a dataset query: every true label's rank in `mode` in the last search (label id → rank), those
  /// inside the top-k and those below it (listed under the table's top-k rows).
  std::map<std::int64_t, std::int64_t> true_label_ranks(const QString& mode) const;

 Q_SIGNALS:
  void run_loaded(std::int64_t run);
  void compared_run_loaded(std::int64_t run);
  void load_failed(const QString& error);
  /// The results of `text` are shown (or its error is, in the status line).
  void search_finished(const QString& text);

 private:
  struct LoadedRun;
  /// What one search found in each inference mode, computed off the UI thread.
  struct ModeResult {
    std::optional<LabelRank> added_rank;  ///< where the newest added label ranks
    std::vector<std::pair<std::int64_t, LabelRank>> missed_truth;  ///< true labels below the top-k, by rank
  };
  struct SearchResult {
    SearchAnswer answer;            ///< the predictor's answer, every mode from one encoding of the query
    std::vector<ModeResult> modes;  ///< in the order of tables_
    std::string added_text;        ///< the newest added label's text ("" = none added)
    std::int64_t num_labels = 0;
    QString error;
    std::vector<LabelScore> other_ranked;  ///< the compared run's top-k (its primary mode)
    double other_milliseconds = 0;
  };

  void install(std::unique_ptr<LoadedRun> loaded);
  void start_search(const QString& text);
  void show_results(const QString& text, const SearchResult& result);
  void show_query_images(const std::vector<std::string>& files);

  std::unique_ptr<Predictor> predictor_;
  QFuture<SearchResult> search_;              ///< the search running on predictor_ (at most one)
  std::optional<QString> queued_query_;       ///< the newest query typed while it ran
  int search_number_ = 0;                     ///< numbers searches; results of older numbers are stale
  /// Loads in flight: they report to load_progress_, so the panel waits for them before it goes away.
  std::map<int, QFuture<LoadedRun*>> loads_;  ///< by load number
  int next_load_ = 0;
  std::unordered_map<std::string, std::vector<std::int32_t>> truth_by_text_;  ///< dataset query -> labels
  std::unordered_map<std::string, std::vector<std::string>> images_by_text_;  ///< dataset query -> its image files
  std::shared_ptr<const std::vector<std::vector<std::string>>> label_images_;  ///< label id -> its image files
  QWidget* query_images_ = nullptr;
  QLabel* status_ = nullptr;
  QLineEdit* query_ = nullptr;
  QSpinBox* top_ = nullptr;
  QLineEdit* new_label_ = nullptr;
  QPushButton* add_label_ = nullptr;
  QHBoxLayout* tables_layout_ = nullptr;
  std::vector<std::pair<QString, QTableView*>> tables_;
  std::vector<SearchResultsModel*> results_;  ///< per mode, the model of tables_[m]
  std::vector<QLabel*> latency_labels_;
  std::vector<std::int64_t> added_ranks_;  ///< per mode: the newest added label's rank in the last search
  std::vector<std::map<std::int64_t, std::int64_t>> truth_ranks_;  ///< per mode: true label → rank, last search
  std::vector<int> top_rows_;              ///< per mode: rows of the top-k (true labels below it follow)
  std::vector<std::int64_t> added_labels_;  ///< ids of labels added in this session, in order
  QProgressBar* loading_ = nullptr;
  QString db_;                                   ///< the store of the run shown
  QString chosen_text_;  ///< " (chosen while training: key = value, ...)" of the run shown, or ""
  std::unique_ptr<Predictor> other_predictor_;   ///< the compared run
  std::int64_t other_run_ = 0;
  QSpinBox* compare_ = nullptr;
  QWidget* other_box_ = nullptr;
  QLabel* other_title_ = nullptr;
  QTableView* other_table_ = nullptr;
  SearchResultsModel* other_results_ = nullptr;
  QtProgress* load_progress_ = nullptr;
  int highlighted_ = 0;
};

}  // namespace xmc::gui
