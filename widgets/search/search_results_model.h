#pragma once
// SearchResultsModel: one inference mode's answer to a search, as a table for a QTableView.
//
// Columns: rank, score, label. The top-k rows come first, best first; a dataset query's true labels that
// missed the top-k follow under a separator row, at their ranks, in italics. Ground-truth rows are green,
// labels added in this session blue; every label cell's tooltip says what the row is and gives the whole
// text. The model holds plain values (no engine types beyond LabelScore / LabelRank) and is filled once
// per search with set_results(). With a dataset's image file lists, the label cell shows the label's first image.
#include <QAbstractTableModel>
#include <QString>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "engine/session/predictor.h"

namespace xmc::gui {

class SearchResultsModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { kRank, kScore, kLabel, kColumnCount };
  /// data(index, kLabelIdRole): the label id (qint64) of a result row; invalid on the separator.
  static constexpr int kLabelIdRole = Qt::UserRole + 1;

  /// What a row shows.
  enum class RowKind { Top, Separator, MissedTruth };
  struct Row {
    RowKind kind = RowKind::Top;
    std::int64_t rank = 0;
    float score = 0;
    std::int64_t label = -1;
    QString text;
    bool truth = false;  ///< a true label of the query
    bool added = false;  ///< a label added in this session
  };

  explicit SearchResultsModel(QObject* parent = nullptr);

  /// Replaces the rows: `top` as found (best first), then, when `missed_truth` is not empty, a separator and
  /// those true labels (id, rank) by rank with their texts from `label_texts`. `truth` and `added` mark rows.
  void set_results(const std::vector<LabelScore>& top, const std::vector<std::pair<std::int64_t, LabelRank>>& missed_truth,
                   const std::vector<std::string>& label_texts, const std::set<std::int64_t>& truth, const std::set<std::int64_t>& added);
  /// The same for a run whose label ids are another run's: true labels are recognised by their text.
  void set_results_by_text(const std::vector<LabelScore>& top, const std::set<std::string>& truth_texts);
  void clear();
  /// Each label's image files (by label id), for a thumbnail beside its text; null = none.
  void set_label_images(std::shared_ptr<const std::vector<std::vector<std::string>>> files);
  static constexpr int kThumbnailSide = 40;

  /// Rows of the top-k (the rows before the separator).
  int top_rows() const { return top_rows_; }
  /// The labels of the top-k rows, best first.
  QStringList top_texts() const;
  const Row& row(int r) const { return rows_[static_cast<std::size_t>(r)]; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

 private:
  std::vector<Row> rows_;
  int top_rows_ = 0;
  std::int64_t num_ranked_ = 0;
  std::shared_ptr<const std::vector<std::vector<std::string>>> label_images_;  ///< the labels a rank is out of (for the tooltips of missed true labels)
};

}  // namespace xmc::gui
