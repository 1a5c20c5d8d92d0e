// Plots as a user sees them: curves filled by the setter APIs, values in percent, groups and legends,
// export files a paper pipeline can read, and screenshots (XMC_SCREENSHOT_DIR, default a temp folder)
// to look at.
#include <QFile>
#include <QLabel>
#include <QPainter>
#include <QPixmap>
#include <QSvgRenderer>
#include <QToolTip>
#include <QTemporaryDir>
#include <QSettings>
#include <QSlider>
#include <QStandardPaths>
#include <QtTest>
#include <array>
#include <map>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include <QScrollArea>
#include <QScrollBar>

#include "tests/support/evaluation_events.h"
#include "widgets/live/live_view.h"
#include "widgets/plots/decile_plot.h"
#include "widgets/plots/evaluation_view.h"
#include "widgets/plots/loss_plot.h"
#include "widgets/plots/metric_plot.h"
#include "widgets/plots/plot_export.h"
#include "widgets/plots/tsne_plot.h"

using namespace xmc::gui;

namespace {

// Sum of |value change| between neighbouring points with key > after.
double total_variation(const QCPGraph* g, double after = -1e300) {
  double tv = 0;
  for (auto it = g->data()->constBegin(); it != g->data()->constEnd(); ++it)
    if (it != g->data()->constBegin() && (it - 1)->key > after) tv += std::abs(it->value - (it - 1)->value);
  return tv;
}

QByteArray read_file(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

// A noisy, decaying loss with a huge first step, a warm-up/decay lr and jittery throughput.
void fill_training(LossPlot& plot, int steps, std::uint32_t seed = 7) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> noise(0, 0.25);
  for (int s = 1; s <= steps; ++s) {
    const double loss = s == 1 ? 60.0 : 0.6 + 2.5 * std::exp(-s / 60.0) + noise(rng) * (0.3 + std::exp(-s / 80.0));
    const double lr = 1e-4 * std::min(1.0, s / 30.0) * (s > 30 ? 1.0 - 0.8 * (s - 30) / steps : 1.0);
    const double qps = 1800 + 150 * noise(rng);
    plot.append(s, loss, lr, qps);
  }
}

// A t-SNE snapshot with all six groups around a query at the origin.
std::string six_group_snapshot() {
  std::mt19937 rng(3);
  std::normal_distribution<double> n(0, 1);
  std::string points = R"({"x": 0.0, "y": 0.0, "group": "query", "label": -1, "text": "wireless optical mouse with usb receiver"})";
  auto add = [&](const char* group, int count, double cx, double cy, double spread, const char* what) {
    for (int i = 0; i < count; ++i) {
      const double x = cx + spread * n(rng), y = cy + spread * n(rng);
      points += ", {\"x\": " + std::to_string(x) + ", \"y\": " + std::to_string(y) + ", \"group\": \"" + group +
                "\", \"label\": " + std::to_string(1000 + i) + ", \"text\": \"" + what + " " + std::to_string(i) + "\"}";
    }
  };
  add("positive", 4, 1.5, 1.0, 0.6, "computer mice");
  add("in_batch", 20, -6, 4, 4.0, "in-batch label");
  add("random", 60, 0, 0, 9.0, "random label");
  add("ann_hard", 6, 2.5, -1.5, 1.0, "keyboards");
  add("missed_hard", 5, -2.0, 2.0, 1.2, "trackballs");
  return R"({"query": 123, "query_text": "Logitech M185 wireless optical mouse, compact, 1-year battery life, with nano USB receiver for laptops and desktops", "epoch": 3.0, "step": 456, "points": [)" +
         points + "]}";
}

std::vector<xmc::EvalPoint> evaluations(double scale) {
  std::vector<xmc::EvalPoint> out;
  const std::vector<std::pair<std::string, double>> final_values = {
      {"P@1", 0.46}, {"P@3", 0.31}, {"P@5", 0.24}, {"nDCG@3", 0.44}, {"nDCG@5", 0.46},
      {"PSP@1", 0.36}, {"PSP@3", 0.38}, {"PSP@5", 0.41}, {"R@10", 0.52}, {"PSnDCG@5", 0.40}};
  for (int epoch = 1; epoch <= 10; ++epoch)
    for (const auto& [metric, v] : final_values)
      out.push_back({static_cast<double>(epoch), epoch * 100, metric, scale * v * (1 - 0.5 * std::exp(-epoch / 2.5))});
  return out;
}

}  // namespace

class PlotsTest : public QObject {
  Q_OBJECT

 private:
  QTemporaryDir temp_;
  QString shots_;

  void screenshot(QCustomPlot& plot, const QString& name, QSize size = {900, 500}) {
    plot.resize(size);
    plot.replot();
    const QString path = QDir(shots_).filePath(name + QStringLiteral(".png"));
    QVERIFY2(plot.grab().save(path), qPrintable(path));
  }

 private Q_SLOTS:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);  // the views' kept choices go to a test folder, not the user's
    QSettings().clear();                       // and start from none
    QVERIFY(temp_.isValid());
    shots_ = qEnvironmentVariable("XMC_SCREENSHOT_DIR");
    if (shots_.isEmpty()) shots_ = temp_.filePath(QStringLiteral("screenshots"));
    QVERIFY(QDir().mkpath(shots_));
  }

  void loss_plot_fills_raw_and_smoothed_curves() {
    LossPlot plot;
    fill_training(plot, 100);
    QCOMPARE(plot.point_count(), std::size_t{100});
    QCOMPARE(plot.raw_loss_graph()->dataCount(), 100);
    QCOMPARE(plot.smoothed_loss_graph()->dataCount(), 100);
    QCOMPARE(plot.lr_graph()->dataCount(), 100);
    QCOMPARE(plot.throughput_graph()->dataCount(), 100);
    // Redraws are coalesced (≤ 10/s); once one ran, the view spans the steps and the huge first step
    // (60) does not set the loss scale.
    QTRY_COMPARE(plot.xAxis->range().lower, 1.0);
    QVERIFY(plot.xAxis->range().upper >= 100);
    QVERIFY(plot.yAxis->range().upper < 10);
    QVERIFY(plot.yAxis->range().upper > 2);
    QVERIFY(plot.yAxis->range().lower >= 0);
    // The smoothed curve (re-smoothed for the run's length) is visibly smoother than the raw one.
    QCOMPARE(plot.smoothed_loss_graph()->dataCount(), 100);
    QVERIFY(plot.smoothing() > 0.5 && plot.smoothing() < 0.98);
    QVERIFY(total_variation(plot.smoothed_loss_graph()) < total_variation(plot.raw_loss_graph()));
    QVERIFY(total_variation(plot.smoothed_loss_graph(), 10) < 0.5 * total_variation(plot.raw_loss_graph(), 10));
    QVERIFY(plot.legend->visible());
    QVERIFY(plot.legend->itemCount() >= 4);  // loss, smoothed, lr, throughput
    screenshot(plot, QStringLiteral("loss"));
    screenshot(plot, QStringLiteral("loss_small"), static_cast<QWidget&>(plot).minimumSizeHint());

    // A zoom by the user holds while the run goes on; a double click follows the run again.
    plot.xAxis->setRange(10, 20);
    plot.append(101, 1.0, 1e-5, 1800);
    QTest::qWait(250);
    QCOMPARE(plot.xAxis->range().lower, 10.0);
    QCOMPARE(plot.xAxis->range().upper, 20.0);
    const QPointF at(300, 200);
    QMouseEvent double_click(QEvent::MouseButtonDblClick, at, plot.mapToGlobal(at), Qt::LeftButton, Qt::LeftButton,
                             Qt::NoModifier);
    QCoreApplication::sendEvent(&plot, &double_click);
    QTRY_COMPARE(plot.xAxis->range().lower, 1.0);
    QVERIFY(plot.xAxis->range().upper >= 101);
  }

  void loss_plot_reads_store_series() {
    LossPlot plot;
    std::vector<xmc::ScalarPoint> points;
    for (int s = 1; s <= 50; ++s) {
      points.push_back({s, s / 10.0, "loss", 2.0 - s / 50.0, 0});
      points.push_back({s, s / 10.0, "lr", 1e-3, 0});
      points.push_back({s, s / 10.0, "samples_per_s", 900, 0});
    }
    for (int s = 51; s <= 80; ++s) {  // M4 on a frozen encoder: ~100× the queries per second
      points.push_back({s, s / 10.0, "m4_loss", 0.8 - s / 400.0, 0});
      points.push_back({s, s / 10.0, "lr", 1e-3, 0});
      points.push_back({s, s / 10.0, "samples_per_s", 95000, 0});
    }
    points.push_back({80, 8.0, "epoch_queries_per_s", 1000, 0});  // ignored
    for (auto& p : points) p.wall_time = 1.7e9 + 3.0 * static_cast<double>(p.step) + (p.step > 50 ? 600 : 0);  // a 10-minute pause
    plot.set_series(points);
    QCOMPARE(plot.point_count(), std::size_t{80});
    // M1's rate is its own series and the axis is logarithmic, so 900 q/s does not read as zero.
    QCOMPARE(plot.throughput_graph()->dataCount(), 50);
    QCOMPARE(plot.stage_throughput_graph()->dataCount(), 30);
    QVERIFY(plot.throughput_log_scale());
    QCPAxis* rate_axis = plot.stage_throughput_graph()->valueAxis();
    QVERIFY(rate_axis->range().contains(900) && rate_axis->range().contains(95000));
    QCOMPARE(plot.raw_loss_graph()->dataCount(), 50);
    QCOMPARE(plot.stage_raw_loss_graph()->dataCount(), 30);
    QCOMPARE(plot.stage_smoothed_loss_graph()->dataCount(), 30);
    // The stage's curves are named after the series it reported its loss under.
    QCOMPARE(plot.stage_raw_loss_graph()->name(), QStringLiteral("M4 loss"));
    QVERIFY(plot.stage_smoothed_loss_graph()->name().startsWith("M4 loss, EMA"));
    QCOMPARE(plot.stage_throughput_graph()->name(), QStringLiteral("M4 throughput"));
    QCOMPARE(plot.xAxis->range().lower, 1.0);
    screenshot(plot, QStringLiteral("loss_m4"));
    // The same curves against epochs, then against wall time (minutes since the first point; the pause shows).
    plot.set_x_axis(LossPlot::XAxis::Epoch);
    QCOMPARE(plot.raw_loss_graph()->data()->at(9)->key, 1.0);       // step 10 is epoch 1.0
    QCOMPARE(plot.stage_raw_loss_graph()->data()->at(0)->key, 5.1);    // step 51
    plot.set_x_axis(LossPlot::XAxis::WallTime);
    QCOMPARE(plot.raw_loss_graph()->data()->at(0)->key, 0.0);
    QCOMPARE(plot.raw_loss_graph()->data()->at(9)->key, 27.0 / 60.0);  // 9 steps of 3 s
    QCOMPARE(plot.stage_raw_loss_graph()->data()->at(0)->key, (150.0 + 600.0) / 60.0);
    QCOMPARE(plot.raw_loss_graph()->dataCount(), 50);
    QCOMPARE(plot.stage_throughput_graph()->keyAxis()->label(), QStringLiteral("wall time (min)"));  // named below the strip
    screenshot(plot, QStringLiteral("loss_wall_time"));
    plot.set_x_axis(LossPlot::XAxis::Step);
    QCOMPARE(plot.raw_loss_graph()->data()->at(9)->key, 10.0);
    plot.set_throughput_visible(false);
    screenshot(plot, QStringLiteral("loss_no_throughput"));
    plot.clear();
    QCOMPARE(plot.point_count(), std::size_t{0});
    QCOMPARE(plot.stage_throughput_graph()->dataCount(), 0);
    // Live steps of another stage's series ("classifier_loss") go to the stage's curves, named after it.
    plot.append(1, 0.5, 1e-3, 100, "classifier_loss", 0.1);
    QCOMPARE(plot.stage_raw_loss_graph()->dataCount(), 1);
    QCOMPARE(plot.raw_loss_graph()->dataCount(), 0);
    QCOMPARE(plot.stage_raw_loss_graph()->name(), QStringLiteral("Classifier loss"));
    plot.clear();
    screenshot(plot, QStringLiteral("loss_empty"));
    // Right-click choices: a fixed smoothing (0 = the raw curve) and a log loss axis from the smallest loss.
    fill_training(plot, 60);
    plot.set_smoothing(0);
    QTRY_COMPARE(plot.smoothed_loss_graph()->data()->at(5)->value, plot.raw_loss_graph()->data()->at(5)->value);
    plot.set_log_scale(true);
    QCOMPARE(plot.yAxis->scaleType(), QCPAxis::stLogarithmic);
    QVERIFY(plot.yAxis->range().lower > 0);
    screenshot(plot, QStringLiteral("loss_log_raw"));
    plot.set_log_scale(false);
    plot.smoothing_slider()->setValue(90);  // the menu's slider: EMA 0.9
    QTRY_VERIFY(plot.smoothed_loss_graph()->name().contains(QStringLiteral("EMA 0.9")));
    plot.set_smoothing(-1);
    QCOMPARE(plot.yAxis->scaleType(), QCPAxis::stLinear);
    plot.clear();
    fill_training(plot, 60);  // rates within 10× of each other: a linear axis from 0
    plot.set_throughput_visible(true);
    plot.replot();
    QVERIFY(!plot.throughput_log_scale());
  }

  void loss_plot_leaves_out_the_rate_of_a_method_without_one() {
    // xrlinear fits its rankers without gradients: its parts record no learning rate (runs stored before recorded 0).
    // The plot then has no rate axis and no rate in its legend (it showed an axis from 0 to 1, then an empty named
    // one); a run with a rate keeps both. -1: no rate recorded.
    auto legend_has = [](LossPlot& plot, const QString& name) {
      for (int i = 0; i < plot.legend->itemCount(); ++i)
        if (auto* item = qobject_cast<QCPPlottableLegendItem*>(plot.legend->item(i)); item && item->plottable()->name() == name) return true;
      return false;
    };
    for (const double rate : {-1.0, 0.0, 0.001}) {
      std::vector<xmc::ScalarPoint> points;
      for (int step = 1; step <= 20; ++step) {
        points.push_back({step, step / 10.0, "loss", 1.0 / step, 1000.0 + step});
        if (rate >= 0) points.push_back({step, step / 10.0, "lr", rate, 1000.0 + step});
      }
      LossPlot plot;
      plot.resize(720, 440);
      plot.set_series(points);
      plot.replot();
      QCOMPARE(plot.yAxis2->visible(), rate > 0);
      QCOMPARE(legend_has(plot, QStringLiteral("learning rate")), rate > 0);
      QVERIFY(legend_has(plot, QStringLiteral("loss")));
    }
  }

  void loss_plot_strip_shows_the_training_process_memory_and_cpu() {
    // 40 steps; the process sampled every 10 steps: memory 1.0, 1.5, 2.0, 2.5 GB, 1.8 CPU cores busy.
    std::vector<xmc::ScalarPoint> points;
    for (int step = 1; step <= 40; ++step) {
      points.push_back({step, step / 10.0, "loss", 2.0 - step / 40.0, 1000.0 + step});
      points.push_back({step, step / 10.0, "samples_per_s", 500.0, 1000.0 + step});
      points.push_back({step, step / 10.0, "lr", 0.001 * (1.0 - step / 40.0), 1000.0 + step});
      if (step % 10 == 0) {
        points.push_back({step, step / 10.0, "system/cpu_cores", 1.8, 1000.0 + step});
        points.push_back({step, step / 10.0, "system/memory_gb", 0.5 + step / 20.0, 1000.0 + step});
        points.push_back({step, step / 10.0, "system/peak_memory_gb", 3.0, 1000.0 + step});  // a number, not a curve
      }
    }
    LossPlot plot;
    plot.resize(720, 440);
    plot.set_series(points);
    plot.replot();
    QCOMPARE(plot.memory_graph()->dataCount(), 4);
    QCOMPARE(plot.cpu_graph()->dataCount(), 4);
    QCOMPARE(plot.memory_graph()->data()->at(3)->value, 2.5);
    QCOMPARE(plot.strip(), LossPlot::Strip::Throughput);  // throughput by default
    auto legend_names = [&] {
      QStringList names;
      for (int i = 0; i < plot.legend->itemCount(); ++i)
        if (auto* item = qobject_cast<QCPPlottableLegendItem*>(plot.legend->item(i))) names << item->plottable()->name();
      return names;
    };
    QVERIFY(legend_names().contains(QStringLiteral("throughput")));
    QVERIFY(!legend_names().contains(QStringLiteral("memory (GB)")));
    plot.set_strip(LossPlot::Strip::SystemUse);
    plot.replot();
    QVERIFY(plot.strip_shown());
    QVERIFY(legend_names().contains(QStringLiteral("memory (GB)")));
    QVERIFY(legend_names().contains(QStringLiteral("CPU cores busy")));
    QVERIFY(legend_names().contains(QStringLiteral("learning rate")));
    QVERIFY(!legend_names().contains(QStringLiteral("throughput")));
    // No two series of the legend share a colour and a line style: CPU cores busy and the learning rate were both
    // orange dashed.
    std::map<std::pair<QRgb, int>, QString> styles;
    for (int i = 0; i < plot.legend->itemCount(); ++i)
      if (auto* item = qobject_cast<QCPPlottableLegendItem*>(plot.legend->item(i))) {
        const QPen pen = item->plottable()->pen();
        const auto [at, fresh] = styles.emplace(std::make_pair(pen.color().rgb(), static_cast<int>(pen.style())), item->plottable()->name());
        QVERIFY2(fresh, qPrintable(item->plottable()->name() + " is drawn like " + at->second));
      }
    // Axes from 0 over every sample: memory to above 2.5 GB, CPU to above 1.8 cores; x shared with the loss.
    QVERIFY(plot.memory_graph()->valueAxis()->range().lower == 0 && plot.memory_graph()->valueAxis()->range().upper > 2.5);
    QVERIFY(plot.cpu_graph()->valueAxis()->range().upper > 1.8);
    QCOMPARE(plot.memory_graph()->keyAxis()->range(), plot.xAxis->range());
    screenshot(plot, QStringLiteral("loss_system_use"));
    plot.set_x_axis(LossPlot::XAxis::WallTime);  // the samples move with the x axis
    QCOMPARE(plot.memory_graph()->data()->at(0)->key, 9.0 / 60.0);
    plot.set_strip(LossPlot::Strip::None);
    plot.replot();
    QVERIFY(!plot.strip_shown());
    QVERIFY(!legend_names().contains(QStringLiteral("memory (GB)")));
    // A run never sampled (stored before this version): the strip stays out rather than empty.
    LossPlot old;
    old.resize(720, 440);
    std::vector<xmc::ScalarPoint> unsampled(points.begin(), points.begin() + 2);
    old.set_series(unsampled);
    old.set_strip(LossPlot::Strip::SystemUse);
    old.replot();
    QVERIFY(!old.strip_shown());
  }

  void loss_plot_breaks_lines_at_wall_time_gaps_and_says_what_its_axis_cuts() {
    // 30 steps a second apart, a 10-minute evaluation, 10 more steps; the first loss is 100, the rest near 1.
    std::vector<xmc::ScalarPoint> points;
    for (int step = 1; step <= 40; ++step) {
      const double wall = 1000.0 + step + (step > 30 ? 600.0 : 0.0);
      points.push_back({step, step / 10.0, "loss", step == 1 ? 100.0 : 1.0 + 0.01 * step, wall});
      points.push_back({step, step / 10.0, "lr", 0.001, wall});
      points.push_back({step, step / 10.0, "samples_per_s", 500.0, wall});
    }
    LossPlot plot;
    plot.set_series(points);
    plot.replot();
    auto gaps = [&] {
      int n = 0;
      for (const auto& d : *plot.lr_graph()->data()) n += std::isnan(d.value) ? 1 : 0;
      return n;
    };
    QCOMPARE(gaps(), 0);  // by step, the pause does not show
    plot.set_x_axis(LossPlot::XAxis::WallTime);
    QCOMPARE(gaps(), 1);  // by wall time, the line stops before the pause and starts again after it
    plot.set_x_axis(LossPlot::XAxis::Step);
    QCOMPARE(gaps(), 0);
    // The loss axis keeps the 1st–98th percentile: the first step's 100 is above it, and the plot says so.
    QVERIFY(plot.yAxis->range().upper < 100);
    QVERIFY2(plot.clipped_note().contains("1 loss above the axis, up to 100"), qPrintable(plot.clipped_note()));
    plot.set_log_scale(true);
    plot.replot();
    QVERIFY(plot.clipped_note().isEmpty());  // the log axis shows every loss
  }

  void evaluation_view_draws_the_chosen_metrics_and_modes() {
    // An NGAME-like run: the embedding mode evaluated at epochs 1-4 with eight metrics, the fused ranking
    // (primary at the end) once at epoch 4.
    auto points_of = [](const std::vector<double>& epochs, double base) {
      std::vector<xmc::EvalPoint> points;
      for (const double e : epochs)
        for (const char* m : {"P@1", "P@3", "P@5", "nDCG@1", "nDCG@5", "PSP@1", "PSP@5", "R@10"})
          points.push_back({.epoch = e, .metric = m, .value = base + 0.01 * e});
      return points;
    };
    std::vector<xmc::ModeSeries> modes{{"fused", points_of({4}, 0.5)}, {"emb", points_of({1, 2, 3, 4}, 0.3)}};
    EvaluationView view;
    view.resize(1200, 700);
    view.set_modes(modes);
    // By default: P@1, P@5 and PSP@5 of the primary mode, in one chart.
    QCOMPARE(view.chosen_metrics(), (QStringList{"P@1", "P@5", "PSP@5"}));
    QCOMPARE(view.chosen_modes(), QStringList{"fused mode"});
    QCOMPARE(view.mode_names(), (QStringList{"fused mode", "emb mode"}));
    QCOMPARE(view.metric_names().size(), 8);
    QCOMPARE(view.effective_layout(), EvaluationView::Layout::one_chart);
    QVERIFY(view.panels().empty());
    QCOMPARE(view.chart()->comparison_count(), 0);
    QVERIFY(view.chart()->metric_visible("PSP@5") && !view.chart()->metric_visible("nDCG@1"));
    QCOMPARE(view.chart()->metric_graph("P@1")->data()->at(0)->value, 54.0);  // the fused mode's 0.5 + 0.04

    // As a finished NGAME run's modes come from its store: the embedding was the primary through M1, so its curve is
    // drawn beside the fused ranking's by default (it vanished when training ended, the fused mode's one point left).
    {
      std::vector<xmc::ModeSeries> finished = modes;
      for (auto& m : finished) m.primary_at_some_evaluation = true;
      finished.push_back({"clf", points_of({4}, 0.4)});
      EvaluationView after;
      after.set_modes(finished);
      QCOMPARE(after.chosen_modes(), (QStringList{"fused mode", "emb mode"}));
    }

    // Both modes: six curves are too many for one chart; a panel per metric, each with both modes.
    view.set_mode_chosen("emb mode", true);
    QCOMPARE(view.chosen_modes(), (QStringList{"fused mode", "emb mode"}));
    QCOMPARE(view.effective_layout(), EvaluationView::Layout::panel_per_metric);
    QCOMPARE(view.panels().size(), std::size_t{3});
    for (MetricPlot* panel : view.panels()) {
      QCOMPARE(panel->comparison_count(), 1);
      QCOMPARE(panel->legend->itemCount(), 1);  // one metric per panel
    }
    QVERIFY(view.panels()[2]->metric_visible("PSP@5") && !view.panels()[2]->metric_visible("P@1"));
    QCOMPARE(view.panels()[0]->comparison_graph("emb mode", "P@1")->dataCount(), 4);
    auto* note = view.findChild<QLabel*>("evaluation_note");
    QVERIFY(note && note->text().contains("fused mode: evaluated once, at epoch 4"));
    if (const QByteArray keep = qgetenv("XMC_SCREENSHOT_DIR"); !keep.isEmpty()) {
      view.show();
      QCoreApplication::processEvents();
      QVERIFY(view.grab().save(QString(keep) + "/evaluation-panels.png"));
    }

    // One chart on request: the primary mode solid, the other overlaid, the legend's values named by mode.
    view.set_layout(EvaluationView::Layout::one_chart);
    QVERIFY(view.panels().empty());
    QCOMPARE(view.chart()->comparison_count(), 1);
    view.chart()->resize(900, 500);
    view.chart()->replot();
    QVERIFY2(view.chart()->metric_graph("P@1")->name().contains("fused mode"), qPrintable(view.chart()->metric_graph("P@1")->name()));
    view.set_layout(EvaluationView::Layout::panel_per_mode);
    QCOMPARE(view.panels().size(), std::size_t{2});
    QCOMPARE(view.panels()[1]->legend->itemCount(), 3);

    // A metric chosen from the chart's own right-click menu is the view's choice too, and choices outlive
    // the run shown.
    view.chart()->set_metric_visible("R@10", true);
    QVERIFY(view.chosen_metrics().contains("R@10"));
    view.set_metric_chosen("P@5", false);
    view.set_modes({{"", points_of({1, 2}, 0.2)}});
    QCOMPARE(view.chosen_metrics(), (QStringList{"P@1", "PSP@5", "R@10"}));
    QCOMPARE(view.chosen_modes(), QStringList{"primary mode"});  // the modes chosen are not this run's
    QCOMPARE(view.effective_layout(), EvaluationView::Layout::panel_per_mode);  // the user's layout stays

    // Kept under a settings key, the choices come back in a view made later (the Live tab after a restart); a view
    // without a key keeps nothing.
    {
      EvaluationView kept;
      kept.keep_choices_in(QStringLiteral("test/evaluation"));
      kept.set_modes(modes);
      kept.set_metric_chosen("R@10", true);
      kept.set_mode_chosen("emb mode", true);
      kept.set_layout(EvaluationView::Layout::panel_per_mode);
    }
    EvaluationView restarted;
    restarted.keep_choices_in(QStringLiteral("test/evaluation"));
    restarted.set_modes(modes);
    QCOMPARE(restarted.chosen_metrics(), (QStringList{"P@1", "P@5", "PSP@5", "R@10"}));
    QCOMPARE(restarted.chosen_modes(), (QStringList{"fused mode", "emb mode"}));
    QCOMPARE(restarted.effective_layout(), EvaluationView::Layout::panel_per_mode);
    EvaluationView unkept;
    unkept.set_modes(modes);
    QCOMPARE(unkept.chosen_metrics(), (QStringList{"P@1", "P@5", "PSP@5"}));
    QSettings().setValue("test/evaluation/layout", 99);  // written by some other version: ignored
    EvaluationView odd;
    odd.keep_choices_in(QStringLiteral("test/evaluation"));
    odd.set_modes(modes);
    QCOMPARE(odd.effective_layout(), EvaluationView::Layout::panel_per_metric);  // automatic: 8 curves are too many for one chart
  }

  void live_view_fits_the_window_again_after_a_run_with_panels() {
    // A run whose evaluations need a panel per metric (two modes, three metrics), then a run with one mode: at
    // 1400 x 900 the Live tab has room for its plots both times, and no scrollbar stays from the first run.
    QTemporaryDir dir;
    LiveView view(dir.filePath("runs.sqlite"));
    view.resize(1400, 860);
    view.show();
    const auto evaluation = xmc::test::evaluation_event;
    auto* scroll = view.findChild<QScrollArea*>("live_scroll");
    QVERIFY(scroll);
    auto scrolls = [&] {
      QCoreApplication::processEvents();
      view.layout()->activate();
      QCoreApplication::processEvents();
      return scroll->verticalScrollBar()->isVisible();
    };
    xmc::TrainConfig config;
    view.begin_run(1, config, "run 1");
    QVERIFY(!scrolls());
    for (double epoch : {1.0, 2.0, 3.0}) view.on_event(evaluation(1, epoch, true));
    auto* evaluations = view.findChild<EvaluationView*>();
    QVERIFY(evaluations);
    evaluations->set_mode_chosen("emb mode", true);
    QCOMPARE(evaluations->effective_layout(), EvaluationView::Layout::panel_per_metric);
    QVERIFY2(!scrolls(), "the panels made the Live tab taller than the window");
    xmc::TrainConfig unidec = config;
    unidec.method = "unidec";
    view.begin_run(2, unidec, "run 2");
    for (double epoch : {1.0, 2.0}) view.on_event(evaluation(2, epoch, false));
    QVERIFY2(!scrolls(), "a scrollbar stayed after the panels were gone");
    QVERIFY(view.decile_plot()->isVisible() && view.decile_plot()->height() > 150);
    // A value the run chose while training (UniDEC's concat weight on held-out queries) is marked where it was chosen.
    xmc::TrainEvent chose;
    chose.kind = xmc::TrainEvent::Kind::SettingChosen;
    chose.run_id = 2;
    chose.epoch = 2;
    chose.message = "unidec.concat_weight";
    chose.value = 0.7;
    view.on_event(chose);
    // A key of another group than the method's keeps its group: rag.lambda is mode rag's alone.
    chose.message = "rag.lambda";
    chose.value = 0.6;
    view.on_event(chose);
    const auto marks = view.metric_plot()->milestones();
    QVERIFY(std::any_of(marks.begin(), marks.end(), [](const auto& m) { return m.first == 2.0 && m.second == "concat_weight = 0.7"; }));
    QVERIFY(std::any_of(marks.begin(), marks.end(), [](const auto& m) { return m.first == 2.0 && m.second == "rag.lambda = 0.6"; }));
    view.begin_run(3, config, "run 3");  // the next run starts without it
    QVERIFY(view.metric_plot()->milestones().empty());
  }

  void metric_plot_shows_percent() {
    MetricPlot plot;
    plot.add_evaluation(1, {{"P@1", 0.4}, {"P@5", 0.25}, {"R@10", 0.5}});
    plot.add_evaluation(2, {{"P@1", 0.45}, {"P@5", 0.27}, {"R@10", 0.55}});
    QVERIFY(plot.metric_graph(QStringLiteral("P@1")));
    QCOMPARE(plot.metric_graph(QStringLiteral("P@1"))->dataCount(), 2);
    QCOMPARE(plot.metric_graph(QStringLiteral("P@1"))->data()->at(0)->value, 40.0);
    QCOMPARE(plot.metric_graph(QStringLiteral("P@5"))->data()->at(1)->value, 27.0);
    QVERIFY(plot.metric_visible(QStringLiteral("P@5")));
    QVERIFY(!plot.metric_visible(QStringLiteral("R@10")));  // R@k is one right click away
    QCOMPARE(plot.legend->itemCount(), 2);
    plot.set_metric_visible(QStringLiteral("R@10"), true);
    QCOMPARE(plot.legend->itemCount(), 3);
    QCOMPARE(plot.metric_names(), (QStringList{QStringLiteral("P@1"), QStringLiteral("P@5"), QStringLiteral("R@10")}));
    QVERIFY(plot.yAxis->range().contains(40) && plot.yAxis->range().contains(55));
    QVERIFY(plot.yAxis->range().upper <= 100);

    plot.clear();
    plot.set_evaluations(evaluations(1.0));
    QCOMPARE(plot.metric_graph(QStringLiteral("P@5"))->dataCount(), 10);
    screenshot(plot, QStringLiteral("metrics"));
    plot.set_run_label(QStringLiteral("DEXML (run 7)"));
    plot.add_comparison_run(QStringLiteral("NGAME (run 5)"), evaluations(0.9));
    QCOMPARE(plot.comparison_count(), 1);
    QCPGraph* other = plot.comparison_graph(QStringLiteral("NGAME (run 5)"), QStringLiteral("P@1"));
    QVERIFY(other);
    QCOMPARE(other->pen().style(), Qt::DashLine);
    QCOMPARE(other->dataCount(), 10);
    QCOMPARE(other->visible(), true);
    QCOMPARE(plot.comparison_graph(QStringLiteral("NGAME (run 5)"), QStringLiteral("R@10"))->visible(), true);
    screenshot(plot, QStringLiteral("metrics_compared"));
    screenshot(plot, QStringLiteral("metrics_compared_small"), static_cast<QWidget&>(plot).minimumSizeHint());
    plot.clear_comparisons();
    QCOMPARE(plot.comparison_count(), 0);

    // Schedule changes are marked where they happen, and go with clear().
    const int base = plot.itemCount();  // the "no evaluation yet" note
    plot.set_milestones({{4, QStringLiteral("C = 32")}, {8, QStringLiteral("M4: classifiers")}});
    QCOMPARE(plot.milestones().size(), std::size_t{2});
    QCOMPARE(plot.itemCount(), base + 4);  // a line and a label each
    auto* line = qobject_cast<QCPItemStraightLine*>(plot.item(base + 2));
    QVERIFY(line);
    QCOMPARE(line->point1->coords().x(), 8.0);
    screenshot(plot, QStringLiteral("metrics_milestones"));
    plot.set_milestones({{5, QStringLiteral("shortlists")}});
    QCOMPARE(plot.itemCount(), base + 2);
    // Settings chosen at one epoch share one line, their labels stacked; a mark before the evaluations is in view
    // (xrlinear chooses at epoch 0 and is evaluated after its second stage), one still ahead does not stretch it.
    plot.set_milestones({{0, QStringLiteral("ngrams = 2")}, {0, QStringLiteral("trees = 3")}, {40, QStringLiteral("later")}});
    QCOMPARE(plot.itemCount(), base + 4);
    auto* stacked = qobject_cast<QCPItemText*>(plot.item(base + 1));
    QVERIFY(stacked);
    QCOMPARE(stacked->text(), QStringLiteral("ngrams = 2\ntrees = 3"));
    QVERIFY(plot.xAxis->range().lower < 0);
    QVERIFY(plot.xAxis->range().upper < 40);
    plot.clear();
    QCOMPARE(plot.itemCount(), base);
    QVERIFY(plot.milestones().empty());
  }

  void decile_plot_bars_in_percent_and_overlay() {
    DecilePlot plot;
    const std::array<double, 10> run = {0.082, 0.051, 0.034, 0.026, 0.019, 0.012, 0.008, 0.004, 0.0025, 0.0008};
    const std::array<double, 10> other = {0.091, 0.049, 0.030, 0.021, 0.014, 0.008, 0.004, 0.002, 0.0009, 0.0002};
    plot.set_bars(QStringLiteral("DEXML (run 7)"), run);
    QCOMPARE(plot.bars()->dataCount(), 10);
    for (int i = 0; i < 10; ++i) {
      QCOMPARE(plot.bars()->data()->at(i)->key, i + 1.0);
      QVERIFY(std::abs(plot.bars()->data()->at(i)->value - 100 * run[static_cast<std::size_t>(i)]) < 1e-9);
    }
    QVERIFY(!plot.overlay_bars());
    screenshot(plot, QStringLiteral("deciles"));
    plot.set_overlay(QStringLiteral("NGAME (run 5)"), other);
    QVERIFY(plot.overlay_bars());
    QCOMPARE(plot.overlay_bars()->dataCount(), 10);
    QCOMPARE(plot.bars()->barsGroup(), plot.overlay_bars()->barsGroup());
    QCOMPARE(plot.bars()->barsGroup()->size(), 2);
    QCOMPARE(plot.legend->itemCount(), 2);
    screenshot(plot, QStringLiteral("deciles_compared"));
    screenshot(plot, QStringLiteral("deciles_compared_small"), static_cast<QWidget&>(plot).minimumSizeHint());
    // Two more runs: four bars per bin, centred on the bin, none overlapping; a fifth run is refused.
    QVERIFY(plot.add_overlay(QStringLiteral("run 8"), other));
    QVERIFY(plot.add_overlay(QStringLiteral("run 9"), run));
    QVERIFY(!plot.add_overlay(QStringLiteral("run 10"), run));
    const auto all = plot.all_bars();
    QCOMPARE(all.size(), std::size_t{4});
    QCOMPARE(plot.legend->itemCount(), 4);
    plot.resize(900, 500);
    plot.replot();
    std::vector<double> centres;  // of each run's bar in bin 3, in axis coordinates
    for (QCPBars* b : all) {
      QVERIFY(b->width() > 0 && b->width() < 0.25);
      centres.push_back(plot.xAxis->pixelToCoord(b->dataPixelPosition(2).x()));
    }
    for (std::size_t i = 1; i < centres.size(); ++i) QVERIFY(centres[i] - centres[i - 1] >= all[i]->width() - 1e-6);
    QVERIFY(std::abs((centres.front() + centres.back()) / 2 - 3.0) < 0.02);  // the group is centred on the bin
    screenshot(plot, QStringLiteral("deciles_four_runs"));
    plot.clear_overlay();
    QVERIFY(!plot.overlay_bars());
    QCOMPARE(plot.legend->itemCount(), 1);
    QCOMPARE(plot.all_bars().size(), std::size_t{1});
  }

  void the_live_tab_draws_the_negatives_map_while_it_forms() {
    // A snapshot still converging is drawn like the one it settles into (the run stores only that one).
    QTemporaryDir dir;
    LiveView view(dir.filePath("runs.sqlite"));
    view.begin_run(1, xmc::TrainConfig{}, "run 1");
    QCOMPARE(view.tsne_plot()->point_count(), 0);
    xmc::TrainEvent forming;
    forming.kind = xmc::TrainEvent::Kind::SnapshotForming;
    forming.run_id = 1;
    forming.message = six_group_snapshot();
    view.on_event(forming);
    QCOMPARE(view.tsne_plot()->point_count(), 1 + 4 + 20 + 60 + 6 + 5);
    QCOMPARE(view.tsne_plot()->group_count(), 6);
  }

  void tsne_plot_groups_and_hover_text() {
    TsnePlot plot;
    QVERIFY(plot.set_snapshot(six_group_snapshot()));
    QCOMPARE(plot.group_count(), 6);
    QCOMPARE(plot.point_count(), 1 + 4 + 20 + 60 + 6 + 5);
    QCOMPARE(plot.legend->itemCount(), 6);
    QCOMPARE(plot.text_at(0.001, -0.001), QStringLiteral("wireless optical mouse with usb receiver"));
    const QCPGraph* hard = plot.group_graph(QStringLiteral("ann_hard"));
    QCOMPARE(hard->dataCount(), 6);
    QVERIFY(plot.text_at(hard->data()->at(0)->key, hard->data()->at(0)->value).startsWith(QStringLiteral("keyboards")));
    QCOMPARE(TsnePlot::group_title(QStringLiteral("missed_hard")), QStringLiteral("hard negatives missed by the batch"));
    screenshot(plot, QStringLiteral("tsne"));

    // Hovering the query's star shows its text (and which group it is in).
    plot.show();
    QVERIFY(QTest::qWaitForWindowExposed(&plot));
    plot.replot();
    const QPoint star(static_cast<int>(plot.xAxis->coordToPixel(0)), static_cast<int>(plot.yAxis->coordToPixel(0)));
    QTest::mouseMove(&plot, star + QPoint(3, -2));
    QTRY_VERIFY(QToolTip::isVisible());
    QVERIFY(QToolTip::text().contains(QStringLiteral("wireless optical mouse")));
    QVERIFY(QToolTip::text().contains(QStringLiteral("query")));
    QTest::mouseMove(&plot, QPoint(2, 2));  // far from every point (in the title)
    QTRY_VERIFY(!QToolTip::isVisible());
    plot.hide();
    screenshot(plot, QStringLiteral("tsne_small"), static_cast<QWidget&>(plot).minimumSizeHint());

    QString error;
    QVERIFY(!plot.set_snapshot("{\"points\": [", &error));
    QVERIFY(!error.isEmpty());
    QVERIFY(!plot.set_snapshot(R"({"points": [{"x": "a", "y": 1, "group": "query"}]})", &error));
    QVERIFY(error.contains(QStringLiteral("points[0]")));
    QVERIFY(!plot.set_snapshot(R"({"query": 1})"));
    QCOMPARE(plot.group_count(), 6);  // the old snapshot stays
    QCOMPARE(plot.point_count(), 96);

    QVERIFY(plot.set_snapshot(R"({"points": [{"x": 1, "y": 2, "group": "positive", "text": "a"},
                                              {"x": 5, "y": 2, "group": "shiny", "text": "b"}]})"));
    QCOMPARE(plot.group_count(), 2);  // unknown groups are drawn as "other"
    QCOMPARE(plot.text_at(4.5, 2), QStringLiteral("b"));
    plot.clear();
    QCOMPARE(plot.point_count(), 0);
    QCOMPARE(plot.text_at(0, 0), QString());
  }

  void export_writes_png_svg_pdf() {
    DecilePlot decile;
    decile.set_bars(QStringLiteral("run"), {0.1, 0.05, 0.04, 0.03, 0.02, 0.01, 0.01, 0.005, 0.002, 0.001});
    TsnePlot tsne;
    QVERIFY(tsne.set_snapshot(six_group_snapshot()));
    for (QCustomPlot* plot : {static_cast<QCustomPlot*>(&decile), static_cast<QCustomPlot*>(&tsne)}) {
      const QString stem = QDir(shots_).filePath(plot == &decile ? QStringLiteral("export_deciles") : QStringLiteral("export_tsne"));
      QString error;
      QVERIFY2(export_plot(plot, stem + QStringLiteral(".png"), 800, 450, &error), qPrintable(error));
      QVERIFY(read_file(stem + QStringLiteral(".png")).startsWith("\x89PNG\r\n\x1a\n"));
      QCOMPARE(QImage(stem + QStringLiteral(".png")).size(), QSize(1600, 900));  // 2× for crispness
      QVERIFY2(export_plot(plot, stem + QStringLiteral(".SVG"), 800, 450, &error), qPrintable(error));
      const QByteArray svg = read_file(stem + QStringLiteral(".SVG"));
      QVERIFY(svg.startsWith("<?xml") || svg.startsWith("<svg"));
      QVERIFY(svg.contains("<svg"));
      QVERIFY(svg.contains("</svg>"));
      QVERIFY(svg.size() > 2000);  // drawn, not an empty canvas
      // Qt reads it back as a valid SVG of the requested size that draws more than a white page.
      QSvgRenderer renderer(svg);
      QVERIFY(renderer.isValid());
      QCOMPARE(renderer.viewBox(), QRect(0, 0, 800, 450));
      QImage page(800, 450, QImage::Format_RGB32);
      page.fill(Qt::white);
      QPainter painter(&page);
      renderer.render(&painter);
      painter.end();
      int ink = 0;
      for (int y = 0; y < page.height(); y += 3)
        for (int x = 0; x < page.width(); x += 3) ink += page.pixel(x, y) != qRgb(255, 255, 255) ? 1 : 0;
      QVERIFY2(ink > 500, qPrintable(QString::number(ink)));
      QVERIFY(page.save(stem + QStringLiteral("_svg_rendered.png")));
      QVERIFY2(export_plot(plot, stem + QStringLiteral(".pdf"), 0, 0, &error), qPrintable(error));
      QVERIFY(read_file(stem + QStringLiteral(".pdf")).startsWith("%PDF"));
    }
    // A plot with data never exports its "no … yet" note, even when it was not replotted since the data came.
    for (int i = 0; i < tsne.itemCount(); ++i)
      if (auto* text = qobject_cast<QCPItemText*>(tsne.item(i)); text && text->text().startsWith(QStringLiteral("no t-SNE")))
        QVERIFY(!text->visible());
    QVERIFY(!read_file(QDir(shots_).filePath(QStringLiteral("export_tsne.SVG"))).contains("no t-SNE snapshot yet"));
    // The SVG carries the title as text (vector, searchable).
    QVERIFY(read_file(QDir(shots_).filePath(QStringLiteral("export_deciles.SVG"))).contains("Decile-wise P@5"));

    QString error;
    QVERIFY(!export_plot(&decile, temp_.filePath(QStringLiteral("deciles.bmp")), 0, 0, &error));
    QVERIFY(error.contains(QStringLiteral(".bmp")));
    QVERIFY(!QFile::exists(temp_.filePath(QStringLiteral("deciles.bmp"))));
    QVERIFY(!export_plot(&decile, temp_.filePath(QStringLiteral("deciles")), 0, 0, &error));
    QVERIFY(!export_plot(&decile, temp_.filePath(QStringLiteral("no/such/folder/deciles.png")), 0, 0, &error));
    QVERIFY(error.contains(QStringLiteral("does not exist")));
    QVERIFY(!export_plot(nullptr, temp_.filePath(QStringLiteral("x.png")), 0, 0, &error));
  }

  void every_plot_has_export_menu_and_size_hints() {
    LossPlot loss;
    MetricPlot metrics;
    DecilePlot deciles;
    TsnePlot tsne;
    for (QCustomPlot* p : std::initializer_list<QCustomPlot*>{&loss, &metrics, &deciles, &tsne}) {
      QCOMPARE(p->contextMenuPolicy(), Qt::CustomContextMenu);
      const QSize min = static_cast<QWidget*>(p)->minimumSizeHint();  // public in QWidget
      QVERIFY(min.width() >= 300 && min.height() >= 200);
      QVERIFY(!p->windowTitle().isEmpty());
    }
  }
};

QTEST_MAIN(PlotsTest)
#include "plots_test.moc"
