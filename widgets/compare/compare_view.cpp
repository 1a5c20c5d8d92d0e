#include "widgets/compare/compare_view.h"

#include <QAbstractTableModel>
#include <QFont>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPainter>
#include <QPixmap>
#include <QScrollBar>
#include <QSplitter>
#include <QTableView>
#include <QTableWidget>
#include <QToolButton>
#include <QTabWidget>
#include <QComboBox>
#include <QSpinBox>
#include <QFormLayout>
#include <QDoubleSpinBox>
#include <QDialogButtonBox>
#include <QDialog>
#include <QCheckBox>
#include <QSignalBlocker>
#include <QAction>
#include <QMessageBox>
#include <QSaveFile>
#include <QVBoxLayout>
#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <exception>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <unordered_set>

#include "engine/config/component_info.h"
#include "widgets/plots/mean_and_sd.h"
#include "engine/records/evaluation_modes.h"
#include "engine/eval/metric_key.h"
#include "engine/session/run_config_view.h"
#include "engine/session/session.h"
#include "widgets/plots/decile_plot.h"
#include "widgets/file_dialogs.h"
#include "widgets/plots/plot_style.h"
#include "widgets/plots/metric_plot.h"
#include "widgets/plots/plot_export.h"

namespace xmc::gui {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

QString qstr(const std::string& s) { return QString::fromStdString(s); }

/// The start the names share, cut at a word or bracket boundary; "" when under 4 characters or fewer than
/// two names.
QString shared_name_prefix(const QStringList& names) {
  if (names.size() < 2) return {};
  QString prefix = names.front();
  for (const QString& n : names) {
    int i = 0;
    while (i < prefix.size() && i < n.size() && prefix[i] == n[i]) ++i;
    prefix.truncate(i);
  }
  if (std::all_of(names.begin(), names.end(), [&](const QString& n) { return n.size() == prefix.size(); })) return {};  // all equal
  const qsizetype cut = std::max(prefix.lastIndexOf(QLatin1Char(' ')), prefix.lastIndexOf(QLatin1Char('[')));
  prefix.truncate(cut < 0 ? 0 : cut);
  return prefix.trimmed().size() >= 4 ? prefix : QString();
}


/// One colour per run, the same in the table header and the loss plot (Tableau 10).
QColor run_colour(std::size_t i) {
  static const std::array<QColor, 10> palette = {
      QColor(0x1f, 0x77, 0xb4), QColor(0xff, 0x7f, 0x0e), QColor(0x2c, 0xa0, 0x2c), QColor(0xd6, 0x27, 0x28),
      QColor(0x94, 0x67, 0xbd), QColor(0x8c, 0x56, 0x4b), QColor(0xe3, 0x77, 0xc2), QColor(0x7f, 0x7f, 0x7f),
      QColor(0xbc, 0xbd, 0x22), QColor(0x17, 0xbe, 0xcf)};
  return palette[i % palette.size()];
}

QIcon colour_swatch(const QColor& colour) {
  QPixmap pixmap(12, 12);
  pixmap.fill(Qt::transparent);
  QPainter p(&pixmap);
  p.fillRect(QRect(1, 1, 10, 10), colour);
  return QIcon(pixmap);
}

/// Metric order as papers print them: family (P, nDCG, PSP, PSnDCG, R, others), then k; metrics of a
/// run's other inference modes ("emb/P@1", NGAME's separate heads) after the primary mode's.
auto metric_order(const std::string& name) {
  const MetricKey m = MetricKey::parse(name);
  return std::make_tuple(!m.is_primary(), m.mode, m.family_rank(), m.family, m.k < 0 ? std::numeric_limits<int>::max() : m.k);
}

bool metric_less(const std::string& a, const std::string& b) {
  const auto x = metric_order(a);
  const auto y = metric_order(b);
  return x < y || (x == y && a < b);
}

}  // namespace

// ---- the metric table ---------------------------------------------------------------------------------

class CompareView::MetricTableModel : public QAbstractTableModel {
 public:
  struct Value {
    double final_value = kNaN, final_epoch = kNaN, best_value = kNaN, best_epoch = kNaN;
  };
  struct Run {
    std::int64_t id = 0;
    QString label;  ///< "name (#id)"
    QColor colour;
    std::map<std::string, Value> metrics;
  };

  using QAbstractTableModel::QAbstractTableModel;

  void set_runs(std::vector<Run> runs) {
    beginResetModel();
    runs_ = std::move(runs);
    std::set<std::string, decltype(&metric_less)> names(&metric_less);
    for (const Run& r : runs_)
      for (const auto& [name, value] : r.metrics) names.insert(name);
    metrics_.assign(names.begin(), names.end());
    best_.assign(metrics_.size(), kNaN);
    for (std::size_t m = 0; m < metrics_.size(); ++m)
      for (const Run& r : runs_) {
        auto it = r.metrics.find(metrics_[m]);
        if (it == r.metrics.end() || std::isnan(it->second.final_value)) continue;
        if (std::isnan(best_[m]) || it->second.final_value > best_[m]) best_[m] = it->second.final_value;
      }
    endResetModel();
  }

  int rowCount(const QModelIndex& parent = {}) const override {
    return parent.isValid() ? 0 : static_cast<int>(metrics_.size());
  }
  int columnCount(const QModelIndex& parent = {}) const override {
    return parent.isValid() ? 0 : static_cast<int>(runs_.size());
  }

  QVariant data(const QModelIndex& index, int role) const override {
    if (!index.isValid() || index.row() >= rowCount() || index.column() >= columnCount()) return {};
    const std::size_t m = static_cast<std::size_t>(index.row());
    const Run& run = runs_[static_cast<std::size_t>(index.column())];
    auto it = run.metrics.find(metrics_[m]);
    const Value v = it == run.metrics.end() ? Value{} : it->second;
    const bool missing = std::isnan(v.final_value);
    switch (role) {
      case Qt::DisplayRole: return missing ? QStringLiteral("—") : QString::number(v.final_value * 100.0, 'f', 2);
      case Qt::UserRole: return missing ? QVariant() : QVariant(v.final_value);
      case Qt::TextAlignmentRole: return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
      case Qt::FontRole: {
        if (missing || runs_.size() < 2 || v.final_value != best_[m]) return {};
        QFont font;
        font.setBold(true);
        return font;
      }
      case Qt::ToolTipRole:
        if (missing) return QObject::tr("%1 did not report %2").arg(run.label, qstr(metrics_[m]));
        return QObject::tr("%1 — %2: final %3 % (epoch %4), best %5 % (epoch %6)")
            .arg(run.label, qstr(metrics_[m]), QString::number(v.final_value * 100.0, 'f', 2),
                 QString::number(v.final_epoch, 'g', 4), QString::number(v.best_value * 100.0, 'f', 2),
                 QString::number(v.best_epoch, 'g', 4));
      default: return {};
    }
  }

  QVariant headerData(int section, Qt::Orientation orientation, int role) const override {
    if (orientation == Qt::Horizontal) {
      if (section < 0 || section >= columnCount()) return {};
      const Run& run = runs_[static_cast<std::size_t>(section)];
      if (role == Qt::DisplayRole) return run.label;
      if (role == Qt::DecorationRole) return colour_swatch(run.colour);
      if (role == Qt::ToolTipRole) return QObject::tr("Final values of run %1, in %").arg(run.label);
      return {};
    }
    if (section < 0 || section >= rowCount()) return {};
    if (role == Qt::DisplayRole) return qstr(metrics_[static_cast<std::size_t>(section)]) + QStringLiteral(" (%)");
    return {};
  }

 private:
  std::vector<Run> runs_;
  std::vector<std::string> metrics_;  ///< rows, in metric_less order
  std::vector<double> best_;          ///< best final value of each row
};

// ---- the view -------------------------------------------------------------------------------------------

CompareView::CompareView(QWidget* parent) : QWidget(parent) {
  model_ = new MetricTableModel(this);

  title_ = new QLabel(tr("Select two or more runs to compare."), this);
  QFont title_font = title_->font();
  title_font.setBold(true);
  title_font.setPointSizeF(title_font.pointSizeF() * 1.15);
  title_->setFont(title_font);
  note_ = new QLabel(this);
  note_->setWordWrap(true);
  note_->setStyleSheet(QStringLiteral("color: #666;"));
  note_->hide();

  table_ = new QTableView(this);
  table_->setModel(model_);
  table_->setSelectionMode(QAbstractItemView::ContiguousSelection);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->setAlternatingRowColors(true);
  table_->setWordWrap(false);
  table_->verticalHeader()->setDefaultSectionSize(table_->fontMetrics().height() + 6);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table_->horizontalHeader()->setDefaultAlignment(Qt::AlignRight | Qt::AlignVCenter);

  // Right-click on the metric table: save it as CSV or as a LaTeX tabular.
  table_->setContextMenuPolicy(Qt::ActionsContextMenu);
  for (const auto& [label, format, filter] : {std::tuple{tr("Save the table as CSV…"), QStringLiteral("csv"), tr("CSV (*.csv)")},
                                              std::tuple{tr("Save the table as LaTeX…"), QStringLiteral("latex"), tr("LaTeX (*.tex)")}}) {
    auto* action = new QAction(label, table_);
    connect(action, &QAction::triggered, this, [this, format = format, filter = filter] {
      const QString path = save_file_name(this, tr("Save the metric table"), QString(), filter);
      if (path.isEmpty()) return;
      QSaveFile file(path);
      if (!file.open(QIODevice::WriteOnly) || file.write(metric_table_text(format).toUtf8()) < 0 || !file.commit())
        QMessageBox::warning(this, tr("Cannot save the table"), tr("%1: %2").arg(path, file.errorString()));
    });
    table_->addAction(action);
  }

  metric_plot_ = new MetricPlot(this);
  decile_plot_ = new DecilePlot(this);
  // Beside a runs table the comparison may be short, but not so short that a plot's title and legends (four runs'
  // names in two rows, the metrics' row) leave its curves a strip: below this the Runs tab scrolls instead.
  constexpr int kPlotMinimumHeight = 300;
  metric_plot_->setMinimumSize(320, kPlotMinimumHeight);
  decile_plot_->setMinimumSize(320, kPlotMinimumHeight);

  loss_plot_ = new QCustomPlot(this);
  loss_plot_->setWindowTitle(tr("Training loss"));
  loss_plot_->plotLayout()->insertRow(0);
  loss_plot_->plotLayout()->addElement(
      0, 0, new QCPTextElement(loss_plot_, tr("Training loss (smoothed)"), QFont(font().family(), 11, QFont::Bold)));
  loss_plot_->xAxis->setLabel(tr("step"));
  loss_plot_->yAxis->setLabel(tr("loss"));
  // The runs' legend in a row of its own under the title, never over a panel's curves (stacked panels are short).
  loss_plot_->axisRect()->insetLayout()->take(loss_plot_->legend);
  plot_style::style_legend(loss_plot_->legend);
  loss_plot_->plotLayout()->insertRow(1);
  plot_style::add_centred_row(loss_plot_, 1, loss_plot_->legend);
  loss_plot_->plotLayout()->setRowStretchFactor(1, 0.001);
  plot_style::keep_legend_fitting(loss_plot_, loss_plot_->legend, 4);
  plot_style::keep_ticks_readable(loss_plot_);  // stacked panels are short: fewer ticks, never overlapping
  loss_plot_->legend->setVisible(false);  // shown once runs with a loss are drawn
  loss_plot_->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
  loss_plot_->setMinimumSize(320, kPlotMinimumHeight);
  plot_style::add_empty_note(loss_plot_, tr("no training loss to show"));
  add_export_menu(loss_plot_, this);

  config_label_ = new QLabel(this);
  config_table_ = new QTableWidget(this);
  config_table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  config_table_->setWordWrap(false);
  config_table_->verticalHeader()->setDefaultSectionSize(table_->fontMetrics().height() + 6);
  config_table_->setToolTip(tr("Config keys whose values differ between the runs"));
  config_table_->hide();
  auto* tables = new QSplitter(Qt::Vertical, this);
  auto* config_box = new QWidget(this);
  auto* config_layout = new QVBoxLayout(config_box);
  config_layout->setContentsMargins(0, 0, 0, 0);
  config_layout->addWidget(config_label_);
  config_layout->addWidget(config_table_, 1);
  tables->addWidget(table_);
  tables->addWidget(config_box);
  tables->setStretchFactor(0, 3);
  tables->setStretchFactor(1, 2);
  loss_margins_ = new QCPMarginGroup(loss_plot_);

  top_ = new QSplitter(Qt::Horizontal, this);
  top_->addWidget(tables);
  top_->addWidget(metric_plot_);
  top_->setStretchFactor(0, 0);
  top_->setStretchFactor(1, 1);
  // A config key against a metric over the runs (a sweep's lr against P@5): one point per run, in its colour.
  auto* scatter_box = new QWidget(this);
  auto* scatter_layout = new QVBoxLayout(scatter_box);
  scatter_layout->setContentsMargins(0, 0, 0, 0);
  auto* scatter_choice = new QHBoxLayout;
  scatter_key_ = new QComboBox(scatter_box);
  scatter_key_->setToolTip(tr("Config key (those that differ between the runs)"));
  scatter_metric_ = new QComboBox(scatter_box);
  scatter_metric_->setToolTip(tr("Metric (final value)"));
  scatter_choice->addWidget(scatter_key_, 1);
  scatter_choice->addWidget(new QLabel(tr("against"), scatter_box));
  scatter_choice->addWidget(scatter_metric_, 1);
  scatter_layout->addLayout(scatter_choice);
  scatter_plot_ = new QCustomPlot(scatter_box);
  scatter_plot_->setMinimumSize(260, 200);
  plot_style::add_empty_note(scatter_plot_, tr("select runs whose configs differ"));
  add_export_menu(scatter_plot_, this);
  // Parallel coordinates: every numeric key that differs, then the metric, each axis from its smallest to
  // its largest value over the runs; a run is a line in its colour.
  parallel_plot_ = new QCustomPlot(scatter_box);
  parallel_plot_->setMinimumSize(260, 200);
  parallel_plot_->yAxis->setVisible(false);
  parallel_plot_->xAxis->grid()->setVisible(false);
  parallel_plot_->yAxis->grid()->setVisible(false);
  add_export_menu(parallel_plot_, this);
  auto* views = new QTabWidget(scatter_box);
  views->addTab(scatter_plot_, tr("Scatter"));
  views->addTab(parallel_plot_, tr("Parallel coordinates"));
  scatter_layout->addWidget(views, 1);
  connect(scatter_key_, &QComboBox::currentTextChanged, this, [this] { update_scatter(); });
  connect(scatter_metric_, &QComboBox::currentTextChanged, this, [this] { update_scatter(); });

  auto* bottom = new QSplitter(Qt::Horizontal, this);
  bottom->addWidget(decile_plot_);
  bottom->addWidget(loss_plot_);
  bottom->addWidget(scatter_box);
  bottom->setStretchFactor(0, 1);
  bottom->setStretchFactor(1, 1);
  bottom->setStretchFactor(2, 1);
  bottom->setSizes({450, 450, 400});
  auto* split = new QSplitter(Qt::Vertical, this);
  split->addWidget(top_);
  split->addWidget(bottom);
  split->setChildrenCollapsible(false);

  auto* export_button = new QToolButton(this);
  export_button->setText(tr("Export the comparison"));
  export_button->setToolTip(tr("The charts and table you choose, laid out afresh as one figure at a paper's width (PNG, SVG or PDF)"));
  connect(export_button, &QToolButton::clicked, this, [this] { ask_and_export_figure(); });
  seed_button_ = new QToolButton(this);
  seed_button_->setText(tr("Seeds: mean ± sd"));
  seed_button_->setCheckable(true);
  seed_button_->setEnabled(false);
  connect(seed_button_, &QToolButton::toggled, this, [this](bool on) {
    if (on != seed_bands_) set_seed_bands(on);
  });
  auto* title_row = new QHBoxLayout;
  title_row->addWidget(title_, 1);
  title_row->addWidget(seed_button_);
  title_row->addWidget(export_button);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(title_row);
  layout->addWidget(note_);
  layout->addWidget(split, 1);
}

CompareView::~CompareView() = default;

QAbstractItemModel* CompareView::metric_model() const { return model_; }

QString CompareView::note() const { return note_->text(); }

void CompareView::set_runs(const Session& session, std::vector<std::int64_t> runs) {
  QStringList notes;
  std::vector<MetricTableModel::Run> columns;
  std::vector<std::vector<EvalPoint>> evaluations;
  std::vector<CurveRun> curve_runs;
  std::vector<std::int64_t> shown;
  QStringList run_names;
  std::unordered_set<std::int64_t> seen;
  for (std::int64_t id : runs) {
    if (!seen.insert(id).second) continue;
    try {
      const std::optional<RunInfo> info = session.find_run(id);
      if (!info) {
        notes << tr("Run %1 does not exist (deleted?).").arg(id);
        continue;
      }
      MetricTableModel::Run column;
      column.id = id;
      column.label = tr("%1 (#%2)").arg(qstr(info->name)).arg(id);
      run_names.push_back(qstr(info->name));
      column.colour = run_colour(columns.size());
      std::vector<EvalPoint> points = without_primary_copies(session.evaluations(id));
      for (const EvalPoint& p : points) {
        auto& v = column.metrics[p.metric];
        v.final_value = p.value;  // by step: the last one is the final one
        v.final_epoch = p.epoch;
        if (!std::isnan(p.value) && (std::isnan(v.best_value) || p.value > v.best_value)) {
          v.best_value = p.value;
          v.best_epoch = p.epoch;
        }
      }
      CurveRun curve;
      curve.id = id;
      curve.colour = column.colour;
      curve.evaluations = points;
      curve.seedless_flat = *flat_run_config(info->config_json);
      curve.seedless_flat.erase("seed");
      curve.seedless_flat.erase("name");
      for (const auto& [key, value] : curve.seedless_flat) curve.seedless_config += key + '=' + value + '\n';
      if (curve.seedless_flat.empty()) curve.seedless_config = "run " + std::to_string(id);  // unreadable: a group of its own
      curve_runs.push_back(std::move(curve));
      columns.push_back(std::move(column));
      evaluations.push_back(std::move(points));
      shown.push_back(id);
    } catch (const std::exception& e) {
      notes << QString::fromUtf8(e.what());
    }
  }
  runs_ = shown;
  // Runs of one sweep or preset share most of their name ("dexml bow on Bibtex [lr=…]"): the charts and
  // columns name them by what differs, the title by what they share.
  common_name_ = shared_name_prefix(run_names);
  if (!common_name_.isEmpty())
    for (std::size_t i = 0; i < columns.size(); ++i) {
      QString rest = run_names[i].mid(common_name_.size()).trimmed();
      if (rest.startsWith(QLatin1Char('[')) && rest.endsWith(QLatin1Char(']'))) rest = rest.mid(1, rest.size() - 2);
      columns[i].label = tr("%1 (#%2)").arg(rest.isEmpty() ? run_names[i] : rest).arg(columns[i].id);
    }

  // The metric curves: a run (or a seed group) per colour; only the table's headline metrics by default.
  for (std::size_t i = 0; i < curve_runs.size(); ++i) curve_runs[i].label = columns[i].label;
  curve_runs_ = std::move(curve_runs);
  const std::vector<std::vector<std::size_t>> groups = seed_groups();
  const bool grouped = groups.size() < curve_runs_.size();
  seed_button_->setEnabled(grouped);
  seed_button_->setToolTip(grouped ? tr("Draw each group of runs that differ only in their seed as its mean ± sd")
                                   : tr("No two of these runs differ only in their seed"));
  draw_metric_curves(/*headline_metrics=*/true);
  const std::size_t curves = seed_bands_ && grouped ? groups.size() : curve_runs_.size();
  if (curves > static_cast<std::size_t>(kMaxOverlaidRuns))
    notes << (seed_bands_ && grouped ? tr("The curves show the first %1 of the %2 seed groups.") : tr("The curves show the first %1 of the %2 runs."))
                 .arg(kMaxOverlaidRuns)
                 .arg(curves);

  // Decile bars: P@5 of each run (the first run's metric when it has no P@5 table), drawn for the first runs or
  // seed groups side by side.
  decile_bins_.assign(columns.size(), {});
  decile_metric_ = "P@5";
  std::size_t with_bins = 0;
  try {
    for (std::size_t i = 0; i < columns.size(); ++i) {
      std::vector<double> bins = session.latest_decile_table(columns[i].id, decile_metric_);
      if (bins.size() != 10 && with_bins == 0) {
        const std::vector<DecileTable> tables = session.decile_tables(columns[i].id);
        if (!tables.empty()) {
          decile_metric_ = tables.back().metric;
          bins = session.latest_decile_table(columns[i].id, decile_metric_);
        }
      }
      if (bins.size() == 10) decile_bins_[i] = std::move(bins), ++with_bins;
    }
  } catch (const std::exception& e) {
    notes << QString::fromUtf8(e.what());
  }
  draw_decile_bars();
  if (with_bins > static_cast<std::size_t>(DecilePlot::kMaxRuns) && !(seed_bands_ && grouped))
    notes << tr("The decile bars show the first %1 of the %2 runs.").arg(DecilePlot::kMaxRuns).arg(columns.size());
  else if (columns.size() >= 2 && with_bins < columns.size())
    notes << tr("Decile tables: %1 of the %2 runs recorded one.").arg(with_bins).arg(columns.size());

  model_->set_runs(std::move(columns));
  table_->resizeColumnsToContents();
  // Wide enough for every run's column (up to a limit; more runs scroll), the plot takes the rest.
  int table_width = table_->verticalHeader()->sizeHint().width() + 2 * table_->frameWidth() +
                    table_->verticalScrollBar()->sizeHint().width() + 4;
  for (int c = 0; c < model_->columnCount(); ++c) table_width += table_->columnWidth(c);
  top_->setSizes({std::min(table_width, 720), std::max(400, width() - std::min(table_width, 720))});  // the splitter moves it

  show_config_differences(session);
  show_loss(session);

  title_->setText(runs_.size() >= 2 ? (common_name_.isEmpty() ? tr("Comparing %1 runs").arg(runs_.size())
                                                               : tr("Comparing %1 runs of “%2”").arg(runs_.size()).arg(common_name_.trimmed())) +
                                          tr(" — final metrics in %; the best value of each row in bold")
                                    : tr("Select two or more runs to compare."));
  note_->setText(notes.join(QLatin1Char(' ')));
  note_->setVisible(!notes.isEmpty());
}

std::vector<std::vector<std::size_t>> CompareView::seed_groups() const {
  std::vector<std::vector<std::size_t>> groups;
  std::map<std::string, std::size_t> by_config;
  for (std::size_t i = 0; i < curve_runs_.size(); ++i) {
    const auto [it, fresh] = by_config.emplace(curve_runs_[i].seedless_config, groups.size());
    if (fresh) groups.emplace_back();
    groups[it->second].push_back(i);
  }
  return groups;
}

QString CompareView::seed_group_label(const std::vector<std::size_t>& group, const std::vector<std::vector<std::size_t>>& groups) const {
  // Named by the config values that set it apart from the other groups ("lr=0.001"); else by its first run.
  const auto& flat = curve_runs_[group.front()].seedless_flat;
  QStringList apart;
  for (const auto& [key, value] : flat) {
    bool differs = false;
    for (const auto& other : groups) {
      const auto& theirs = curve_runs_[other.front()].seedless_flat;
      const auto it = theirs.find(key);
      differs = differs || it == theirs.end() || it->second != value;
    }
    if (differs && apart.size() < 3) apart << qstr(key + "=" + value);
  }
  QString name = apart.isEmpty() ? curve_runs_[group.front()].label : apart.join(QStringLiteral(", "));
  if (group.size() > 1) name += tr(" — %1 seeds").arg(group.size());
  return name;
}

QStringList CompareView::seed_group_labels() const {
  QStringList labels;
  const auto groups = seed_groups();
  for (const auto& g : groups) labels << seed_group_label(g, groups);
  // Names from at most three keys can coincide (groups set apart by a fourth); the curves are kept by name.
  for (std::size_t i = 0; i < groups.size(); ++i)
    if (labels.count(labels[static_cast<int>(i)]) > 1) labels[static_cast<int>(i)] += tr(" (#%1)").arg(curve_runs_[groups[i].front()].id);
  return labels;
}

void CompareView::set_seed_bands(bool on) {
  seed_bands_ = on;
  if (seed_button_->isChecked() != on) seed_button_->setChecked(on);
  draw_metric_curves(/*headline_metrics=*/false);
  draw_decile_bars();
  draw_losses();
}

void CompareView::draw_decile_bars() {
  struct Bars {
    QString label;
    QColor colour;
    std::array<double, 10> bins{};
  };
  std::vector<Bars> drawn;
  const auto groups = seed_groups();
  if (seed_bands_ && groups.size() < curve_runs_.size()) {
    const QStringList labels = seed_group_labels();
    for (std::size_t g = 0; g < groups.size(); ++g) {
      // The mean of the group's runs that recorded a table, bin by bin.
      Bars bars{labels[static_cast<int>(g)], curve_runs_[groups[g].front()].colour, {}};
      int runs = 0;
      for (const std::size_t i : groups[g]) {
        if (i >= decile_bins_.size() || decile_bins_[i].size() != 10) continue;
        for (std::size_t b = 0; b < 10; ++b) bars.bins[b] += decile_bins_[i][b];
        ++runs;
      }
      if (runs == 0) continue;
      for (double& bin : bars.bins) bin /= runs;
      drawn.push_back(bars);
    }
  } else {
    for (std::size_t i = 0; i < curve_runs_.size() && i < decile_bins_.size(); ++i)
      if (decile_bins_[i].size() == 10) drawn.push_back({curve_runs_[i].label, curve_runs_[i].colour, *DecilePlot::bars_of(decile_bins_[i])});
  }
  if (drawn.size() > static_cast<std::size_t>(DecilePlot::kMaxRuns)) drawn.resize(DecilePlot::kMaxRuns);
  decile_plot_->clear();
  decile_plot_->set_metric(QString::fromStdString(decile_metric_));
  for (std::size_t b = 0; b < drawn.size(); ++b) {
    if (b == 0) decile_plot_->set_bars(drawn[b].label, drawn[b].bins);
    else decile_plot_->add_overlay(drawn[b].label, drawn[b].bins);
    decile_plot_->set_run_colour(b, drawn[b].colour);  // as in the table and the curves
  }
}

void CompareView::draw_metric_curves(bool headline_metrics) {
  metric_plot_->clear();  // the plot keeps which metrics are shown
  if (curve_runs_.empty()) return;
  struct Curve {
    QString label;
    QColor colour;
    std::vector<EvalPoint> mean, sd;
  };
  std::vector<Curve> curves;
  const auto groups = seed_groups();
  if (seed_bands_ && groups.size() < curve_runs_.size()) {
    const QStringList labels = seed_group_labels();
    for (std::size_t g = 0; g < groups.size(); ++g) {
      const auto& group = groups[g];
      // Mean and sample sd by (metric, epoch) over the group's runs that have the point (a seed that failed
      // early adds nothing after its last evaluation).
      std::map<std::pair<std::string, double>, std::vector<double>> values;
      for (const std::size_t i : group)
        for (const EvalPoint& p : curve_runs_[i].evaluations)
          if (std::isfinite(p.value)) values[{p.metric, p.epoch}].push_back(p.value);
      Curve c{labels[static_cast<int>(g)], curve_runs_[group.front()].colour, {}, {}};
      for (const auto& [key, v] : values) {
        const MeanAndSd spread = mean_and_sd(v);
        c.mean.push_back({key.second, 0, key.first, spread.mean});
        if (!std::isnan(spread.sd)) c.sd.push_back({key.second, 0, key.first, spread.sd});
      }
      auto by_epoch = [](const EvalPoint& a, const EvalPoint& b) { return a.epoch < b.epoch; };
      std::stable_sort(c.mean.begin(), c.mean.end(), by_epoch);
      std::stable_sort(c.sd.begin(), c.sd.end(), by_epoch);
      curves.push_back(std::move(c));
    }
  } else {
    for (const CurveRun& r : curve_runs_) curves.push_back({r.label, r.colour, r.evaluations, {}});
  }
  const std::size_t overlaid = std::min<std::size_t>(curves.size(), kMaxOverlaidRuns);
  // One colour per run (or group), as in the table, the decile bars and the losses; metric families by line style.
  metric_plot_->set_run_colour(curves.front().colour);
  metric_plot_->set_run_label(curves.front().label);
  metric_plot_->set_evaluations(curves.front().mean);
  for (std::size_t i = 1; i < overlaid; ++i) metric_plot_->add_comparison_run(curves[i].label, curves[i].mean, curves[i].colour);
  for (std::size_t i = 0; i < overlaid; ++i)
    if (!curves[i].sd.empty()) metric_plot_->set_band(curves[i].label, curves[i].sd);
  if (!headline_metrics) return;
  // Two runs of nine curves each are unreadable: start with the runs table's headline metrics (P@1, P@5,
  // PSP@5); the others are one right click away.
  const QStringList names = metric_plot_->metric_names();
  const QStringList headline = {QStringLiteral("P@1"), QStringLiteral("P@5"), QStringLiteral("PSP@5")};
  if (std::any_of(headline.begin(), headline.end(), [&](const QString& m) { return names.contains(m); }))
    for (const QString& m : names) metric_plot_->set_metric_visible(m, headline.contains(m));
}

void CompareView::show_config_differences(const Session& session) {
  std::vector<std::map<std::string, std::string>> configs;  // by run, in column order: the values used
  std::vector<std::map<std::string, std::string>> chosen;     // by run: how a value it chose while training is shown
  for (std::int64_t id : runs_) {
    std::map<std::string, std::string> flat;
    std::map<std::string, std::string> chose;
    try {
      flat = *flat_run_config(session.get_run(id).config_json);
      // What the run used is what it is compared (and plotted) by; the cell says it was chosen.
      for (const ChosenSetting& c : session.chosen_settings(id)) {
        const auto configured = flat.find(c.key);
        chose[c.key] = chosen_value_text(c, configured == flat.end() ? std::string() : configured->second);
        flat[c.key] = QString::number(c.value, 'g', 6).toStdString();
      }
    } catch (const std::exception&) {
    }
    configs.push_back(std::move(flat));
    chosen.push_back(std::move(chose));
  }
  std::set<std::string> keys;
  for (const auto& c : configs)
    for (const auto& [key, value] : c) keys.insert(key);
  std::vector<std::string> differing;
  for (const auto& key : keys) {
    std::set<std::string> values;
    for (const auto& c : configs) {
      const auto it = c.find(key);
      values.insert(it == c.end() ? std::string("—") : it->second);
    }
    // The name differs between any two runs and says nothing about how they were trained.
    if (values.size() > 1 && key != "name") differing.push_back(key);
  }
  config_table_->clear();
  config_table_->setRowCount(static_cast<int>(differing.size()));
  config_table_->setColumnCount(static_cast<int>(runs_.size()));
  QStringList headers;
  for (int c = 0; c < static_cast<int>(runs_.size()); ++c) {
    headers << model_->headerData(c, Qt::Horizontal, Qt::DisplayRole).toString();
    auto* header = new QTableWidgetItem(headers.back());
    header->setIcon(model_->headerData(c, Qt::Horizontal, Qt::DecorationRole).value<QIcon>());
    config_table_->setHorizontalHeaderItem(c, header);
  }
  for (int r = 0; r < static_cast<int>(differing.size()); ++r) {
    config_table_->setVerticalHeaderItem(r, new QTableWidgetItem(qstr(differing[static_cast<std::size_t>(r)])));
    for (int c = 0; c < static_cast<int>(runs_.size()); ++c) {
      const auto& config = configs[static_cast<std::size_t>(c)];
      const std::string& key = differing[static_cast<std::size_t>(r)];
      const auto it = config.find(key);
      QString text = it == config.end() ? QStringLiteral("—") : qstr(it->second);
      const auto& chose = chosen[static_cast<std::size_t>(c)];
      if (const auto was = chose.find(key); was != chose.end()) text = qstr(was->second);
      auto* item = new QTableWidgetItem(text);
      item->setToolTip(item->text());
      item->setFlags(Qt::ItemIsSelectable | Qt::ItemIsEnabled);
      config_table_->setItem(r, c, item);
    }
  }
  config_table_->resizeColumnsToContents();
  configs_ = std::move(configs);
  {
    const QString key = scatter_key_->currentText(), metric = scatter_metric_->currentText();
    const QSignalBlocker block_key(scatter_key_), block_metric(scatter_metric_);
    scatter_key_->clear();
    for (const auto& k : differing) scatter_key_->addItem(qstr(k));
    scatter_metric_->clear();
    for (int r = 0; r < model_->rowCount(); ++r)
      scatter_metric_->addItem(model_->headerData(r, Qt::Vertical, Qt::DisplayRole).toString().remove(QStringLiteral(" (%)")));
    // Keep the user's choice across selections; start with the first numeric key (lr over method) and P@5.
    int key_index = scatter_key_->findText(key);
    for (int i = 0; key_index < 0 && i < scatter_key_->count(); ++i)
      if (numeric_config_values(scatter_key_->itemText(i).toStdString())) key_index = i;
    scatter_key_->setCurrentIndex(std::max(0, key_index));
    const int metric_index = scatter_metric_->findText(metric.isEmpty() ? QStringLiteral("P@5") : metric);
    scatter_metric_->setCurrentIndex(metric_index >= 0 ? metric_index : 0);
  }
  update_scatter();
  config_label_->setText(runs_.size() < 2 ? QString()
                         : differing.empty() ? tr("The runs' configurations are the same.")
                                             : tr("Configuration: the %n key(s) that differ", nullptr, static_cast<int>(differing.size())));
  config_table_->setVisible(!differing.empty());
}

QString CompareView::metric_table_text(const QString& format) const {
  const bool latex = format == QLatin1String("latex");
  const int columns = model_->columnCount();
  const auto escape_latex = [](const QString& s) {
    QString out;
    for (const QChar c : s) {
      if (c == QLatin1Char('\\'))
        out += QStringLiteral("\\textbackslash{}");
      else if (QStringLiteral("&%$#_{}").contains(c))
        out += QLatin1Char('\\') + c;
      else
        out += c;
    }
    return out;
  };
  const auto csv_field = [](const QString& s) {
    if (!s.contains(QLatin1Char(',')) && !s.contains(QLatin1Char('"')) && !s.contains(QLatin1Char('\n'))) return s;
    return QLatin1Char('"') + QString(s).replace(QStringLiteral("\""), QStringLiteral("\"\"")) + QLatin1Char('"');
  };
  QString out;
  if (latex) {
    out += QStringLiteral("\\begin{tabular}{l") + QString(columns, QLatin1Char('r')) + QStringLiteral("}\n\\hline\n");
    out += QStringLiteral("metric (\\%)");
    for (int c = 0; c < columns; ++c) out += QStringLiteral(" & ") + escape_latex(model_->headerData(c, Qt::Horizontal, Qt::DisplayRole).toString());
    out += QStringLiteral(" \\\\\n\\hline\n");
  } else {
    out += QStringLiteral("metric");
    for (int c = 0; c < columns; ++c) out += QLatin1Char(',') + csv_field(model_->headerData(c, Qt::Horizontal, Qt::DisplayRole).toString());
    out += QLatin1Char('\n');
  }
  for (int r = 0; r < model_->rowCount(); ++r) {
    const QString metric = model_->headerData(r, Qt::Vertical, Qt::DisplayRole).toString().remove(QStringLiteral(" (%)"));
    out += latex ? escape_latex(metric) : csv_field(metric);
    for (int c = 0; c < columns; ++c) {
      const QModelIndex index = model_->index(r, c);
      const QVariant raw = index.data(Qt::UserRole);
      const QString value = raw.isValid() ? QString::number(raw.toDouble() * 100.0, 'f', 2) : QString();
      const bool best = index.data(Qt::FontRole).value<QFont>().bold();
      if (latex)
        out += QStringLiteral(" & ") + (value.isEmpty() ? QStringLiteral("--") : best ? QStringLiteral("\\textbf{%1}").arg(value) : value);
      else
        out += QLatin1Char(',') + value;
    }
    out += latex ? QStringLiteral(" \\\\\n") : QStringLiteral("\n");
  }
  if (latex) out += QStringLiteral("\\hline\n\\end{tabular}\n");
  return out;
}

namespace {

/// Room around a range of points: a tenth of its size, or of its value when all points are equal.
double pad_of(const QCPRange& r) {
  if (r.size() > 0) return 0.1 * r.size();
  return std::abs(r.lower) > 0 ? 0.1 * std::abs(r.lower) : 1.0;
}

}  // namespace

std::optional<std::vector<double>> CompareView::numeric_config_values(const std::string& key) const {
  std::vector<double> out;
  for (const auto& config : configs_) {
    const auto it = config.find(key);
    bool ok = it == config.end();
    out.push_back(ok ? std::numeric_limits<double>::quiet_NaN() : qstr(it->second).toDouble(&ok));
    if (!ok) return std::nullopt;
  }
  return out;
}

void CompareView::update_scatter() {
  scatter_plot_->clearGraphs();
  scatter_plot_->clearItems();
  plot_style::add_empty_note(scatter_plot_, tr("select runs whose configs differ"));
  scatter_points_.clear();
  const std::string key = scatter_key_->currentText().toStdString();
  const QString metric = scatter_metric_->currentText();
  int row = -1;
  for (int r = 0; r < model_->rowCount(); ++r)
    if (model_->headerData(r, Qt::Vertical, Qt::DisplayRole).toString().remove(QStringLiteral(" (%)")) == metric) row = r;
  update_parallel(row);
  if (key.empty() || row < 0 || configs_.size() != static_cast<std::size_t>(model_->columnCount())) {
    scatter_plot_->replot();
    return;
  }
  // Numbers on a number line; other values (a method, a loss) as categories in order of appearance.
  std::vector<QString> values;
  for (const auto& config : configs_) {
    const auto it = config.find(key);
    values.push_back(it == config.end() ? QStringLiteral("—") : qstr(it->second));
  }
  const auto numbers = numeric_config_values(key);  // a run without the key makes the axis one of categories
  const bool numeric = numbers && std::none_of(numbers->begin(), numbers->end(), [](double v) { return std::isnan(v); });
  QStringList categories;
  for (const QString& v : values)
    if (!categories.contains(v)) categories << v;
  for (std::size_t c = 0; c < values.size(); ++c) {
    const QVariant raw = model_->index(row, static_cast<int>(c)).data(Qt::UserRole);
    if (!raw.isValid()) continue;
    const double x = numeric ? (*numbers)[c] : static_cast<double>(categories.indexOf(values[c]));
    const double y = raw.toDouble() * 100.0;
    scatter_points_.emplace_back(x, y);
    QCPGraph* point = scatter_plot_->addGraph();
    point->setLineStyle(QCPGraph::lsNone);
    const QColor colour = run_colour(c);
    point->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, colour, colour, 9));
    point->setName(model_->headerData(static_cast<int>(c), Qt::Horizontal, Qt::DisplayRole).toString());
    point->addData(x, y);
  }
  scatter_plot_->xAxis->setLabel(qstr(key));
  scatter_plot_->yAxis->setLabel(metric + QStringLiteral(" (%)"));
  if (!numeric) {
    auto ticker = QSharedPointer<QCPAxisTickerText>::create();
    for (int i = 0; i < categories.size(); ++i) ticker->addTick(i, categories[i]);
    scatter_plot_->xAxis->setTicker(ticker);
  } else {
    scatter_plot_->xAxis->setTicker(QSharedPointer<QCPAxisTicker>::create());
  }
  // A log axis for values spanning decades (learning rates, temperatures).
  double lo = 0, hi = 0;
  for (std::size_t i = 0; i < scatter_points_.size(); ++i) {
    lo = i == 0 ? scatter_points_[i].first : std::min(lo, scatter_points_[i].first);
    hi = i == 0 ? scatter_points_[i].first : std::max(hi, scatter_points_[i].first);
  }
  const bool log = numeric && lo > 0 && hi >= 10 * lo;
  scatter_plot_->xAxis->setScaleType(log ? QCPAxis::stLogarithmic : QCPAxis::stLinear);
  if (log) scatter_plot_->xAxis->setTicker(QSharedPointer<QCPAxisTickerLog>::create());
  scatter_plot_->rescaleAxes();
  const QCPRange x = scatter_plot_->xAxis->range(), y = scatter_plot_->yAxis->range();
  if (log) {
    // At least 1.7 decades: under 1.6 QCustomPlot's log ticker falls back to linear steps, which crowd the
    // right end of a log axis ("0.0075 0.01 0.0125" overprinting).
    const double factor = std::max(1.5, std::sqrt(std::pow(10.0, 1.7) / (x.upper / x.lower)));
    scatter_plot_->xAxis->setRange(x.lower / factor, x.upper * factor);
  }
  else if (numeric)  // a tenth of the spread around the points (learning rates are thousandths)
    scatter_plot_->xAxis->setRange(x.lower - pad_of(x), x.upper + pad_of(x));
  else
    scatter_plot_->xAxis->setRange(x.lower - 0.5, x.upper + 0.5);  // categories
  scatter_plot_->yAxis->setRange(y.lower - pad_of(y), y.upper + pad_of(y));
  scatter_plot_->replot();
}

void CompareView::update_parallel(int metric_row) {
  parallel_plot_->clearGraphs();
  parallel_plot_->clearItems();
  parallel_lines_.clear();
  const int runs = model_->columnCount();
  if (runs < 2 || configs_.size() != static_cast<std::size_t>(runs)) {
    parallel_plot_->replot();
    return;
  }
  // The axes: numeric config keys that differ (a log scale when they span decades), then the metric.
  struct Axis {
    QString name;
    std::vector<double> values;  // per run; NaN = missing
    bool log = false;
  };
  std::vector<Axis> axes;
  for (int k = 0; k < scatter_key_->count(); ++k)
    if (auto numbers = numeric_config_values(scatter_key_->itemText(k).toStdString()))
      axes.push_back({scatter_key_->itemText(k), std::move(*numbers), false});
  if (metric_row >= 0) {
    Axis axis{scatter_metric_->currentText() + QStringLiteral(" (%)"), {}, false};
    for (int c = 0; c < runs; ++c) {
      const QVariant raw = model_->index(metric_row, c).data(Qt::UserRole);
      axis.values.push_back(raw.isValid() ? raw.toDouble() * 100.0 : std::numeric_limits<double>::quiet_NaN());
    }
    axes.push_back(std::move(axis));
  }
  auto ticker = QSharedPointer<QCPAxisTickerText>::create();
  std::vector<std::pair<double, double>> ranges;
  for (std::size_t a = 0; a < axes.size(); ++a) {
    Axis& axis = axes[a];
    double lo = std::numeric_limits<double>::max(), hi = std::numeric_limits<double>::lowest();
    for (double v : axis.values)
      if (!std::isnan(v)) lo = std::min(lo, v), hi = std::max(hi, v);
    axis.log = lo > 0 && hi >= 10 * lo && a + 1 < axes.size();
    ranges.emplace_back(lo, hi);
    ticker->addTick(static_cast<double>(a), axis.name);
    auto* line = new QCPItemStraightLine(parallel_plot_);
    line->point1->setCoords(static_cast<double>(a), 0);
    line->point2->setCoords(static_cast<double>(a), 1);
    line->setPen(QPen(QColor(0x88, 0x88, 0x88), 1));
    for (const auto& [y, value, align] : {std::tuple{1.0, hi, Qt::AlignBottom}, std::tuple{0.0, lo, Qt::AlignTop}}) {
      auto* text = new QCPItemText(parallel_plot_);
      text->position->setCoords(static_cast<double>(a), y);
      text->setPositionAlignment(align | Qt::AlignHCenter);
      text->setText(lo <= hi ? QString::number(value, 'g', 4) : QString());
      text->setColor(QColor(0x55, 0x55, 0x55));
    }
  }
  for (int c = 0; c < runs; ++c) {
    std::vector<double> line;
    QCPGraph* graph = parallel_plot_->addGraph();
    graph->setPen(QPen(run_colour(static_cast<std::size_t>(c)), 2));
    graph->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, 6));
    for (std::size_t a = 0; a < axes.size(); ++a) {
      const double v = axes[a].values[static_cast<std::size_t>(c)];
      const auto [lo, hi] = ranges[a];
      double t = 0.5;
      if (std::isnan(v)) {
        t = std::numeric_limits<double>::quiet_NaN();
      } else if (hi > lo) {
        t = axes[a].log ? (std::log(v) - std::log(lo)) / (std::log(hi) - std::log(lo)) : (v - lo) / (hi - lo);
      }
      line.push_back(t);
      if (!std::isnan(t)) graph->addData(static_cast<double>(a), t);
    }
    parallel_lines_.push_back(std::move(line));
  }
  parallel_plot_->xAxis->setTicker(ticker);
  parallel_plot_->xAxis->setRange(-0.4, static_cast<double>(axes.size()) - 0.6);
  parallel_plot_->yAxis->setRange(-0.12, 1.12);
  parallel_plot_->replot();
}

void CompareView::set_scatter(const QString& key, const QString& metric) {
  scatter_key_->setCurrentText(key);
  scatter_metric_->setCurrentText(metric);
  update_scatter();
}

QStringList CompareView::config_difference_keys() const {
  QStringList keys;
  for (int r = 0; r < config_table_->rowCount(); ++r) keys << config_table_->verticalHeaderItem(r)->text();
  return keys;
}

void CompareView::show_loss(const Session& session) {
  loss_plot_->clearGraphs();
  loss_series_.clear();
  // One panel per kind of loss (a triplet loss and a softmax do not share a scale), each with its runs in
  // their colours; the first panel is the plot's own axis rect, the others are added below it.
  QCPLayoutGrid* layout = loss_plot_->plotLayout();
  while (loss_plot_->axisRectCount() > 1) layout->remove(loss_plot_->axisRect(loss_plot_->axisRectCount() - 1));
  layout->simplify();
  std::vector<std::pair<std::string, std::vector<std::size_t>>> kinds;  // loss kind -> runs (in column order)
  const std::size_t overlaid = std::min<std::size_t>(runs_.size(), kMaxOverlaidRuns);
  for (std::size_t i = 0; i < overlaid; ++i) {
    std::string kind = "loss";
    try {
      const auto config = flat_run_config(session.get_run(runs_[i]).config_json);
      const std::string method = config_value_or(*config, "method");
      kind = config_value_or(*config, "loss", kind);
      if (method_info(method).loss_sums_terms) kind = method + " " + kind;  // e.g. a sum of DE and CLF terms
    } catch (const std::exception&) {
    }
    auto it = std::find_if(kinds.begin(), kinds.end(), [&](const auto& k) { return k.first == kind; });
    if (it == kinds.end()) it = kinds.insert(kinds.end(), {kind, {}});
    it->second.push_back(i);
  }
  loss_kinds_.clear();
  for (std::size_t k = 0; k < kinds.size(); ++k) {
    QCPAxisRect* rect = loss_plot_->axisRect(0);
    if (k > 0) {
      rect = new QCPAxisRect(loss_plot_);
      layout->addElement(layout->rowCount(), 0, rect);
      rect->setMarginGroup(QCP::msLeft | QCP::msRight, loss_margins_);
    }
    loss_plot_->axisRect(0)->setMarginGroup(QCP::msLeft | QCP::msRight, loss_margins_);
    QCPAxis* x = rect->axis(QCPAxis::atBottom);
    QCPAxis* y = rect->axis(QCPAxis::atLeft);
    x->setLabel(k + 1 == kinds.size() ? tr("step") : QString());
    // Stacked panels are short: the kind alone names the axis ("triplet"), the title says it is the loss.
    y->setLabel(kinds.size() == 1 ? tr("loss") : qstr(kinds[k].first));
    loss_kinds_ << qstr(kinds[k].first);
    for (const std::size_t i : kinds[k].second) {
      std::vector<ScalarPoint> points;
      try {
        points = session.scalars(runs_[i], "loss");
      } catch (const std::exception&) {
        continue;
      }
      // Bias-corrected EMA (TensorBoard's smoothing), so runs with noisy losses stay comparable.
      constexpr double kWeight = 0.9;
      LossSeries series{i, k, {}};
      double ema = 0, power = 1;
      for (const ScalarPoint& p : points) {
        if (!std::isfinite(p.value)) continue;
        ema = kWeight * ema + (1 - kWeight) * p.value;
        power *= kWeight;
        series.smoothed[static_cast<double>(p.step)] = ema / (1 - power);
      }
      if (!series.smoothed.empty()) loss_series_.push_back(std::move(series));
    }
  }
  draw_losses();
}

void CompareView::draw_losses() {
  loss_plot_->clearGraphs();
  struct Drawn {
    QString label;
    QColor colour;
    std::size_t kind = 0;
    QVector<double> steps, mean, lower, upper;  ///< lower/upper empty: a single run
  };
  std::vector<Drawn> drawn;
  const auto groups = seed_groups();
  const bool by_group = seed_bands_ && groups.size() < curve_runs_.size();
  const QStringList group_labels = by_group ? seed_group_labels() : QStringList();
  for (std::size_t g = 0; g < (by_group ? groups.size() : loss_series_.size()); ++g) {
    // The group's runs (a run alone without seed bands) that recorded a loss; mean and sample sd step by step over
    // those that reached the step.
    std::vector<const LossSeries*> members;
    for (const LossSeries& s : loss_series_)
      if (by_group ? std::find(groups[g].begin(), groups[g].end(), s.run) != groups[g].end() : &s == &loss_series_[g]) members.push_back(&s);
    if (members.empty()) continue;
    const std::size_t first = members.front()->run;
    Drawn d{by_group ? group_labels[static_cast<int>(g)] : model_->headerData(static_cast<int>(first), Qt::Horizontal, Qt::DisplayRole).toString(),
            run_colour(first), members.front()->kind, {}, {}, {}, {}};
    std::map<double, std::vector<double>> at_step;
    for (const LossSeries* s : members)
      for (const auto& [step, value] : s->smoothed) at_step[step].push_back(value);
    const bool band = members.size() > 1;
    for (const auto& [step, values] : at_step) {
      const MeanAndSd spread = mean_and_sd(values);
      const double sd = std::isnan(spread.sd) ? 0.0 : spread.sd;  // a step only one run reached: no width
      d.steps.push_back(step);
      d.mean.push_back(spread.mean);
      if (band) d.lower.push_back(spread.mean - sd), d.upper.push_back(spread.mean + sd);
    }
    drawn.push_back(std::move(d));
  }
  for (std::size_t k = 0; k < static_cast<std::size_t>(loss_plot_->axisRectCount()); ++k) {
    QCPAxisRect* rect = loss_plot_->axisRect(static_cast<int>(k));
    QCPAxis* x = rect->axis(QCPAxis::atBottom);
    QCPAxis* y = rect->axis(QCPAxis::atLeft);
    std::vector<double> all;
    double max_step = 0;
    for (const Drawn& d : drawn) {
      if (d.kind != k) continue;
      if (!d.lower.isEmpty()) {
        QCPGraph* lower = loss_plot_->addGraph(x, y);
        QCPGraph* upper = loss_plot_->addGraph(x, y);
        for (QCPGraph* edge : {lower, upper}) edge->removeFromLegend();
        lower->setName(d.label + tr(" − sd"));
        upper->setName(d.label + tr(" + sd"));
        lower->setData(d.steps, d.lower, true);
        upper->setData(d.steps, d.upper, true);
        plot_style::shade_between(lower, upper, d.colour);
        all.insert(all.end(), d.lower.begin(), d.lower.end());
        all.insert(all.end(), d.upper.begin(), d.upper.end());
      }
      QCPGraph* graph = loss_plot_->addGraph(x, y);
      graph->setName(d.label);
      graph->setPen(QPen(d.colour, 1.6));
      graph->setData(d.steps, d.mean, true);
      all.insert(all.end(), d.mean.begin(), d.mean.end());
      max_step = std::max(max_step, d.steps.back());
    }
    if (!all.empty()) {
      // Up to the 99th percentile: the first steps' huge losses do not flatten the rest.
      std::sort(all.begin(), all.end());
      const auto at = [&](double q) { return all[static_cast<std::size_t>(q * static_cast<double>(all.size() - 1))]; };
      const double lo = at(0.0);
      const double hi = at(0.99);
      const double pad = std::max(1e-6, (hi - lo) * 0.08);
      y->setRange(lo - pad, hi + pad);
      x->setRange(0, std::max(1.0, max_step));
    }
  }
  loss_plot_->legend->setVisible(loss_plot_->graphCount() > 0);
  loss_plot_->replot();
}

QStringList CompareView::figure_panel_names() {
  return {QStringLiteral("metric table"), QStringLiteral("metric curves"), QStringLiteral("decile bars"),
          QStringLiteral("training loss"), QStringLiteral("scatter"), QStringLiteral("parallel coordinates")};
}

bool CompareView::export_comparison_figure(const QString& path, const QStringList& panels, const FigureOptions& options,
                                           QString* error) const {
  std::vector<FigurePanel> chosen;
  for (const QString& name : panels) {
    if (name == QLatin1String("metric table")) chosen.push_back({.table = model_});
    else if (name == QLatin1String("metric curves")) chosen.push_back({.plot = metric_plot_});
    else if (name == QLatin1String("decile bars")) chosen.push_back({.plot = decile_plot_});
    else if (name == QLatin1String("training loss")) chosen.push_back({.plot = loss_plot_});
    else if (name == QLatin1String("scatter")) chosen.push_back({.plot = scatter_plot_});
    else if (name == QLatin1String("parallel coordinates")) chosen.push_back({.plot = parallel_plot_});
    else {
      if (error) *error = tr("cannot export '%1': no panel named '%2' (one of: %3)").arg(path, name, figure_panel_names().join(QStringLiteral(", ")));
      return false;
    }
  }
  return export_panels(chosen, options, path, error);
}

void CompareView::ask_and_export_figure() {
  QDialog dialog(this);
  dialog.setWindowTitle(tr("Export the comparison as a figure"));
  auto* form = new QFormLayout(&dialog);
  std::vector<QCheckBox*> boxes;
  auto* panel_box = new QWidget(&dialog);
  auto* panel_layout = new QVBoxLayout(panel_box);
  panel_layout->setContentsMargins(0, 0, 0, 0);
  const QStringList defaults{QStringLiteral("metric table"), QStringLiteral("metric curves"), QStringLiteral("decile bars"),
                             QStringLiteral("training loss")};
  for (const QString& name : figure_panel_names()) {
    auto* box = new QCheckBox(name, panel_box);
    box->setChecked(defaults.contains(name));
    panel_layout->addWidget(box);
    boxes.push_back(box);
  }
  form->addRow(tr("Panels"), panel_box);
  auto* width = new QComboBox(&dialog);
  width->addItem(tr("one column of a two-column paper (3.3 in)"), 3.3);
  width->addItem(tr("both columns (7 in)"), 7.0);
  width->addItem(tr("a slide (10 in)"), 10.0);
  width->setCurrentIndex(1);
  form->addRow(tr("Width"), width);
  auto* columns = new QSpinBox(&dialog);
  columns->setRange(1, 3);
  columns->setValue(2);
  form->addRow(tr("Plots per row"), columns);
  auto* points = new QDoubleSpinBox(&dialog);
  points->setRange(5, 14);
  points->setSingleStep(0.5);
  points->setValue(8);
  points->setSuffix(tr(" pt"));
  form->addRow(tr("Tick labels"), points);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, &dialog);
  connect(buttons, &QDialogButtonBox::accepted, &dialog, &QDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, &dialog, &QDialog::reject);
  form->addRow(buttons);
  if (dialog.exec() != QDialog::Accepted) return;
  QStringList panels;
  for (QCheckBox* box : boxes)
    if (box->isChecked()) panels.append(box->text());
  FigureOptions options;
  options.width_inches = width->currentData().toDouble();
  options.columns = columns->value();
  options.font_points = points->value();
  const QString path = save_file_name(this, tr("Export the comparison"), QStringLiteral("comparison.pdf"),
                                      tr("PDF (*.pdf);;SVG vector image (*.svg);;PNG image (*.png)"));
  if (path.isEmpty()) return;
  QString error;
  if (!export_comparison_figure(path, panels, options, &error)) QMessageBox::warning(this, tr("Cannot export the comparison"), error);
}

}  // namespace xmc::gui
