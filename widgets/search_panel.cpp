#include "widgets/search_panel.h"

#include <QElapsedTimer>
#include <QFutureWatcher>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QTableWidget>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrent>

#include "engine/data/dataset.h"
#include "engine/session/predictor.h"
#include "engine/store/run_store.h"
#include "engine/train/train_config.h"
#include "widgets/qt_progress.h"
#include "widgets/training_progress.h"

namespace xmc::gui {

struct SearchPanel::LoadedRun {
  std::unique_ptr<Predictor> predictor;
  std::unordered_map<std::string, std::vector<std::int32_t>> truth_by_text;
  QString error;
};

SearchPanel::SearchPanel(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  status_ = new QLabel("Double-click a finished run in the Runs tab (or train one) to search its labels.");
  layout->addWidget(status_);
  // Loading a run encodes every label (the search index): a bar with ETA while it runs.
  loading_ = new QProgressBar;
  loading_->setVisible(false);
  layout->addWidget(loading_);
  load_progress_ = new QtProgress(this);
  connect(load_progress_, &QtProgress::progressed, this, [this](const QString& task, qint64 done, qint64 total, double eta) {
    TrainingProgress::show_counts(loading_, done, total);
    loading_->setFormat(task + " — %v/%m" + (eta >= 0 ? "  " + TrainingProgress::format_eta(eta) : QString()));
  });
  auto* row = new QHBoxLayout;
  query_ = new QLineEdit;
  query_->setPlaceholderText("Type a query text and press Enter");
  query_->setToolTip("Query text; when it is a dataset query (train or test), its true labels are highlighted");
  top_ = new QSpinBox;
  top_->setRange(1, 1000);
  top_->setValue(10);
  top_->setPrefix("top ");
  top_->setToolTip("How many labels to show per inference mode");
  auto* go = new QPushButton("Search");
  row->addWidget(query_, 1);
  row->addWidget(top_);
  row->addWidget(go);
  layout->addLayout(row);
  tables_layout_ = new QHBoxLayout;
  layout->addLayout(tables_layout_, 1);
  auto* add_row = new QHBoxLayout;
  new_label_ = new QLineEdit;
  new_label_->setPlaceholderText("New label text (e.g. a synset's lemmas and gloss)");
  add_label_ = new QPushButton("Add label");
  add_label_->setToolTip("Encode a label the run never saw and add it to the index. Its vector is the encoder's embedding "
                         "of its text (zero-shot; the run has no IRENE meta-classifier generator). Each search then says "
                         "where it ranks, and added labels are marked blue in the tables.");
  add_row->addWidget(new QLabel("New label:"));
  add_row->addWidget(new_label_, 1);
  add_row->addWidget(add_label_);
  layout->addLayout(add_row);
  for (auto* w : std::initializer_list<QWidget*>{query_, top_, go, new_label_, add_label_}) w->setEnabled(false);
  connect(query_, &QLineEdit::returnPressed, this, [this] { search(query_->text()); });
  connect(go, &QPushButton::clicked, this, [this] { search(query_->text()); });
  connect(add_label_, &QPushButton::clicked, this, [this] {
    const auto id = add_label(new_label_->text());
    if (id >= 0) {
      status_->setText(QString("Added label %1: %2").arg(id).arg(new_label_->text()));
      new_label_->clear();
      if (!query_->text().isEmpty()) search(query_->text());
    }
  });
}

SearchPanel::~SearchPanel() {
  // A load still running uses load_progress_ (a child of this panel): let it finish, and free what it
  // made, since its finished handler will not run any more.
  for (auto& [number, load] : loads_) {
    load.waitForFinished();
    delete load.result();
  }
}

void SearchPanel::open_run(const QString& db, std::int64_t run) {
  status_->setText(QString("Loading run %1 (model and label index)…").arg(run));
  loading_->setVisible(true);
  loading_->setRange(0, 0);
  loading_->setFormat("loading the checkpoint");
  auto* watcher = new QFutureWatcher<LoadedRun*>(this);
  const int number = next_load_++;
  connect(watcher, &QFutureWatcher<LoadedRun*>::finished, this, [this, watcher, run, number] {
    std::unique_ptr<LoadedRun> loaded(watcher->result());
    loads_.erase(number);
    watcher->deleteLater();
    loading_->setVisible(false);
    if (!loaded->error.isEmpty()) {
      status_->setText(QString("Cannot load run %1: %2").arg(run).arg(loaded->error));
      Q_EMIT load_failed(loaded->error);
      return;
    }
    install(std::move(loaded));
    Q_EMIT run_loaded(run);
  });
  const std::string path = db.toStdString();
  QtProgress* progress = load_progress_;
  QFuture<LoadedRun*> load = QtConcurrent::run([path, run, progress]() -> LoadedRun* {
    auto loaded = std::make_unique<LoadedRun>();
    try {
      loaded->predictor = std::make_unique<Predictor>(Predictor::open(path, run, "", *progress));
      // Index the dataset's queries so a typed dataset query shows its ground truth.
      const TrainConfig config = parse_train_config(RunStore(path).get_run(run).config_json);
      const Dataset d = load_dataset(config.dataset, {.load_features = false});
      auto index = [&](const std::vector<std::string>& texts, const CsrMatrix& labels) {
        for (std::size_t i = 0; i < texts.size(); ++i) {
          const auto row = labels.row_indices(static_cast<std::int64_t>(i));
          loaded->truth_by_text.emplace(QString::fromStdString(texts[i]).trimmed().toStdString(),
                                        std::vector<std::int32_t>(row.begin(), row.end()));
        }
      };
      index(d.train_text, d.train_labels);
      index(d.test_text, d.test_labels);
    } catch (const std::exception& e) {
      if (!loaded->predictor) loaded->error = QString::fromUtf8(e.what());
    }
    return loaded.release();
  });
  loads_.emplace(number, load);
  watcher->setFuture(load);
}

void SearchPanel::install(std::unique_ptr<LoadedRun> loaded) {
  predictor_ = std::move(loaded->predictor);
  added_labels_.clear();
  added_ranks_.clear();
  truth_by_text_ = std::move(loaded->truth_by_text);
  for (auto& [mode, table] : tables_) table->deleteLater();
  for (auto* label : latency_labels_) label->deleteLater();
  tables_.clear();
  latency_labels_.clear();
  while (auto* item = tables_layout_->takeAt(0)) delete item;
  for (const auto& mode : predictor_->modes()) {
    auto* column = new QVBoxLayout;
    auto* title = new QLabel(QString("<b>%1</b>").arg(QString::fromStdString(mode)));
    auto* table = new QTableWidget(0, 3);
    table->setHorizontalHeaderLabels({"#", "score", "label"});
    table->horizontalHeader()->setSectionResizeMode(2, QHeaderView::Stretch);
    table->verticalHeader()->setVisible(false);
    table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    table->setWordWrap(false);
    column->addWidget(title);
    column->addWidget(table, 1);
    tables_layout_->addLayout(column, 1);
    tables_.emplace_back(QString::fromStdString(mode), table);
    latency_labels_.push_back(title);
  }
  status_->setText(QString("Run %1: %2 labels; modes: %3. Ground-truth labels of dataset queries are green, labels you add blue.")
                       .arg(predictor_->run_id())
                       .arg(predictor_->num_labels())
                       .arg(modes().join(", ")));
  for (auto* w : findChildren<QWidget*>())
    if (qobject_cast<QLineEdit*>(w) || qobject_cast<QPushButton*>(w) || qobject_cast<QSpinBox*>(w)) w->setEnabled(true);
}

QStringList SearchPanel::modes() const {
  QStringList out;
  for (const auto& [mode, table] : tables_) out << mode;
  return out;
}

QStringList SearchPanel::result_texts(const QString& mode) const {
  QStringList out;
  for (const auto& [m, table] : tables_)
    if (m == mode)
      for (int r = 0; r < table->rowCount(); ++r) out << table->item(r, 2)->text();
  return out;
}

void SearchPanel::search(const QString& text) {
  if (!predictor_ || text.trimmed().isEmpty()) return;
  const std::string query = text.toStdString();
  const auto truth = truth_by_text_.find(text.trimmed().toStdString());  // as indexed: without outer spaces
  highlighted_ = 0;
  for (std::size_t m = 0; m < tables_.size(); ++m) {
    auto& [mode, table] = tables_[m];
    QElapsedTimer timer;
    timer.start();
    const auto ranked = predictor_->predict({query}, top_->value(), mode.toStdString()).front();
    const double ms = static_cast<double>(timer.nsecsElapsed()) / 1e6;
    QString title = QString("<b>%1</b> — %2 ms").arg(mode).arg(ms, 0, 'f', 1);
    added_ranks_.resize(tables_.size(), 0);
    if (!added_labels_.empty()) {
      const LabelRank placed = predictor_->rank_of(query, added_labels_.back(), mode.toStdString());
      added_ranks_[m] = placed.rank;
      const QString added_text = QString::fromStdString(predictor_->label_texts()[static_cast<std::size_t>(added_labels_.back())]);
      title += QString("<br><span style='color:#1f5fbf'>new label “%1” ranks %2 of %3 (score %4)</span>")
                   .arg(fontMetrics().elidedText(added_text, Qt::ElideRight, 240).toHtmlEscaped())
                   .arg(placed.rank)
                   .arg(predictor_->num_labels())
                   .arg(static_cast<double>(placed.score), 0, 'f', 4);
    }
    latency_labels_[m]->setText(title);
    table->setRowCount(static_cast<int>(ranked.size()));
    for (int r = 0; r < static_cast<int>(ranked.size()); ++r) {
      const auto& hit = ranked[static_cast<std::size_t>(r)];
      auto* rank = new QTableWidgetItem(QString::number(r + 1));
      auto* score = new QTableWidgetItem(QString::number(static_cast<double>(hit.score), 'f', 4));
      auto* label = new QTableWidgetItem(QString::fromStdString(hit.text));
      label->setToolTip(QString::fromStdString(hit.text));
      const bool is_true = truth != truth_by_text_.end() &&
                           std::binary_search(truth->second.begin(), truth->second.end(), static_cast<std::int32_t>(hit.label));
      if (std::find(added_labels_.begin(), added_labels_.end(), hit.label) != added_labels_.end()) {
        for (auto* item : {rank, score, label}) item->setBackground(QColor(205, 222, 250));
        label->setToolTip("added label: " + label->toolTip());
      }
      if (is_true) {
        for (auto* item : {rank, score, label}) item->setBackground(QColor(200, 240, 200));
        label->setToolTip("ground truth: " + label->toolTip());
        ++highlighted_;
      }
      table->setItem(r, 0, rank);
      table->setItem(r, 1, score);
      table->setItem(r, 2, label);
    }
    table->resizeColumnToContents(0);
    table->resizeColumnToContents(1);
  }
}

std::int64_t SearchPanel::add_label(const QString& text) {
  if (!predictor_ || text.trimmed().isEmpty()) return -1;
  const std::int64_t id = predictor_->add_label(text.trimmed().toStdString());
  added_labels_.push_back(id);
  return id;
}

std::int64_t SearchPanel::added_label_rank(const QString& mode) const {
  for (std::size_t m = 0; m < tables_.size() && m < added_ranks_.size(); ++m)
    if (tables_[m].first == mode) return added_ranks_[m];
  return 0;
}

}  // namespace xmc::gui
