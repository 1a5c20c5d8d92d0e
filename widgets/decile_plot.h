#pragma once
// DecilePlot: decile-wise P@5 as bars. Labels are sorted by train frequency and cut into 10 bins holding
// equal shares of the train positives (bin 1 = head, bin 10 = tail); each bar is the bin's contribution to
// P@5, so the bars add up to P@5 (the subtitle states the sum). A second run can be overlaid side by side.
// Values are written above the bars when they fit, and shown on hover always.
#include <QString>
#include <array>
#include <vector>

#include "widgets/plot_export.h"

namespace xmc::gui {

class DecilePlot : public QCustomPlot {
  Q_OBJECT
 public:
  explicit DecilePlot(QWidget* parent = nullptr);

  /// The run's ten bars, as fractions (0.052 is drawn as 5.2 %); bars[0] = head bin.
  void set_bars(const QString& run_label, const std::array<double, 10>& bars);
  /// Another run's bars, drawn beside the first run's in each bin.
  void set_overlay(const QString& run_label, const std::array<double, 10>& bars);
  /// Removes the overlaid run.
  void clear_overlay();
  /// Removes all bars.
  void clear();

  /// The metric the bars decompose ("P@5" by default); updates the title and the axis label.
  void set_metric(const QString& metric);

  /// The run's bars (values in percent) and the overlaid run's (nullptr when none). For tests.
  QCPBars* bars() const { return bars_; }
  QCPBars* overlay_bars() const { return overlay_; }

  QSize minimumSizeHint() const override;
  QSize sizeHint() const override;

 private:
  void refresh();
  void update_labels();
  void update_texts();
  void show_tooltip(QMouseEvent* event);

  QString metric_ = QStringLiteral("P@5");
  QCPTextElement* title_ = nullptr;
  QCPTextElement* subtitle_ = nullptr;
  QCPBarsGroup* group_ = nullptr;
  QCPBars* bars_ = nullptr;
  QCPBars* overlay_ = nullptr;
  std::vector<QCPItemText*> labels_, overlay_labels_;
};

}  // namespace xmc::gui
