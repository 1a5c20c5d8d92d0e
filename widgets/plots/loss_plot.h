#pragma once
#include <array>
// LossPlot: the live training-loss chart. Raw loss (thin, light) and its exponential moving average
// (bold) against the optimiser step, the learning-rate schedule on the right axis, and — once the run
// reports it — throughput (queries/s) in a strip below that shares the step axis, or instead the training
// process's memory (GB) and CPU cores busy (the "system/..." samples). A later stage that reports its loss
// under a series of its own ("<name>_loss": NGAME's classifier stage, "m4_loss") gets its own pair of curves and
// its own throughput, named from the series ("M4 loss"). The strip is left out while the plot is too low to show both
// readably.
//
// Feed it either live (append(), up to ~50 calls/s: data is added at once, redraws are coalesced to at
// most 10/s) or from the run store (set_series()). The view follows the data: x spans all steps, the loss
// axis spans the typical range (1st–98th percentile, so the huge first-step losses do not flatten the
// rest). Dragging or wheel-zooming freezes the view; a double click resumes following. Right click
// exports (PNG/SVG/PDF) and chooses what the strip shows.
#include <QTimer>
#include <limits>
#include <string>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/records/run_records.h"
#include "widgets/plots/plot_export.h"

class QSlider;

namespace xmc::gui {

class LossPlot : public QCustomPlot {
  Q_OBJECT
 public:
  explicit LossPlot(QWidget* parent = nullptr);

  /// One optimiser step of a live run. A non-finite loss leaves a gap in the raw curve (the average
  /// skips it); lr and samples_per_s that are not finite or ≤ 0 are treated as "not reported".
  /// `loss_series`: the series the step's stage reports its loss under (TrainEvent::loss_series): "loss", or a later
  /// stage's "<name>_loss", drawn as curves of their own.
  /// `epoch` (fractional) and `wall_time` (seconds since the Unix epoch; NaN = now) place it on the other x axes.
  void append(std::int64_t step, double loss, double lr, double samples_per_s, const std::string& loss_series = "loss",
              double epoch = std::numeric_limits<double>::quiet_NaN(), double wall_time = std::numeric_limits<double>::quiet_NaN());
  /// One stored scalar: keys "loss", a later stage's "<name>_loss", "lr", "samples_per_s", "system/memory_gb" and
  /// "system/cpu_cores" are drawn, others ignored.
  /// Use it to follow a run through Session::scalars(run, "", after_step).
  void append_point(const xmc::ScalarPoint& point);
  /// Replaces everything with the run store's scalars (ordered by step) and redraws at once.
  void set_series(const std::vector<xmc::ScalarPoint>& points);
  /// Removes all data and redraws.
  void clear();

  /// What the x axis counts: optimiser steps, epochs (fractional), or minutes of wall time since the
  /// first point (pauses show as gaps). Also in the right-click menu.
  enum class XAxis { Step, Epoch, WallTime };
  void set_x_axis(XAxis axis);
  XAxis x_axis() const { return x_axis_; }

  /// Number of loss points drawn (training loss and M4 classifier loss, non-finite ones included).
  std::size_t point_count() const;
  /// What the loss axis leaves out above its top ("▲ 3 losses above the axis, up to 12.5 …"); "" when nothing.
  QString clipped_note() const;


  /// EMA weight of the smoothed curves, in [0, 1); negative (the default) = automatic: the averaging
  /// window grows with the run (≈ 1/25 of its points, in powers of two) up to 50 points (weight 0.98), so
  /// a short run is not drawn with a curve lagging far behind its data. The first points are
  /// bias-corrected (as TensorBoard does), so the average does not start at 0.
  void set_smoothing(double weight);
  /// The smoothing slider of the right-click menu (0–99: EMA weight × 100), for tests.
  QSlider* smoothing_slider() const { return smoothing_slider_; }
  /// A logarithmic loss axis (losses that fall over orders of magnitude); also in the right-click menu.
  void set_log_scale(bool on);
  bool log_scale() const { return log_scale_; }
  /// The EMA weight in use.
  double smoothing() const { return ema_weight_; }

  /// What the strip under the loss shows (once it has data): throughput (the default), the training process's
  /// memory and CPU use, or nothing. Also in the right-click menu.
  enum class Strip { Throughput, SystemUse, None };
  void set_strip(Strip strip);
  Strip strip() const { return strip_; }
  /// Throughput in the strip, or no strip.
  void set_throughput_visible(bool visible) { set_strip(visible ? Strip::Throughput : Strip::None); }
  bool throughput_visible() const { return strip_ == Strip::Throughput; }
  /// Whether a strip is laid out now (chosen, with data, and the plot high enough).
  bool strip_shown() const { return strip_shown_; }
  /// The system-use strip's curves: resident memory (GB, left axis) and CPU cores busy (right axis).
  QCPGraph* memory_graph() const { return memory_; }
  QCPGraph* cpu_graph() const { return cpu_; }

  /// The curves, for tests and for callers that want to restyle them.
  QCPGraph* raw_loss_graph() const { return raw_; }
  QCPGraph* smoothed_loss_graph() const { return smoothed_; }
  QCPGraph* stage_raw_loss_graph() const { return stage_raw_; }
  QCPGraph* stage_smoothed_loss_graph() const { return stage_smoothed_; }
  QCPGraph* lr_graph() const { return lr_; }
  QCPGraph* throughput_graph() const { return throughput_; }
  /// The later stage's throughput (NGAME's M4 on a frozen encoder: often 100× M1's), a series of its own.
  QCPGraph* stage_throughput_graph() const { return stage_throughput_; }
  /// Whether the throughput axis is logarithmic (it is when the rates span more than 10×).
  bool throughput_log_scale() const;

  QSize minimumSizeHint() const override;
  QSize sizeHint() const override;

 private:
  // Bias-corrected exponential moving average.
  struct Ema {
    double value = 0;
    double weight_power = 1;  // weight^n
    double next(double x, double weight);
  };

  void add_loss(QCPGraph* raw, QCPGraph* smoothed, Ema& ema, double step, double loss);
  double wanted_weight() const;
  void resmooth();
  void schedule_refresh();
  void refresh();
  void arrange_layout();
  void update_legend();
  void rescale();

  double smoothing_ = -1;   // requested weight; < 0 = automatic
  bool log_scale_ = false;
  QSlider* smoothing_slider_ = nullptr;  // in the Smoothing menu
  XAxis x_axis_ = XAxis::Step;
  /// Every point as appended, so the curves can be redrawn against another x axis.
  struct Record {
    int series;  // 0 loss, 1 M4 loss, 2 lr, 3 throughput, 4 M4 throughput, 5 memory, 6 CPU cores
    double step, epoch, wall, value;
  };
  std::vector<Record> records_;
  double first_wall_ = std::numeric_limits<double>::quiet_NaN();
  double x_of(const Record& r) const;
  QString x_label() const;
  void draw_record(const Record& r);
  /// Wall-time axis: the x of each series' last point and the interval before it, so that a pause many times
  /// longer (an evaluation, a checkpoint) breaks the line instead of joining across it.
  std::array<double, 7> last_x_{}, last_interval_{};
  void reset_gaps();
  /// "N losses above the axis": the loss axis keeps the 1st–98th percentile and says what it leaves out.
  QCPItemText* clipped_note_ = nullptr;
  QAction* log_action_ = nullptr;
  double ema_weight_ = 0.5;  // weight the smoothed curves were computed with
  Strip strip_ = Strip::Throughput;
  bool strip_shown_ = false;       // whether the chosen strip is in the layout now
  /// The strip's rect for a choice (throughput_rect_ or system_rect_; null for none).
  QCPAxisRect* strip_rect(Strip strip) const;
  bool follow_data_ = true;        // false once the user drags or zooms
  bool rescaling_ = false;         // rescale() is setting the ranges
  Ema ema_, stage_ema_;
  QCPTextElement* title_ = nullptr;
  QCPAxisRect* main_rect_ = nullptr;  // loss and learning rate (QCustomPlot::axisRect() only finds laid-out rects)
  QCPAxisRect* throughput_rect_ = nullptr;
  QCPAxisRect* system_rect_ = nullptr;
  QCPLayoutGrid* legend_row_ = nullptr;
  QCPGraph* raw_ = nullptr;
  QCPGraph* smoothed_ = nullptr;
  QCPGraph* stage_raw_ = nullptr;     // a later stage's own loss series (its name: stage_label_)
  QCPGraph* stage_smoothed_ = nullptr;
  QCPGraph* lr_ = nullptr;
  QCPGraph* throughput_ = nullptr;
  QCPGraph* stage_throughput_ = nullptr;
  QCPGraph* memory_ = nullptr;
  QCPGraph* cpu_ = nullptr;
  std::int64_t stage_step_ = -1;  // step of the last stored later-stage loss: its samples_per_s is that stage's
  QString stage_label_ = tr("later stage's loss");
  /// Whether a scalar key is a loss series: "loss" or a stage's "<name>_loss".
  static bool is_loss_series(const std::string& key);
  /// Names the later stage's curves after its series `key`.
  void name_stage_series(const std::string& key);
  std::array<QAction*, 3> strip_actions_{};  // by Strip
  QTimer refresh_timer_;
  std::vector<double> scratch_;  // reused by rescale()
};

}  // namespace xmc::gui
