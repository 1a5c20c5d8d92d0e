#pragma once
// The Live tab: the run it shows (a run training in this window, one another process writes, or a stored one)
// as a header — its name and state, and the run/epoch/task progress bars — above four plots: the loss with its
// learning rate and throughput or system use, the evaluation metrics by epoch per inference mode, decile-wise
// P@5 (beside another run's, when chosen) and the t-SNE of the negatives a query met. It reads the store
// through a Session; the main window tells it which run to show and hands it the training events.
#include <QString>
#include <QWidget>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "engine/config/train_config.h"
#include "engine/records/run_records.h"
#include "engine/records/train_events.h"

class QComboBox;
class QLabel;

namespace xmc {
class Session;
}

namespace xmc::gui {

class DecilePlot;
class EvaluationView;
class LossPlot;
class MetricPlot;
class TrainingProgress;
class TsnePlot;

class LiveView : public QWidget {
  Q_OBJECT
 public:
  /// Shows the runs of the store at `db`.
  explicit LiveView(const QString& db, QWidget* parent = nullptr);

  /// Another store: nothing is shown until a run of it is.
  void set_store(const QString& db);
  /// Run `run` starts training with `config` here: every panel cleared, `label` in the header.
  void begin_run(std::int64_t run, const TrainConfig& config, const QString& label);
  /// Shows stored run `info` as the store has it so far (its curves, deciles, t-SNE, the marks of its config);
  /// returns the last epoch it recorded. The run bar is the caller's (it knows whether the run trains here).
  double show_stored_run(const Session& session, const RunInfo& info);
  /// The run's recorded curves again (a run another process writes), keeping the marks; the last epoch recorded.
  double reload_stored_plots(const Session& session, std::int64_t run);
  /// A training event: the plots follow it while it is of the run shown.
  void on_event(const TrainEvent& e);
  /// The run shown (0: none).
  std::int64_t shown_run() const { return shown_run_; }
  /// Nothing shown (a store just opened).
  void clear(const QString& message);

  void set_label(const QString& text);
  QString label() const;
  TrainingProgress* progress() const { return progress_; }
  LossPlot* loss_plot() const { return loss_plot_; }
  MetricPlot* metric_plot() const { return metric_plot_; }
  DecilePlot* decile_plot() const { return decile_plot_; }
  TsnePlot* tsne_plot() const { return tsne_plot_; }
  /// Lists the runs with a decile table (other than the one shown, of the same dataset) as decile comparisons.
  void refresh_decile_overlay_choices();

 Q_SIGNALS:
  /// An evaluation of the shown run (live, or the last one stored) said how spread its label scores are; epoch < 0:
  /// the run shown has none.
  void evaluated(double epoch, double score_spread, double score_mean);
  /// Something went wrong that the status bar should say (a store that cannot be read).
  void message(const QString& text);

 private:
  /// Draws the chosen run's decile bars beside the shown run's (or removes them for "none").
  void apply_decile_overlay();
  /// The marks and t-SNE note of a run with `config`.
  void set_run_notes(const TrainConfig& config);
  /// A value the run chose while training (UniDEC's concat weight, xrlinear's fusion weight), marked where it was chosen.
  void add_chosen_mark(double epoch, const std::string& key, double value);
  /// The schedule's marks and the chosen values' marks on the evaluation chart.
  void show_marks();
  /// Draws points_: the primary mode's metrics, the other inference modes' overlaid.
  void show_metrics();

  QString db_;
  std::int64_t shown_run_ = 0;
  std::vector<EvalPoint> points_;  ///< every evaluation of the shown run, all inference modes
  std::vector<std::pair<double, QString>> schedule_marks_;  ///< from the run's config (stages, clustering, refreshes)
  std::vector<std::pair<double, QString>> chosen_marks_;    ///< values the run chose while training
  std::string run_method_;                                  ///< the shown run's method (set_run_notes), whose keys' marks drop their group
  QLabel* label_ = nullptr;
  TrainingProgress* progress_ = nullptr;
  LossPlot* loss_plot_ = nullptr;
  EvaluationView* evaluation_view_ = nullptr;
  MetricPlot* metric_plot_ = nullptr;  ///< the evaluation view's one-chart layout (export)
  DecilePlot* decile_plot_ = nullptr;
  TsnePlot* tsne_plot_ = nullptr;
  QComboBox* decile_overlay_ = nullptr;
};

}  // namespace xmc::gui
