#pragma once
// DecilePlot: decile-wise P@5 as bars. Labels are sorted by train frequency and cut into 10 bins holding
// equal shares of the train positives (bin 1 = head, bin 10 = tail); each bar is the bin's contribution to
// P@5, so the bars add up to P@5 (the subtitle states the sum). Other runs (up to kMaxRuns in all) can be
// drawn beside the first run's bars in every bin. Values are written above the bars when they fit, and
// shown on hover always.
#include <QColor>
#include <QString>
#include <array>
#include <optional>
#include <vector>

#include "widgets/plots/plot_export.h"

namespace xmc::gui {

class DecilePlot : public QCustomPlot {
  Q_OBJECT
 public:
  explicit DecilePlot(QWidget* parent = nullptr);

  /// The run's ten bars, as fractions (0.052 is drawn as 5.2 %); bars[0] = head bin.
  void set_bars(const QString& run_label, const std::array<double, 10>& bars);
  /// Another run's bars, drawn beside the first run's in each bin; replaces any other runs shown.
  void set_overlay(const QString& run_label, const std::array<double, 10>& bars);
  /// Adds one more run beside those shown (ignored past kMaxRuns runs in all; returns false then).
  bool add_overlay(const QString& run_label, const std::array<double, 10>& bars);
  /// Colours run `run`'s bars (all_bars() order), e.g. to match a run's colour elsewhere in a view.
  void set_run_colour(std::size_t run, const QColor& colour);
  /// Removes the other runs, keeping the first run's bars.
  void clear_overlay();
  /// Removes the first run's bars, keeping the other runs'.
  void clear_bars();
  /// Removes all bars.
  void clear();

  /// A stored decile table as the ten bars; nothing unless it has exactly ten bins.
  static std::optional<std::array<double, 10>> bars_of(const std::vector<double>& table);

  /// The metric the bars decompose ("P@5" by default); updates the title and the axis label.
  void set_metric(const QString& metric);

  static constexpr int kMaxRuns = 4;

  /// The run's bars (values in percent), the first other run's (nullptr when none), and every run's. For tests.
  QCPBars* bars() const { return bars_; }
  QCPBars* overlay_bars() const { return overlays_.empty() ? nullptr : overlays_.front(); }
  std::vector<QCPBars*> all_bars() const;

  QSize minimumSizeHint() const override;
  QSize sizeHint() const override;

 private:
  void refresh();
  double bar_width() const;                ///< in bins, for the number of runs shown
  double offset_of(std::size_t run) const;  ///< bar centre of run `run` (all_bars() order) from the bin centre
  void update_labels();
  void update_texts();
  void show_tooltip(QMouseEvent* event);

  QString metric_ = QStringLiteral("P@5");
  QCPTextElement* title_ = nullptr;
  QCPTextElement* subtitle_ = nullptr;
  QCPBarsGroup* group_ = nullptr;
  QCPBars* bars_ = nullptr;
  std::vector<QCPBars*> overlays_;                   ///< the other runs, in order
  std::vector<std::vector<QCPItemText*>> labels_;    ///< value labels per run (all_bars() order)
};

}  // namespace xmc::gui
