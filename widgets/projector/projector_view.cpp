#include "widgets/projector/projector_view.h"

#include "widgets/qt_progress.h"
#include "widgets/live/training_progress.h"

#include <QComboBox>
#include <QFutureWatcher>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QProgressBar>
#include <QSpinBox>
#include <QToolTip>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrent>
#include <utility>
#include <algorithm>

#include "engine/session/session.h"
#include "widgets/background_job.h"
#include "widgets/plots/plot_export.h"
#include "widgets/plots/plot_style.h"

namespace xmc::gui {
namespace {

/// Decile colours, head (0) to tail (9): blue through green and ochre to red. Every one keeps a contrast of at
/// least 3:1 against the white plot (a diverging palette's pale middle drew decile 5 almost white on white).
QColor decile_colour(int decile) {
  static const QColor colours[10] = {{0x31, 0x36, 0x95}, {0x45, 0x75, 0xb4}, {0x3b, 0x8b, 0xc2}, {0x2e, 0x9c, 0x8c}, {0x5e, 0x9a, 0x1b},
                                     {0xb0, 0x8d, 0x00}, {0xd4, 0x70, 0x1a}, {0xe8, 0x54, 0x2f}, {0xc0, 0x26, 0x2d}, {0x7f, 0x00, 0x20}};
  return colours[std::clamp(decile, 0, 9)];
}

}  // namespace

ProjectorView::ProjectorView(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  header_ = new QLabel(tr("Open a trained run to project its label or query vectors to 2-D."));
  header_->setTextFormat(Qt::PlainText);  // it quotes what the user typed
  header_->setWordWrap(true);
  layout->addWidget(header_);
  auto* bar = new QHBoxLayout;
  what_ = new QComboBox;
  what_->addItem(tr("labels"), QStringLiteral("labels"));
  what_->addItem(tr("test queries"), QStringLiteral("queries"));
  method_ = new QComboBox;
  method_->addItem(QStringLiteral("PCA"), QStringLiteral("pca"));
  method_->addItem(tr("t-SNE (≤ 5000 points)"), QStringLiteral("tsne"));
  sample_ = new QSpinBox;
  sample_->setRange(10, 20000);
  sample_->setValue(20000);
  sample_->setToolTip(tr("At most this many points, drawn at random (t-SNE takes at most 5000)"));
  label_ = new QLineEdit;
  label_->setPlaceholderText(tr("label text: its positives in red (queries)"));
  search_ = new QLineEdit;
  search_->setPlaceholderText(tr("search: ring points whose text contains…"));
  search_->setClearButtonEnabled(true);
  compute_ = new QPushButton(tr("Project"));
  compute_->setEnabled(false);
  cancel_ = new QPushButton(tr("Cancel"));
  cancel_->setVisible(false);
  connect(cancel_, &QPushButton::clicked, this, [this] { cancel(); });
  // t-SNE takes at most 5000 points: the box says so instead of silently taking fewer.
  connect(method_, &QComboBox::currentIndexChanged, this, [this] { sample_->setMaximum(sample_limit()); });
  for (QWidget* w : std::initializer_list<QWidget*>{what_, method_, new QLabel(tr("points")), sample_, label_, search_, compute_, cancel_}) bar->addWidget(w);
  bar->setStretchFactor(label_, 1);
  bar->setStretchFactor(search_, 1);
  layout->addLayout(bar);
  // t-SNE of a few thousand points takes a minute: a bar with the iterations done and an ETA.
  bar_ = new QProgressBar;
  bar_->setObjectName("projector_progress");
  bar_->setVisible(false);
  layout->addWidget(bar_);
  progress_ = new QtProgress(this);
  connect(progress_, &QtProgress::progressed, this, [this](const QString& task, qint64 done, qint64 total, double eta) {
    TrainingProgress::show_task(bar_, task, done, total, eta);
  });
  plot_ = new QCustomPlot;
  plot_style::style_plot(plot_, tr("Projector"));
  plot_style::add_empty_note(plot_, tr("not computed yet"));
  plot_->xAxis->setLabel(tr("dimension 1"));
  plot_->yAxis->setLabel(tr("dimension 2"));
  plot_->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
  plot_->setMouseTracking(true);
  add_export_menu(plot_, this);
  layout->addWidget(plot_, 1);

  connect(compute_, &QPushButton::clicked, this, [this] { compute(); });
  connect(search_, &QLineEdit::textChanged, this, [this] { draw(); });
  connect(label_, &QLineEdit::editingFinished, this, [this] { draw(); });
  connect(plot_, &QCustomPlot::mouseMove, this, [this](QMouseEvent* event) {
    if (!projection_) return;
    const ProjectedPoint* nearest = nullptr;
    std::size_t index = 0;
    double best = 49;  // squared pixels
    for (std::size_t i = 0; i < projection_->points.size(); ++i) {
      const auto& p = projection_->points[i];
      const double dx = plot_->xAxis->coordToPixel(p.x) - event->position().x(), dy = plot_->yAxis->coordToPixel(p.y) - event->position().y();
      if (dx * dx + dy * dy < best) best = dx * dx + dy * dy, nearest = &p, index = i;
    }
    if (!nearest) return QToolTip::hideText();
    QString tip = QString::fromStdString(projection_->texts[index]);
    if (nearest->decile >= 0) tip += tr("\nlabel %1, frequency decile %2").arg(nearest->id).arg(nearest->decile + 1);
    else tip += tr("\ntest query %1").arg(nearest->id);
    QToolTip::showText(event->globalPosition().toPoint(), tip, plot_);
  });
}

ProjectorView::~ProjectorView() { job_.waitForFinished(); }

void ProjectorView::set_run(const QString& db, std::int64_t run) {
  if (db == db_ && run == run_) return;
  job_.waitForFinished();
  db_ = db;
  run_ = run;
  ++computation_;  // maps in the making still queued belong to the run before
  converging_ = false;
  finished_.reset();
  projection_.reset();
  draw();
  header_->setText(tr("Run %1: choose what to project and press Project.").arg(run));
  compute_->setEnabled(run > 0);
}

void ProjectorView::compute(const QString& what, const QString& method) {
  if (run_ <= 0 || job_.isRunning()) return;
  if (!what.isEmpty()) what_->setCurrentIndex(what_->findData(what));
  if (!method.isEmpty()) method_->setCurrentIndex(method_->findData(method));
  ProjectionOptions options;
  options.what = what_->currentData().toString().toStdString();
  options.method = method_->currentData().toString().toStdString();
  options.sample = sample_->value();
  compute_->setEnabled(false);
  header_->setText(projection_ ? tr("Run %1: projecting… (the plot shows the previous projection until it is done)").arg(run_)
                               : tr("Run %1: projecting…").arg(run_));
  progress_->reset();
  bar_->setRange(0, 0);
  bar_->setFormat(tr("opening the run…"));
  bar_->setVisible(true);
  cancel_->setVisible(true);
  cancel_->setEnabled(true);
  const std::int64_t run = run_;
  const std::uint64_t computation = ++computation_;
  computing_ = true;
  QtProgress* progress = progress_;
  job_ = run_in_background<Projection>(
      this,
      [this, db = db_.toStdString(), run, options, progress, computation] {
        // Each map in the making is copied and queued to the UI thread (before the result, so it never comes after).
        const auto converging = [this, computation](const Projection& so_far) {
          auto copy = std::make_shared<const Projection>(so_far);
          QMetaObject::invokeMethod(this, [this, computation, copy] { show_converging(computation, copy); }, Qt::QueuedConnection);
        };
        return Session(db).projection(run, options, *progress, converging);
      },
      [this, run](std::unique_ptr<Projection> projection, const QString& error) {
        compute_->setEnabled(true);
        bar_->setVisible(false);
        cancel_->setVisible(false);
        computing_ = false;
        const bool was_converging = std::exchange(converging_, false);
        if (run != run_) return;  // another run was opened meanwhile
        if (!projection) {
          if (was_converging) {  // the map in the making goes; the last finished one (if any) comes back
            projection_ = std::move(finished_);
            draw();
          }
          header_->setText(progress_->cancelled() ? tr("Run %1: projection cancelled%2").arg(run).arg(projection_ ? tr(" — the plot shows the previous one") : QString())
                                                  : tr("Run %1: %2").arg(run).arg(error));
          return;
        }
        finished_.reset();
        projection_ = std::move(projection);
        draw();
        Q_EMIT computed();
      });
}

void ProjectorView::show_converging(std::uint64_t computation, std::shared_ptr<const Projection> so_far) {
  if (computation != computation_ || !computing_ || progress_->cancelled()) return;
  if (!converging_) {  // the first map in the making: the finished one waits aside
    finished_ = std::move(projection_);
    converging_ = true;
  }
  projection_ = std::make_unique<Projection>(*so_far);
  draw();
  header_->setText(tr("Run %1: t-SNE converging — the map moves until it settles").arg(run_));
  Q_EMIT converging();
}

void ProjectorView::set_search_text(const QString& text) { search_->setText(text); }

void ProjectorView::cancel() {
  if (!job_.isRunning()) return;
  progress_->cancel();
  cancel_->setEnabled(false);
  bar_->setFormat(tr("cancelling…"));
}

bool ProjectorView::computing() const { return job_.isRunning(); }

int ProjectorView::sample_limit() const { return method_->currentData().toString() == QLatin1String("tsne") ? 5000 : 20000; }

int ProjectorView::set_positives_of(const QString& label_text) {
  label_->setText(label_text);
  draw();
  QCPGraph* positives = nullptr;
  for (int g = 0; g < plot_->graphCount(); ++g)
    if (plot_->graph(g)->name() == tr("positives of the label")) positives = plot_->graph(g);
  return positives ? positives->dataCount() : 0;
}

void ProjectorView::draw() {
  plot_->clearGraphs();
  highlighted_ = 0;
  if (!projection_) {
    plot_->legend->setVisible(false);
    plot_->replot();
    return;
  }
  const bool labels = projection_->options.what == "labels";
  // The chosen label's id (queries are coloured by whether they hold it).
  std::int64_t chosen = -1;
  if (!labels && !label_->text().trimmed().isEmpty()) {
    const std::string wanted = label_->text().trimmed().toStdString();
    const auto& texts = projection_->label_texts;
    const auto it = std::find(texts.begin(), texts.end(), wanted);
    if (it != texts.end()) chosen = it - texts.begin();
  }
  std::vector<QCPGraph*> groups;
  auto group = [&](const QString& name, const QColor& colour, int size) {
    QCPGraph* g = plot_->addGraph();
    g->setName(name);
    g->setLineStyle(QCPGraph::lsNone);
    g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, colour, colour, size));
    g->setAdaptiveSampling(true);
    groups.push_back(g);
    return g;
  };
  if (labels)
    for (int d = 0; d < 10; ++d) group(d == 0 ? tr("decile 1 (head)") : d == 9 ? tr("decile 10 (tail)") : tr("decile %1").arg(d + 1), decile_colour(d), 4);
  else
    group(tr("test queries"), QColor(0x99, 0x99, 0x99), 4);
  QCPGraph* positives = labels ? nullptr : group(tr("positives of the label"), QColor(0xd7, 0x30, 0x27), 6);
  QCPGraph* found = plot_->addGraph();
  found->setName(tr("search"));
  found->setLineStyle(QCPGraph::lsNone);
  found->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, QPen(Qt::black, 1.5), Qt::NoBrush, 11));
  const QString needle = search_->text().trimmed();
  for (std::size_t i = 0; i < projection_->points.size(); ++i) {
    const auto& p = projection_->points[i];
    if (labels) {
      groups[static_cast<std::size_t>(std::clamp(p.decile, 0, 9))]->addData(p.x, p.y);
    } else {
      const auto& truth = projection_->true_labels[i];
      const bool positive = chosen >= 0 && std::find(truth.begin(), truth.end(), static_cast<std::int32_t>(chosen)) != truth.end();
      (positive ? positives : groups.front())->addData(p.x, p.y);
    }
    if (!needle.isEmpty() && QString::fromStdString(projection_->texts[i]).contains(needle, Qt::CaseInsensitive)) {
      found->addData(p.x, p.y);
      ++highlighted_;
    }
  }
  plot_->legend->setVisible(true);
  plot_->rescaleAxes();
  plot_->xAxis->scaleRange(1.08);  // points at the extremes are drawn whole
  plot_->yAxis->scaleRange(1.08);
  plot_->replot();
  // A search or a label that finds nothing says so, rather than leaving the map as it was.
  QString found_text;
  if (!needle.isEmpty())
    found_text = highlighted_ > 0 ? tr("; %1 match the search").arg(highlighted_) : tr("; nothing matches “%1”").arg(needle);
  if (!labels && !label_->text().trimmed().isEmpty() && chosen < 0)
    found_text += tr("; no label of the run is called “%1”").arg(label_->text().trimmed());
  header_->setText(tr("Run %1: %2 %3 by %4%5")
                       .arg(run_)
                       .arg(projection_->points.size())
                       .arg(labels ? tr("labels (coloured by training-frequency decile)") : tr("test queries"))
                       .arg(QString::fromStdString(projection_->options.method == "tsne" ? "t-SNE" : "PCA"))
                       .arg(found_text));
}

}  // namespace xmc::gui
