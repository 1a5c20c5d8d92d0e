#pragma once
// The Labels tab: how well a trained run finds each label. The run's test queries are ranked (in the
// background, on request: it takes seconds on large sets) and every label gets its recall@k and
// precision@k; a scatter puts recall against the label's training frequency (log), so tail labels the
// model never finds stand out, and a table lists the worst of the tail with a test query that misses each.
#include <QFuture>
#include <QWidget>
#include <memory>

#include "engine/session/label_quality.h"

class QComboBox;
class QCustomPlot;
class QLabel;
class QPushButton;
class QSpinBox;
class QTableWidget;

namespace xmc::gui {

class LabelQualityView : public QWidget {
  Q_OBJECT
 public:
  explicit LabelQualityView(QWidget* parent = nullptr);
  ~LabelQualityView() override;  ///< waits for a computation in flight

  /// The run whose labels are shown next (computed when asked: compute() or the button).
  void set_run(const QString& db, std::int64_t run);
  /// Ranks the test set in the background; computed() follows (or the error shows in the header).
  void compute();

  const LabelQualityReport* report() const { return report_.get(); }
  /// Rows of the worst-tail-labels table.
  int tail_rows() const;
  /// The inference modes offered (known once the run's test set was ranked) and the one shown.
  QStringList modes() const;
  QString mode() const;
  /// Width of the label column and of the whole table's viewport (the numbers must stay in view).
  int label_column_width() const;
  int table_width() const;
  /// What double-clicking tail row `row` does (the test is the signal it emits).
  void activate_tail_row(int row);

 Q_SIGNALS:
  void computed();
  /// A tail row was double-clicked: look its missed test query (or, when none missed it, the label's text) up
  /// in Search.
  void query_chosen(const QString& text);

 private:
  void show_report();

  QString db_;
  std::int64_t run_ = 0;
  std::unique_ptr<LabelQualityReport> report_;
  QFuture<void> job_;
  QLabel* header_ = nullptr;
  QSpinBox* k_ = nullptr;
  QComboBox* measure_ = nullptr;  ///< recall or precision in the scatter
  QComboBox* mode_ = nullptr;     ///< the inference mode ranked (filled once the run's modes are known)
  QPushButton* compute_ = nullptr;
  QCustomPlot* scatter_ = nullptr;
  QTableWidget* tail_ = nullptr;
};

}  // namespace xmc::gui
