#include "widgets/live/live_view.h"

#include <QComboBox>
#include <QDateTime>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QScrollArea>
#include <QVBoxLayout>

#include <algorithm>
#include <map>

#include "engine/config/component_info.h"
#include "engine/core/error.h"
#include "engine/records/chosen_settings.h"
#include "engine/records/evaluation_modes.h"
#include "engine/records/training_milestones.h"
#include "engine/session/run_config_view.h"
#include "engine/session/session.h"
#include "widgets/live/training_progress.h"
#include "widgets/plots/decile_plot.h"
#include "widgets/plots/evaluation_view.h"
#include "widgets/plots/loss_plot.h"
#include "widgets/plots/metric_plot.h"
#include "widgets/plots/tsne_plot.h"

namespace xmc::gui {
namespace {

/// The metric plot's marks for a run's schedule changes (stage switch, clustering, shortlist refreshes).
std::vector<std::pair<double, QString>> milestone_marks(const TrainConfig& config) {
  std::vector<std::pair<double, QString>> marks;
  for (const TrainingMilestone& m : training_milestones(config)) marks.emplace_back(m.epoch, QString::fromStdString(m.label));
  return marks;
}

/// What the t-SNE panel says until a snapshot comes, or why none will.
QString tsne_note(const TrainConfig& config) {
  if (takes_tsne_snapshots(config)) return "no t-SNE snapshot yet: runs take one at evaluations (tsne.every)";
  if (config.tsne_every <= 0) return "this run takes no t-SNE snapshots (tsne.every = 0)";
  return QString::fromStdString(config.method) + " takes no t-SNE snapshots: it trains no encoder on query batches";
}

}  // namespace

LiveView::LiveView(const QString& db, QWidget* parent) : QWidget(parent), db_(db) {
  auto* layout = new QVBoxLayout(this);
  auto* header = new QHBoxLayout;
  label_ = new QLabel("No run yet: start one in the Launch tab, or open one in the Runs tab.");
  label_->setObjectName("run_label");
  label_->setWordWrap(true);
  progress_ = new TrainingProgress;
  header->addWidget(label_, 1);
  header->addWidget(progress_, 2);
  layout->addLayout(header);
  auto* grid = new QGridLayout;
  loss_plot_ = new LossPlot;
  evaluation_view_ = new EvaluationView;
  evaluation_view_->keep_choices_in(QStringLiteral("live/evaluation"));  // the metrics, modes and layout chosen last time
  metric_plot_ = evaluation_view_->chart();  // "live_metrics"
  decile_plot_ = new DecilePlot;
  decile_plot_->setObjectName("live_deciles");
  tsne_plot_ = new TsnePlot;
  grid->addWidget(loss_plot_, 0, 0);
  grid->addWidget(evaluation_view_, 0, 1);
  // The decile bars, optionally beside another run's (the live run keeps updating its own).
  auto* decile_box = new QWidget;
  auto* decile_layout = new QVBoxLayout(decile_box);
  decile_layout->setContentsMargins(0, 0, 0, 0);
  auto* overlay_row = new QHBoxLayout;
  decile_overlay_ = new QComboBox;
  decile_overlay_->setObjectName("decile_overlay");
  decile_overlay_->setToolTip("Draw another run's latest decile-wise P@5 bars beside this run's");
  decile_overlay_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  overlay_row->addWidget(new QLabel("Compare deciles with:"));
  overlay_row->addWidget(decile_overlay_);
  overlay_row->addStretch(1);
  decile_layout->addLayout(overlay_row);
  decile_layout->addWidget(decile_plot_, 1);
  grid->addWidget(decile_box, 1, 0);
  grid->addWidget(tsne_plot_, 1, 1);
  // Below this size the four plots' axes, ticks and legends overprint one another: the tab scrolls instead
  // of squashing them into strips (an 800 x 500 window).
  auto* plots = new QWidget;
  plots->setObjectName("live_plots");
  plots->setLayout(grid);
  plots->setMinimumSize(1000, 640);
  auto* scroll = new QScrollArea;
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  scroll->setWidget(plots);
  scroll->setObjectName("live_scroll");
  layout->addWidget(scroll, 1);
  refresh_decile_overlay_choices();
  connect(decile_overlay_, &QComboBox::activated, this, [this] { apply_decile_overlay(); });
}

void LiveView::set_store(const QString& db) { db_ = db; }

void LiveView::set_label(const QString& text) { label_->setText(text); }
QString LiveView::label() const { return label_->text(); }

void LiveView::clear(const QString& message) {
  shown_run_ = 0;
  loss_plot_->clear();
  points_.clear();
  evaluation_view_->clear();
  decile_plot_->clear();
  tsne_plot_->clear();
  label_->setText(message);
  refresh_decile_overlay_choices();
  apply_decile_overlay();
}

void LiveView::set_run_notes(const TrainConfig& config) {
  // A method that fits its stages (no gradient steps, one pass each) is followed stage by stage, not by epoch.
  const MethodInfo* method = find_method_info(config.method);
  run_method_ = config.method;
  progress_->set_unit(method != nullptr && !method->trains_encoder ? QStringLiteral("stage") : QStringLiteral("epoch"));
  schedule_marks_ = milestone_marks(config);
  show_marks();
  tsne_plot_->set_empty_note(tsne_note(config));
}

void LiveView::add_chosen_mark(double epoch, const std::string& key, double value) {
  // "unidec.concat_weight" -> "concat_weight = 0.7": the method's group is in the legend already. Another group's key
  // ("rag.lambda", which only mode rag ranks with) keeps its group.
  const bool methods_own = !run_method_.empty() && key.rfind(run_method_ + ".", 0) == 0;
  const std::string name = methods_own ? key.substr(run_method_.size() + 1) : key;
  chosen_marks_.emplace_back(epoch, QStringLiteral("%1 = %2").arg(QString::fromStdString(name)).arg(value, 0, 'g', 3));
  show_marks();
}

void LiveView::show_marks() {
  std::vector<std::pair<double, QString>> marks = schedule_marks_;
  marks.insert(marks.end(), chosen_marks_.begin(), chosen_marks_.end());
  evaluation_view_->set_milestones(marks);
}

void LiveView::begin_run(std::int64_t run, const TrainConfig& config, const QString& label) {
  shown_run_ = run;
  loss_plot_->clear();
  points_.clear();
  evaluation_view_->clear();
  decile_plot_->clear();
  tsne_plot_->clear();  // the last run's query and its negatives are not this run's
  chosen_marks_.clear();
  Q_EMIT evaluated(-1, 0, 0);
  set_run_notes(config);
  refresh_decile_overlay_choices();
  apply_decile_overlay();
  label_->setText(label);
  progress_->begin_run(static_cast<double>(total_epochs(config)));
}

void LiveView::on_event(const TrainEvent& e) {
  if (e.kind == TrainEvent::Kind::Step) progress_->on_epoch_position(e.epoch);
  // The plots follow the training run only while it is the run shown (another may have been opened).
  if (e.run_id != shown_run_) return;
  switch (e.kind) {
    case TrainEvent::Kind::Step:
      if (!e.loss_series.empty()) loss_plot_->append(e.step, e.loss, e.lr, e.samples_per_s, e.loss_series, e.epoch);  // a later stage's series: curves of its own
      break;
    case TrainEvent::Kind::Evaluation:
      for (const auto& [name, value] : e.metrics) points_.push_back({e.epoch, e.step, name, value});
      for (const auto& [name, value] : e.mode_metrics) points_.push_back({e.epoch, e.step, name, value});
      show_metrics();
      decile_plot_->set_bars(QString("run %1").arg(e.run_id), e.deciles);
      Q_EMIT evaluated(e.epoch, e.score_spread, e.score_mean);
      break;
    case TrainEvent::Kind::Snapshot:
    case TrainEvent::Kind::SnapshotForming:  // drawn as it converges, then as it settled
      tsne_plot_->set_snapshot(e.message);
      break;
    case TrainEvent::Kind::SettingChosen:
      add_chosen_mark(e.epoch, e.message, e.value);
      break;
    case TrainEvent::Kind::SystemUse:
      for (const auto& [key, value] : e.metrics)
        loss_plot_->append_point({e.step, e.epoch, key, value, static_cast<double>(QDateTime::currentMSecsSinceEpoch()) / 1000.0});
      break;
    default:
      break;
  }
}

void LiveView::show_metrics() {
  // One series per inference mode (NGAME: the embedding's curve runs through M1 and M4, the fused ranking's
  // starts at M4), never one line that joins two modes; the view draws the modes and metrics the user chose.
  evaluation_view_->set_modes(series_by_mode(points_));
}

double LiveView::show_stored_run(const Session& session, const RunInfo& info) {
  shown_run_ = info.id;
  label_->setText(QString("Run %1: %2 (%3)").arg(info.id).arg(QString::fromStdString(info.name)).arg(QString::fromStdString(to_string(info.status))));
  const double last_epoch = reload_stored_plots(session, info.id);
  try {
    const std::shared_ptr<const TrainConfig> config = stored_train_config(info.config_json);
    if (!config) throw Error("run " + std::to_string(info.id) + ": its config does not read");
    set_run_notes(*config);
  } catch (const std::exception&) {
    schedule_marks_.clear();  // a config this version cannot read: no marks rather than wrong ones
    show_marks();
  }
  refresh_decile_overlay_choices();
  apply_decile_overlay();
  return last_epoch;
}

double LiveView::reload_stored_plots(const Session& session, std::int64_t run) {
  const auto scalars = session.scalars(run);
  loss_plot_->set_series(scalars);
  double last_epoch = 0;
  double spread_epoch = -1, spread = 0, mean = 0;  // the last evaluation's score spread: a stored run warns too
  chosen_marks_.clear();
  const std::string chosen_prefix = kChosenSettingPrefix;
  std::map<std::string, const ScalarPoint*> chosen;  // the last of each key
  for (const auto& point : scalars) {
    last_epoch = std::max(last_epoch, point.epoch);
    if (point.key == "score_spread") spread_epoch = point.epoch, spread = point.value;
    if (point.key == "score_mean") mean = point.value;
    if (point.key.starts_with(chosen_prefix)) chosen[point.key.substr(chosen_prefix.size())] = &point;
  }
  // A value the run chose while training, marked where it was chosen (the last choice of each key counts).
  for (const auto& [key, point] : chosen) add_chosen_mark(point->epoch, key, point->value);
  show_marks();
  Q_EMIT evaluated(spread_epoch, spread, mean);
  points_ = session.evaluations(run);
  show_metrics();
  if (const auto bars = DecilePlot::bars_of(session.latest_decile_table(run, "P@5")))
    decile_plot_->set_bars(QString("run %1").arg(run), *bars);
  else
    decile_plot_->clear_bars();  // no evaluation yet: no other run's bars stay as this one's
  if (const auto snapshot = session.latest_tsne_snapshot(run))
    tsne_plot_->set_snapshot(snapshot->payload_json);
  else
    tsne_plot_->clear();
  return last_epoch;
}

void LiveView::refresh_decile_overlay_choices() {
  const std::int64_t chosen = decile_overlay_->currentData().toLongLong();
  decile_overlay_->clear();
  decile_overlay_->addItem("none", QVariant::fromValue<qlonglong>(0));
  try {
    Session session(db_.toStdString());
    const auto runs = session.list_runs();
    const auto shown = std::find_if(runs.begin(), runs.end(), [this](const RunInfo& r) { return r.id == shown_run_; });
    for (const RunInfo& run : runs) {
      if (run.id == shown_run_ || session.latest_decile_table(run.id, "P@5").size() != 10) continue;
      // Deciles are bins of this dataset's label frequencies: another dataset's bars hold other labels.
      if (shown != runs.end() && run.dataset_fingerprint != shown->dataset_fingerprint) continue;
      decile_overlay_->addItem(QString("run %1: %2").arg(run.id).arg(QString::fromStdString(run.name)), QVariant::fromValue<qlonglong>(run.id));
    }
  } catch (const std::exception& e) {
    Q_EMIT message("Cannot list runs for the decile comparison: " + QString::fromUtf8(e.what()));
  }
  const int index = decile_overlay_->findData(QVariant::fromValue<qlonglong>(chosen));
  decile_overlay_->setCurrentIndex(index >= 0 ? index : 0);
}

void LiveView::apply_decile_overlay() {
  const std::int64_t other = decile_overlay_->currentData().toLongLong();
  if (other <= 0) {
    decile_plot_->clear_overlay();
    return;
  }
  try {
    Session session(db_.toStdString());
    const auto bars = DecilePlot::bars_of(session.latest_decile_table(other, "P@5"));
    if (!bars) throw Error("run " + std::to_string(other) + " has no decile-wise P@5 table");
    decile_plot_->set_overlay(QString("run %1: %2").arg(other).arg(QString::fromStdString(session.get_run(other).name)), *bars);
  } catch (const std::exception& e) {
    decile_plot_->clear_overlay();
    Q_EMIT message(QString::fromUtf8(e.what()));
  }
}

}  // namespace xmc::gui
