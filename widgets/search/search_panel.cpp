#include "widgets/search/search_panel.h"

#include <QCompleter>
#include <set>
#include <QElapsedTimer>
#include <QFutureWatcher>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPixmap>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QTableView>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrent>
#include <algorithm>
#include <utility>

#include "engine/session/session.h"
#include "widgets/background_job.h"
#include "widgets/qt_progress.h"
#include "widgets/search/search_results_model.h"
#include "widgets/search/thumbnails.h"
#include "widgets/live/training_progress.h"

namespace xmc::gui {

struct SearchPanel::LoadedRun {
  std::unique_ptr<Predictor> predictor;
  std::unordered_map<std::string, std::vector<std::int32_t>> truth_by_text;
  std::unordered_map<std::string, std::vector<std::string>> images_by_text;  ///< a dataset query's image files
  std::shared_ptr<const std::vector<std::vector<std::string>>> label_images;  ///< by label id; null without lists
  QString error;
};

namespace {

/// A read-only view of one mode's results: rank and score sized to their contents, the label stretched.
QTableView* make_results_view(SearchResultsModel* model) {
  auto* view = new QTableView;
  view->setModel(model);
  view->horizontalHeader()->setSectionResizeMode(SearchResultsModel::kRank, QHeaderView::ResizeToContents);
  view->horizontalHeader()->setSectionResizeMode(SearchResultsModel::kScore, QHeaderView::ResizeToContents);
  view->horizontalHeader()->setSectionResizeMode(SearchResultsModel::kLabel, QHeaderView::Stretch);
  view->verticalHeader()->setVisible(false);
  view->verticalHeader()->setDefaultSectionSize(view->fontMetrics().height() + 6);  // compact rows: more results in view
  view->setEditTriggers(QAbstractItemView::NoEditTriggers);
  view->setSelectionBehavior(QAbstractItemView::SelectRows);
  view->setWordWrap(false);
  return view;
}

}  // namespace

SearchPanel::SearchPanel(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  status_ = new QLabel("Double-click a finished run in the Runs tab (or train one) to search its labels.");
  status_->setObjectName("search_status");
  layout->addWidget(status_);
  // Loading a run encodes every label (the search index): a bar with ETA while it runs.
  loading_ = new QProgressBar;
  loading_->setVisible(false);
  layout->addWidget(loading_);
  load_progress_ = new QtProgress(this);
  connect(load_progress_, &QtProgress::progressed, this, [this](const QString& task, qint64 done, qint64 total, double eta) {
    TrainingProgress::show_task(loading_, task, done, total, eta);
  });
  auto* row = new QHBoxLayout;
  query_ = new QLineEdit;
  query_->setPlaceholderText("Type a query text and press Enter");
  query_->setToolTip("Query text; typing offers the dataset's queries that contain it. For a dataset query (train or test) its true labels are highlighted, with their ranks");
  top_ = new QSpinBox;
  top_->setRange(1, 1000);
  top_->setValue(10);
  top_->setPrefix("top ");
  top_->setToolTip("How many labels to show per inference mode");
  auto* go = new QPushButton("Search");
  row->addWidget(query_, 1);
  row->addWidget(top_);
  compare_ = new QSpinBox;
  compare_->setRange(0, 1000000000);
  compare_->setSpecialValueText("compare: none");
  compare_->setPrefix("compare with run ");
  compare_->setToolTip("Show another run's ranking of each query beside this run's (0: none)");
  connect(compare_, &QSpinBox::editingFinished, this, [this] { compare_with(compare_->value()); });
  row->addWidget(compare_);
  row->addWidget(go);
  layout->addLayout(row);
  // A dataset query's images (when the dataset lists image files), under the query line.
  query_images_ = new QWidget;
  auto* images_row = new QHBoxLayout(query_images_);
  images_row->setContentsMargins(0, 0, 0, 0);
  query_images_->setVisible(false);
  layout->addWidget(query_images_);
  tables_layout_ = new QHBoxLayout;
  // Another run's ranking of the same query, beside this run's modes.
  other_box_ = new QWidget;
  auto* other_column = new QVBoxLayout(other_box_);
  other_column->setContentsMargins(0, 0, 0, 0);
  other_title_ = new QLabel;
  other_results_ = new SearchResultsModel(this);
  other_table_ = make_results_view(other_results_);
  other_column->addWidget(other_title_);
  other_column->addWidget(other_table_, 1);
  other_box_->setVisible(false);
  auto* all_tables = new QHBoxLayout;
  all_tables->addLayout(tables_layout_, 3);
  all_tables->addWidget(other_box_, 1);
  layout->addLayout(all_tables, 1);
  auto* add_row = new QHBoxLayout;
  new_label_ = new QLineEdit;
  new_label_->setPlaceholderText("New label text (e.g. a synset's lemmas and gloss)");
  add_label_ = new QPushButton("Add label");
  add_label_->setToolTip("Encode a label the run never saw and add it to the index (kept with the run). Its vectors are "
                         "the encoder's embedding of its text, or IRENE's synthesized classifier when the run is an IRENE "
                         "run or one is built on it. Each search then says where it ranks; added labels are blue.");
  add_row->addWidget(new QLabel("New label:"));
  add_row->addWidget(new_label_, 1);
  add_row->addWidget(add_label_);
  layout->addLayout(add_row);
  for (auto* w : std::initializer_list<QWidget*>{query_, top_, go, new_label_, add_label_}) w->setEnabled(false);
  connect(query_, &QLineEdit::returnPressed, this, [this] { search(query_->text()); });
  connect(go, &QPushButton::clicked, this, [this] { search(query_->text()); });
  const auto add = [this] {
    std::int64_t id = -1;
    try {
      id = add_label(new_label_->text());
    } catch (const std::exception& e) {
      status_->setText(QString("Not added: %1").arg(QString::fromUtf8(e.what())));
      return;
    }
    if (id >= 0) {
      status_->setText(QString("Added label %1 (vectors by %2): %3")
                           .arg(id)
                           .arg(QString::fromStdString(predictor_->synthesized_by()))
                           .arg(new_label_->text()));
      new_label_->clear();
      if (!query_->text().isEmpty()) search(query_->text());
    }
  };
  connect(add_label_, &QPushButton::clicked, this, add);
  connect(new_label_, &QLineEdit::returnPressed, this, add);
}

SearchPanel::~SearchPanel() {
  // A load still running uses load_progress_ (a child of this panel): let it finish, and free what it
  // made, since its finished handler will not run any more. A running search uses predictor_.
  for (auto& [number, load] : loads_) {
    load.waitForFinished();
    delete load.result();
  }
  search_.waitForFinished();
}

void SearchPanel::compare_with(std::int64_t run) {
  search_.waitForFinished();
  ++search_number_;  // a search in flight would fill the old comparison
  other_predictor_.reset();
  other_run_ = 0;
  other_results_->clear();
  other_box_->setVisible(false);
  if (compare_->value() != run) compare_->setValue(static_cast<int>(run));
  if (run <= 0 || db_.isEmpty()) return;
  other_title_->setText(QString("<b>run %1</b> — loading…").arg(run));
  other_box_->setVisible(true);
  run_in_background<Predictor>(
      this, [path = db_.toStdString(), run] { return Session(path).open_predictor(run); },
      [this, run](std::unique_ptr<Predictor> loaded, const QString& error) {
        if (compare_->value() != run) return;  // another choice meanwhile
        if (!loaded) {
          other_title_->setText(QString("<b>run %1</b>: %2").arg(run).arg(error.toHtmlEscaped()));
          return;
        }
        other_predictor_ = std::move(loaded);
        other_run_ = run;
        other_title_->setText(QString("<b>run %1</b> (%2)").arg(run).arg(QString::fromStdString(other_predictor_->default_mode())));
        Q_EMIT compared_run_loaded(run);
        if (!query_->text().trimmed().isEmpty()) search(query_->text());
      });
}

QStringList SearchPanel::compared_results() const {
  if (other_box_->isHidden() || !other_predictor_) return {};
  return other_results_->top_texts();
}

void SearchPanel::open_run(const QString& db, std::int64_t run) {
  db_ = db;
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
      const Session session(path);
      loaded->predictor = std::make_unique<Predictor>(session.open_predictor(run, "", *progress));
      // Index the dataset's queries so a typed dataset query shows its ground truth.
      auto queries = session.dataset_queries(run);
      Session::DatasetImageFiles images = session.dataset_image_files(run);
      for (std::size_t i = 0; i < queries.size(); ++i) {
        const std::string text = QString::fromStdString(queries[i].first).trimmed().toStdString();
        if (images.any() && i < images.queries.size() && !images.queries[i].empty()) loaded->images_by_text.emplace(text, std::move(images.queries[i]));
        loaded->truth_by_text.emplace(text, std::move(queries[i].second));
      }
      if (images.any()) loaded->label_images = std::make_shared<const std::vector<std::vector<std::string>>>(std::move(images.labels));
    } catch (const std::exception& e) {
      if (!loaded->predictor) loaded->error = QString::fromUtf8(e.what());
    }
    return loaded.release();
  });
  loads_.emplace(number, load);
  watcher->setFuture(load);
}

void SearchPanel::install(std::unique_ptr<LoadedRun> loaded) {
  // A search of the previous run still uses its predictor; its results would fill the wrong tables.
  search_.waitForFinished();
  ++search_number_;
  queued_query_.reset();
  predictor_ = std::move(loaded->predictor);
  added_labels_.clear();
  // Labels added earlier (kept with the run) follow the dataset's labels.
  const auto earlier = static_cast<std::int64_t>(predictor_->added_labels().size());
  for (std::int64_t id = predictor_->num_labels() - earlier; id < predictor_->num_labels(); ++id) added_labels_.push_back(id);
  added_ranks_.clear();
  truth_ranks_.clear();
  top_rows_.clear();
  truth_by_text_ = std::move(loaded->truth_by_text);
  images_by_text_ = std::move(loaded->images_by_text);
  label_images_ = std::move(loaded->label_images);
  show_query_images({});
  // Typing offers the dataset's queries that contain the text (train and test), to inspect their true
  // labels' ranks; choosing one searches it.
  QStringList dataset_queries;
  dataset_queries.reserve(static_cast<qsizetype>(truth_by_text_.size()));
  for (const auto& [text, labels] : truth_by_text_) dataset_queries << QString::fromStdString(text);
  dataset_queries.sort();
  auto* completer = new QCompleter(dataset_queries, query_);
  completer->setCaseSensitivity(Qt::CaseInsensitive);
  completer->setFilterMode(Qt::MatchContains);
  completer->setMaxVisibleItems(15);
  connect(completer, qOverload<const QString&>(&QCompleter::activated), this, [this](const QString& text) { search(text); });
  if (query_->completer()) query_->completer()->deleteLater();
  query_->setCompleter(completer);
  for (auto& [mode, table] : tables_) {
    table->model()->deleteLater();
    table->deleteLater();
  }
  for (auto* label : latency_labels_) label->deleteLater();
  tables_.clear();
  results_.clear();
  latency_labels_.clear();
  while (auto* item = tables_layout_->takeAt(0)) delete item;
  for (const auto& mode : predictor_->modes()) {
    auto* column = new QVBoxLayout;
    auto* title = new QLabel(QString("<b>%1</b>").arg(QString::fromStdString(mode)));
    // The line under a mode's name ("new label … ranks N of M") wraps within its column: unwrapped, four
    // modes of an IRENE run pushed the window past the screen's edge.
    title->setWordWrap(true);
    title->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
    title->setMinimumWidth(0);
    auto* results = new SearchResultsModel(this);
    results->set_label_images(label_images_);
    auto* table = make_results_view(results);
    if (label_images_) {  // rows tall enough for a label's thumbnail
      table->setIconSize(QSize(SearchResultsModel::kThumbnailSide, SearchResultsModel::kThumbnailSide));
      table->verticalHeader()->setDefaultSectionSize(SearchResultsModel::kThumbnailSide + 4);
    }
    column->addWidget(title);
    column->addWidget(table, 1);
    tables_layout_->addLayout(column, 1);
    tables_.emplace_back(QString::fromStdString(mode), table);
    results_.push_back(results);
    latency_labels_.push_back(title);
  }
  // What the run chose for itself while training (UniDEC's concat weight w on held-out queries) is what its modes
  // rank with: said beside them.
  QStringList chosen;
  try {
    for (const ChosenSetting& c : Session(db_.toStdString()).chosen_settings(predictor_->run_id()))
      chosen << QString("%1 = %2").arg(QString::fromStdString(c.key)).arg(c.value, 0, 'g', 4);
  } catch (const std::exception&) {
  }
  chosen_text_ = chosen.isEmpty() ? QString() : " (chosen while training: " + chosen.join(", ") + ")";
  status_->setText(QString("Run %1: %2 labels; modes: %3%4. Ground-truth labels of dataset queries are green, labels you add blue.%5")
                       .arg(predictor_->run_id())
                       .arg(predictor_->num_labels())
                       .arg(modes().join(", "))
                       .arg(chosen_text_)
                       .arg(predictor_->fuses_images() ? " The run fuses images: its labels are encoded with theirs, queries here with text alone." : ""));
  for (auto* w : findChildren<QWidget*>())
    if (qobject_cast<QLineEdit*>(w) || qobject_cast<QPushButton*>(w) || qobject_cast<QSpinBox*>(w)) w->setEnabled(true);
}

QStringList SearchPanel::modes() const {
  QStringList out;
  for (const auto& [mode, table] : tables_) out << mode;
  return out;
}

QStringList SearchPanel::result_texts(const QString& mode) const {
  for (std::size_t m = 0; m < tables_.size(); ++m)
    if (tables_[m].first == mode) return results_[m]->top_texts();
  return {};
}

std::map<std::int64_t, std::int64_t> SearchPanel::true_label_ranks(const QString& mode) const {
  for (std::size_t m = 0; m < tables_.size() && m < truth_ranks_.size(); ++m)
    if (tables_[m].first == mode) return truth_ranks_[m];
  return {};
}

QString SearchPanel::query_text() const { return query_->text(); }

void SearchPanel::search(const QString& text) {
  if (!predictor_ || text.trimmed().isEmpty()) return;
  // A search asked for from elsewhere (a tail label's missed query, a completion) shows its query in the box, so that
  // the results never stand under another text.
  if (query_->text() != text) query_->setText(text);
  if (search_.isRunning()) {
    queued_query_ = text;  // runs when the current search ends, replacing any query queued before it
    return;
  }
  start_search(text);
}

void SearchPanel::start_search(const QString& text) {
  const std::int64_t added = added_labels_.empty() ? -1 : added_labels_.back();
  const std::int64_t top = top_->value();
  const Predictor* predictor = predictor_.get();
  const Predictor* other = other_predictor_.get();
  // A dataset query's true labels, ranked with the search (at most kMaxTruthRanks of them).
  constexpr std::size_t kMaxTruthRanks = 50;
  std::vector<std::int64_t> truth;
  if (const auto it = truth_by_text_.find(text.trimmed().toStdString()); it != truth_by_text_.end())
    for (std::size_t i = 0; i < it->second.size() && i < kMaxTruthRanks; ++i) truth.push_back(it->second[i]);
  const int number = ++search_number_;
  auto* watcher = new QFutureWatcher<SearchResult>(this);
  connect(watcher, &QFutureWatcher<SearchResult>::finished, this, [this, watcher, number, text] {
    watcher->deleteLater();
    if (number != search_number_) return;  // superseded: a newer search started, or another run was installed
    if (queued_query_) {
      // A newer query came while this one ran: its results would be stale at once, so skip them.
      const QString next = *std::exchange(queued_query_, std::nullopt);
      start_search(next);
      return;
    }
    show_results(text, watcher->result());
  });
  search_ = QtConcurrent::run([predictor, other, query = text.toStdString(), added, top, truth] {
    SearchResult result;
    try {
      // One encoding of the query answers every mode: the top-k, the true labels' and the added label's ranks.
      std::vector<std::int64_t> asked = truth;
      if (added >= 0) asked.push_back(added);
      result.answer = predictor->search(query, top, asked);
      for (ModeAnswer& found : result.answer.modes) {
        ModeResult mode;
        if (added >= 0 && found.ranks.back().rank > 0) mode.added_rank = found.ranks.back();
        for (std::size_t i = 0; i < truth.size(); ++i) {
          const bool shown = std::any_of(found.top.begin(), found.top.end(), [&](const LabelScore& hit) { return hit.label == truth[i]; });
          if (!shown && found.ranks[i].rank > 0) mode.missed_truth.emplace_back(truth[i], found.ranks[i]);
        }
        std::sort(mode.missed_truth.begin(), mode.missed_truth.end(), [](const auto& a, const auto& b) { return a.second.rank < b.second.rank; });
        result.modes.push_back(std::move(mode));
      }
      if (other) {
        QElapsedTimer timer;
        timer.start();
        result.other_ranked = other->predict({query}, top).front();
        result.other_milliseconds = static_cast<double>(timer.nsecsElapsed()) / 1e6;
      }
      if (added >= 0) result.added_text = predictor->label_texts()[static_cast<std::size_t>(added)];
      result.num_labels = predictor->num_labels();
    } catch (const std::exception& e) {
      result.error = QString::fromUtf8(e.what());
    }
    return result;
  });
  watcher->setFuture(search_);
}

void SearchPanel::show_results(const QString& text, const SearchResult& result) {
  if (!result.error.isEmpty()) {
    status_->setText(QString("Search failed: %1").arg(result.error));
    Q_EMIT search_finished(text);
    return;
  }
  const auto truth = truth_by_text_.find(text.trimmed().toStdString());  // as indexed: without outer spaces
  const auto images = images_by_text_.find(text.trimmed().toStdString());
  show_query_images(images == images_by_text_.end() ? std::vector<std::string>{} : images->second);
  highlighted_ = 0;
  added_ranks_.assign(tables_.size(), 0);
  truth_ranks_.assign(tables_.size(), {});
  top_rows_.assign(tables_.size(), 0);
  std::set<std::int64_t> truth_labels;
  if (truth != truth_by_text_.end()) truth_labels.insert(truth->second.begin(), truth->second.end());
  const std::set<std::int64_t> added(added_labels_.begin(), added_labels_.end());
  if (!result.answer.modes.empty())
    status_->setText(QString("Run %1: %2 labels%5. Query encoded once for all modes in %3 ms; each mode's time is its search%4")
                         .arg(predictor_->run_id())
                         .arg(result.num_labels)
                         .arg(result.answer.encode_ms, 0, 'f', 1)
                         .arg(truth_labels.empty() ? QString(".") : QString(" and the ranks of the query's true labels (%1).").arg(truth_labels.size()))
                         .arg(chosen_text_));
  for (std::size_t m = 0; m < tables_.size() && m < result.modes.size(); ++m) {
    const QString& mode = tables_[m].first;
    const ModeAnswer& answer = result.answer.modes[m];
    const ModeResult& found = result.modes[m];
    QString title = QString("<b>%1</b> — %2 ms").arg(mode).arg(answer.search_ms, 0, 'f', 1);
    if (found.added_rank) {
      added_ranks_[m] = found.added_rank->rank;
      title += QString("<br><span style='color:#1f5fbf'>new label “%1” ranks %2 of %3 (score %4)</span>")
                   .arg(fontMetrics().elidedText(QString::fromStdString(result.added_text), Qt::ElideRight, 240).toHtmlEscaped())
                   .arg(found.added_rank->rank)
                   .arg(result.num_labels)
                   .arg(static_cast<double>(found.added_rank->score), 0, 'f', 4);
    }
    latency_labels_[m]->setText(title);
    results_[m]->set_results(answer.top, found.missed_truth, predictor_->label_texts(), truth_labels, added);
    top_rows_[m] = results_[m]->top_rows();
    for (int r = 0; r < results_[m]->top_rows(); ++r)
      if (results_[m]->row(r).truth) {
        ++highlighted_;
        truth_ranks_[m][results_[m]->row(r).label] = r + 1;
      }
    for (const auto& [id, where] : found.missed_truth) truth_ranks_[m][id] = where.rank;
  }
  // The compared run: true labels recognised by their text (its label ids may be another dataset's).
  if (other_predictor_) {
    std::set<std::string> truth_texts;
    for (const auto label : truth_labels) truth_texts.insert(predictor_->label_texts()[static_cast<std::size_t>(label)]);
    other_title_->setText(QString("<b>run %1</b> (%2) — %3 ms")
                              .arg(other_run_)
                              .arg(QString::fromStdString(other_predictor_->default_mode()))
                              .arg(result.other_milliseconds, 0, 'f', 1));
    other_results_->set_results_by_text(result.other_ranked, truth_texts);
  }
  Q_EMIT search_finished(text);
}

void SearchPanel::show_query_images(const std::vector<std::string>& files) {
  while (auto* item = query_images_->layout()->takeAt(0)) {
    delete item->widget();
    delete item;
  }
  int shown = 0;
  for (const auto& file : files) {
    const QPixmap picture = thumbnail(QString::fromStdString(file), 2 * SearchResultsModel::kThumbnailSide);
    if (picture.isNull()) continue;
    auto* label = new QLabel;
    label->setPixmap(picture);
    label->setToolTip(QString::fromStdString(file));
    query_images_->layout()->addWidget(label);
    ++shown;
  }
  if (shown > 0) {
    auto* caption = new QLabel(QString("the query's image%1").arg(shown == 1 ? "" : "s"));
    caption->setStyleSheet("color: gray");
    query_images_->layout()->addWidget(caption);
    static_cast<QHBoxLayout*>(query_images_->layout())->addStretch(1);
  }
  query_images_->setVisible(shown > 0);
}

QStringList SearchPanel::query_image_files() const {
  QStringList out;
  for (auto* label : query_images_->findChildren<QLabel*>())
    if (!label->pixmap().isNull()) out << label->toolTip();
  return out;
}

std::int64_t SearchPanel::add_label(const QString& text) {
  if (!predictor_ || text.trimmed().isEmpty()) return -1;
  search_.waitForFinished();  // the running search reads the index this changes
  const std::int64_t id = predictor_->add_label(text.trimmed().toStdString());  // throws ConfigError for a duplicate
  added_labels_.push_back(id);
  return id;
}

std::int64_t SearchPanel::added_label_rank(const QString& mode) const {
  for (std::size_t m = 0; m < tables_.size() && m < added_ranks_.size(); ++m)
    if (tables_[m].first == mode) return added_ranks_[m];
  return 0;
}

}  // namespace xmc::gui
