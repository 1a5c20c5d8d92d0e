#include "widgets/labels/label_quality_view.h"

#include <QComboBox>
#include <QFutureWatcher>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QSpinBox>
#include <QSplitter>
#include <QTableWidget>
#include <QToolTip>
#include <cmath>
#include <cstdint>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrent>
#include <algorithm>
#include <cmath>

#include "engine/session/session.h"
#include "widgets/background_job.h"
#include "widgets/plots/plot_export.h"
#include "widgets/plots/plot_style.h"

namespace xmc::gui {
namespace {

/// Where the scatter draws label `q`: its training count (0 at 0.5) and its recall or precision in %, moved a
/// little — up to ±9 % along the log axis and ±1.2 points up or down, by a hash of its id, the same at every
/// drawing — so that the many labels with equal counts and a recall of 0, 50 or 100 % show as a cloud rather
/// than one dot.
QPointF scatter_position(const LabelQuality& q, bool precision) {
  std::uint64_t h = static_cast<std::uint64_t>(q.label) * 0x9E3779B97F4A7C15ULL + 0x632BE59BD9B4E019ULL;
  h ^= h >> 31;
  h *= 0xBF58476D1CE4E5B9ULL;
  h ^= h >> 29;
  const double u = static_cast<double>(h & 0xFFFF) / 65535.0 - 0.5, v = static_cast<double>((h >> 16) & 0xFFFF) / 65535.0 - 0.5;
  const double x = std::max(0.5, static_cast<double>(q.train_count)) * std::exp2(0.25 * u);
  return {x, 100 * (precision ? q.precision() : q.recall()) + 2.4 * v};
}

}  // namespace
namespace {

constexpr double kTailShare = 0.3;  // the tail: the 30 % of labels (with test queries) seen least in training
constexpr int kTailRows = 50;

}  // namespace

LabelQualityView::LabelQualityView(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  auto* bar = new QHBoxLayout;
  header_ = new QLabel(tr("Open a trained run (Runs tab, or a run that finished) to see how well it finds each label."));
  header_->setWordWrap(true);
  bar->addWidget(header_, 1);
  bar->addWidget(new QLabel(tr("k")));
  k_ = new QSpinBox;
  k_->setRange(1, 100);
  k_->setValue(5);
  bar->addWidget(k_);
  measure_ = new QComboBox;
  measure_->addItem(tr("recall@k"));
  measure_->addItem(tr("precision@k"));
  measure_->setToolTip(tr("What the scatter puts against training frequency"));
  bar->addWidget(measure_);
  connect(measure_, &QComboBox::currentIndexChanged, this, [this] { show_report(); });
  mode_ = new QComboBox;
  mode_->setToolTip(tr("The inference mode that ranks the test set (its modes are listed once it has been ranked)"));
  mode_->setEnabled(false);
  mode_->setSizeAdjustPolicy(QComboBox::AdjustToContents);  // "embedding", "classifier", "fused" whole
  bar->addWidget(mode_);
  // Another mode ranks the test set again (a second or so on the demo sets).
  connect(mode_, &QComboBox::activated, this, [this] {
    if (report_ && mode_->currentText() != QString::fromStdString(report_->mode)) compute();
  });
  compute_ = new QPushButton(tr("Rank the test set"));
  compute_->setToolTip(tr("Rank every test query with the chosen mode (the run's primary at first) and count, per label, the queries that find it in the top k"));
  compute_->setEnabled(false);
  bar->addWidget(compute_);
  layout->addLayout(bar);
  connect(compute_, &QPushButton::clicked, this, &LabelQualityView::compute);

  scatter_ = new QCustomPlot;
  plot_style::style_plot(scatter_, tr("Per-label recall"));
  plot_style::add_empty_note(scatter_, tr("not computed yet"));
  scatter_->xAxis->setScaleType(QCPAxis::stLogarithmic);
  scatter_->xAxis->setTicker(QSharedPointer<QCPAxisTickerLog>::create());
  scatter_->xAxis->setLabel(tr("training queries with the label (log; 0 drawn at 0.5)"));
  scatter_->yAxis->setLabel(tr("recall@k of its test queries (%)"));
  scatter_->setMinimumSize(360, 260);
  scatter_->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignBottom | Qt::AlignRight);  // tail labels sit top left
  add_export_menu(scatter_, this);
  scatter_->setMouseTracking(true);
  connect(scatter_, &QCustomPlot::mouseMove, this, [this](QMouseEvent* event) {
    if (!report_) return;
    // The label under the pointer, by pixel distance.
    const LabelQuality* nearest = nullptr;
    double best = 64;  // squared pixels
    for (const LabelQuality& q : report_->labels) {
      if (q.test_count == 0) continue;
      const QPointF at = scatter_position(q, measure_->currentIndex() == 1);
      const double x = scatter_->xAxis->coordToPixel(at.x());
      const double y = scatter_->yAxis->coordToPixel(at.y());
      const double d = (x - event->position().x()) * (x - event->position().x()) + (y - event->position().y()) * (y - event->position().y());
      if (d < best) best = d, nearest = &q;
    }
    if (!nearest) return QToolTip::hideText();
    QToolTip::showText(event->globalPosition().toPoint(),
                       tr("%1\ntrain %2, test %3, recall@%4 %5 %, precision@%4 %6 %")
                           .arg(QString::fromStdString(nearest->text))
                           .arg(nearest->train_count)
                           .arg(nearest->test_count)
                           .arg(report_->k)
                           .arg(100 * nearest->recall(), 0, 'f', 1)
                           .arg(100 * nearest->precision(), 0, 'f', 1),
                       scatter_);
  });

  tail_ = new QTableWidget(0, 6);
  tail_->setHorizontalHeaderLabels({tr("label"), tr("train"), tr("test"), tr("recall@k %"), tr("precision@k %"), tr("a missed test query")});
  // Long label texts are cut (whole in the tooltip) so the numbers stay in view; the missed query takes the rest.
  tail_->horizontalHeader()->setSectionResizeMode(QHeaderView::Interactive);
  tail_->horizontalHeader()->setSectionResizeMode(5, QHeaderView::Stretch);
  tail_->setTextElideMode(Qt::ElideRight);
  tail_->setSelectionBehavior(QAbstractItemView::SelectRows);
  tail_->setToolTip(tr("Double-click a row to look its missed test query (or the label) up in Search"));
  connect(tail_, &QTableWidget::cellDoubleClicked, this, [this](int row, int) { activate_tail_row(row); });
  tail_->verticalHeader()->setVisible(false);
  tail_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  tail_->setWordWrap(false);
  auto* tail_box = new QWidget;
  auto* tail_layout = new QVBoxLayout(tail_box);
  tail_layout->setContentsMargins(0, 0, 0, 0);
  tail_layout->addWidget(new QLabel(tr("<b>Worst tail labels</b> (the 30 % seen least in training, lowest recall first)")));
  tail_layout->addWidget(tail_, 1);
  auto* split = new QSplitter(Qt::Horizontal);
  split->addWidget(scatter_);
  split->addWidget(tail_box);
  split->setSizes({600, 600});
  layout->addWidget(split, 1);
}

LabelQualityView::~LabelQualityView() { job_.waitForFinished(); }

void LabelQualityView::set_run(const QString& db, std::int64_t run) {
  if (db == db_ && run == run_) return;
  job_.waitForFinished();
  db_ = db;
  run_ = run;
  report_.reset();
  show_report();
  header_->setText(tr("Run %1: rank its test set to see how well it finds each label.").arg(run));
  compute_->setEnabled(run > 0);
  mode_->clear();
  mode_->setEnabled(false);
}

QStringList LabelQualityView::modes() const {
  QStringList out;
  for (int i = 0; i < mode_->count(); ++i) out << mode_->itemText(i);
  return out;
}

QString LabelQualityView::mode() const { return mode_->currentText(); }

int LabelQualityView::label_column_width() const { return tail_->columnWidth(0); }
int LabelQualityView::table_width() const { return tail_->viewport()->width(); }

void LabelQualityView::activate_tail_row(int row) {
  if (!report_ || row < 0 || row >= tail_->rowCount()) return;
  // Its missed test query; a label every test query found has none: then the label's own text.
  for (const int column : {5, 0})
    if (const QTableWidgetItem* item = tail_->item(row, column); item != nullptr && !item->text().isEmpty()) {
      Q_EMIT query_chosen(item->text());
      return;
    }
}

void LabelQualityView::compute() {
  if (run_ <= 0 || job_.isRunning()) return;
  compute_->setEnabled(false);
  header_->setText(tr("Run %1: ranking the test set…").arg(run_));
  const std::int64_t run = run_;
  job_ = run_in_background<LabelQualityReport>(
      this,
      [db = db_.toStdString(), run, k = static_cast<std::int64_t>(k_->value()), mode = mode_->currentText().toStdString()] {
        return Session(db).label_quality(run, k, mode);
      },
      [this, run](std::unique_ptr<LabelQualityReport> report, const QString& error) {
        compute_->setEnabled(true);
        if (run != run_) return;  // another run was opened meanwhile
        if (!report) {
          header_->setText(tr("Run %1: %2").arg(run).arg(error));
          return;
        }
        report_ = std::move(report);
        mode_->clear();
        for (const std::string& m : report_->modes) mode_->addItem(QString::fromStdString(m));
        mode_->setCurrentText(QString::fromStdString(report_->mode));
        mode_->setEnabled(mode_->count() > 1);
        show_report();
        Q_EMIT computed();
      });
}

int LabelQualityView::tail_rows() const { return tail_->rowCount(); }

void LabelQualityView::show_report() {
  scatter_->clearGraphs();
  tail_->setRowCount(0);
  if (!report_) {
    scatter_->legend->setVisible(false);
    scatter_->xAxis->setRange(0.5, 1000);
    scatter_->yAxis->setRange(-3, 103);
    scatter_->replot();
    return;
  }
  // Labels with test queries, ordered by training frequency: the tail is the least frequent 30 %.
  std::vector<const LabelQuality*> tested;
  std::int64_t hits = 0, tested_queries = 0;
  for (const LabelQuality& q : report_->labels)
    if (q.test_count > 0) {
      tested.push_back(&q);
      hits += q.hits;
      tested_queries += q.test_count;
    }
  std::sort(tested.begin(), tested.end(), [](const auto* a, const auto* b) { return a->train_count < b->train_count; });
  const std::size_t tail_size = static_cast<std::size_t>(std::ceil(kTailShare * static_cast<double>(tested.size())));
  QCPGraph* head = scatter_->addGraph();
  QCPGraph* tail = scatter_->addGraph();
  head->setName(tr("labels"));
  tail->setName(tr("tail labels (30 % least frequent)"));
  for (QCPGraph* g : {head, tail}) g->setLineStyle(QCPGraph::lsNone);
  // Half-transparent, so that where labels crowd the colour deepens.
  QColor head_colour = plot_style::kBlue, tail_colour = plot_style::kOrange;
  head_colour.setAlpha(150);
  tail_colour.setAlpha(150);
  head->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, head_colour, 5));
  tail->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, tail_colour, 5));
  const bool precision = measure_->currentIndex() == 1;
  scatter_->yAxis->setLabel(precision ? tr("precision@k: of the queries ranking it in the top k, those it belongs to (%)")
                                      : tr("recall@k of its test queries (%)"));
  for (std::size_t i = 0; i < tested.size(); ++i) {
    const QPointF at = scatter_position(*tested[i], precision);
    (i < tail_size ? tail : head)->addData(at.x(), at.y());
  }
  scatter_->legend->setVisible(!tested.empty());
  scatter_->rescaleAxes();
  const QCPRange x = scatter_->xAxis->range();
  scatter_->xAxis->setRange(std::max(0.3, x.lower / 1.5), std::max(1.0, x.upper * 1.5));
  scatter_->yAxis->setRange(-3, 103);
  scatter_->replot();

  std::vector<const LabelQuality*> worst(tested.begin(), tested.begin() + static_cast<std::ptrdiff_t>(tail_size));
  std::sort(worst.begin(), worst.end(), [](const auto* a, const auto* b) {
    return a->recall() != b->recall() ? a->recall() < b->recall() : a->test_count > b->test_count;
  });
  if (worst.size() > static_cast<std::size_t>(kTailRows)) worst.resize(kTailRows);
  tail_->setRowCount(static_cast<int>(worst.size()));
  for (int r = 0; r < static_cast<int>(worst.size()); ++r) {
    const LabelQuality& q = *worst[static_cast<std::size_t>(r)];
    const QString example = q.missed_queries.empty() ? QString()
                                                     : QString::fromStdString(report_->test_texts[static_cast<std::size_t>(q.missed_queries.front())]);
    const QStringList cells = {QString::fromStdString(q.text), QString::number(q.train_count), QString::number(q.test_count),
                               QString::number(100 * q.recall(), 'f', 1), QString::number(100 * q.precision(), 'f', 1), example};
    for (int c = 0; c < cells.size(); ++c) {
      auto* item = new QTableWidgetItem(cells[c]);
      item->setToolTip(cells[c]);
      if (c >= 1 && c <= 4) item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
      tail_->setItem(r, c, item);
    }
  }
  tail_->resizeColumnsToContents();
  // The label column at most a third of the table: the train/test/recall/precision columns stay in view.
  tail_->setColumnWidth(0, std::min(tail_->columnWidth(0), std::max(120, tail_->viewport()->width() / 3)));
  header_->setText(tr("Run %1, mode %2: %3 test queries; the labels' recall@%4 averages %5 % over their test queries (micro).")
                       .arg(run_)
                       .arg(QString::fromStdString(report_->mode))
                       .arg(report_->test_queries)
                       .arg(report_->k)
                       .arg(tested_queries > 0 ? 100.0 * static_cast<double>(hits) / static_cast<double>(tested_queries) : 0.0, 0, 'f', 2));
}

}  // namespace xmc::gui
