#pragma once
// The Projector tab: a trained run's label vectors or test-query vectors in 2-D (PCA, or t-SNE of a
// sample), computed in the engine on a worker thread. Labels are coloured by the decile of their training
// frequency (head blue ... tail red); queries grey, with the positives of a chosen label in red. Hovering a
// point shows its text; the search box rings the points whose text contains it. A t-SNE map is drawn as it
// converges (every 25 of its iterations), as TensorBoard's projector does; a cancel brings back the last finished one.
#include <QFuture>
#include <QWidget>
#include <memory>

#include "engine/session/projection.h"

class QComboBox;
class QCustomPlot;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QSpinBox;

namespace xmc::gui {

class QtProgress;

class ProjectorView : public QWidget {
  Q_OBJECT
 public:
  explicit ProjectorView(QWidget* parent = nullptr);
  ~ProjectorView() override;  ///< waits for a computation in flight

  void set_run(const QString& db, std::int64_t run);
  /// Computes the projection chosen in the controls ("labels"/"queries", "pca"/"tsne") in the background;
  /// computed() follows, or the error shows in the header.
  void compute(const QString& what = {}, const QString& method = {});
  const Projection* projection() const { return projection_.get(); }
  /// Points ringed by the search box's text (case-insensitive substring of their text).
  int highlighted_count() const { return highlighted_; }
  void set_search_text(const QString& text);
  /// Queries: the label (by its text) whose positives are drawn in red; returns how many points are.
  int set_positives_of(const QString& label_text);
  /// Stops a computation in flight (the Cancel button): the previous projection stays, the header says so.
  void cancel();
  bool computing() const;
  /// The points box's limit: 5000 for t-SNE (exact t-SNE is n² in time and memory), 20000 for PCA.
  int sample_limit() const;

 Q_SIGNALS:
  void computed();
  /// A t-SNE map in the making was drawn.
  void converging();

 private:
  void draw();

  QString db_;
  std::int64_t run_ = 0;
  std::unique_ptr<Projection> projection_;
  /// While a t-SNE map converges in the plot: the finished projection it replaced, brought back on a cancel or an error.
  std::unique_ptr<Projection> finished_;
  bool converging_ = false;      ///< the plot shows a map in the making
  std::uint64_t computation_ = 0;  ///< counts compute() calls: maps in the making of an earlier one are dropped
  bool computing_ = false;
  /// Draws a map in the making of computation `computation` (from the worker, queued to this thread).
  void show_converging(std::uint64_t computation, std::shared_ptr<const Projection> so_far);
  QFuture<void> job_;
  int highlighted_ = 0;
  QLabel* header_ = nullptr;
  QComboBox* what_ = nullptr;
  QComboBox* method_ = nullptr;
  QSpinBox* sample_ = nullptr;
  QLineEdit* label_ = nullptr;   ///< queries: the label whose positives are red
  QLineEdit* search_ = nullptr;
  QPushButton* compute_ = nullptr;
  QPushButton* cancel_ = nullptr;
  QProgressBar* bar_ = nullptr;   ///< while computing: the task, done of total and its ETA
  QtProgress* progress_ = nullptr;
  QCustomPlot* plot_ = nullptr;
};

}  // namespace xmc::gui
