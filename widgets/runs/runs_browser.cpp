#include "widgets/runs/runs_browser.h"

#include "engine/records/run_filter.h"
#include "widgets/runs/run_filter_proxy.h"

#include <QAction>
#include <QComboBox>
#include <QFontDatabase>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QInputDialog>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSaveFile>
#include <QSettings>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QToolButton>
#include <QVBoxLayout>
#include <algorithm>

#include "widgets/runs/group_summary_model.h"
#include "widgets/runs/report_export.h"
#include "widgets/runs/run_table_model.h"
#include "widgets/file_dialogs.h"

namespace xmc::gui {

namespace {

bool default_confirmation(QWidget* parent, const QStringList& runs) {
  const QString what = runs.size() == 1 ? QObject::tr("run %1").arg(runs.front())
                                        : QObject::tr("%1 runs:\n%2").arg(runs.size()).arg(runs.join(QLatin1Char('\n')));
  const auto answer = QMessageBox::question(
      parent, QObject::tr("Delete runs"),
      QObject::tr("Delete %1?\n\nIts scalars, evaluations, decile tables and t-SNE snapshots are removed from the "
                  "store, and its files (checkpoint, vocabulary, saved indexes) are deleted. This cannot be undone.")
          .arg(what),
      QMessageBox::Yes | QMessageBox::Cancel, QMessageBox::Cancel);
  return answer == QMessageBox::Yes;
}

}  // namespace

namespace {

/// Where a store's Runs table keeps `what` (QSettings: the columns a user added, the grouping), by the store's path.
QString store_setting(const QString& what, const std::filesystem::path& db) {
  std::error_code ec;
  const std::filesystem::path canonical = std::filesystem::weakly_canonical(db, ec);
  const QByteArray path = QString::fromStdString((ec ? db : canonical).string()).toUtf8();
  return what + QLatin1Char('/') + QString::fromLatin1(path.toBase64(QByteArray::Base64UrlEncoding | QByteArray::OmitTrailingEquals));
}

constexpr std::pair<RunTableModel::ExtraColumn::Kind, const char*> kColumnKinds[] = {{RunTableModel::ExtraColumn::Kind::metric, "metric"},
                                                                                    {RunTableModel::ExtraColumn::Kind::config, "config"},
                                                                                    {RunTableModel::ExtraColumn::Kind::duration, "duration"},
                                                                                    {RunTableModel::ExtraColumn::Kind::system, "system"}};

}  // namespace

RunsBrowser::RunsBrowser(const std::filesystem::path& db, QWidget* parent)
    : QWidget(parent), confirm_(default_confirmation) {
  model_ = new RunTableModel(db, this);
  proxy_ = new RunFilterProxy(model_, this);
  proxy_->setSortRole(RunTableModel::kSortRole);
  proxy_->setFilterRole(RunTableModel::kFilterRole);
  proxy_->setFilterKeyColumn(RunTableModel::kName);
  proxy_->setFilterCaseSensitivity(Qt::CaseInsensitive);
  proxy_->setDynamicSortFilter(true);

  filter_ = new QLineEdit(this);
  filter_->setPlaceholderText(tr("Filter: words in name, method, dataset, status, tags or notes — or method == \"unidec\" and P@1 > 0.6"));
  filter_->setToolTip(tr("Words: runs whose name, method, dataset, status, tags or notes contain them.\n"
                         "An expression: config keys (lr, encoder.dim), metrics (P@5, emb/PSP@3: fractions, or 45%) and id, name, status, "
                         "method, dataset, tags, notes,\ncompared with == != < <= > >= or in (\"base\" in tags), joined with and, or, not "
                         "and parentheses.\nText in quotes. A run without the value (never evaluated) does not pass."));
  filter_->setClearButtonEnabled(true);
  filter_->setMinimumWidth(260);  // room for an expression
  connect(filter_, &QLineEdit::textChanged, this, &RunsBrowser::apply_filter_text);
  filter_error_ = new QLabel(this);
  filter_error_->setObjectName("filter_error");
  filter_error_->setStyleSheet(QStringLiteral("color: #c62828;"));
  filter_error_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  filter_error_->hide();
  saved_ = new QToolButton(this);
  saved_->setText(QStringLiteral("★"));
  saved_->setToolTip(tr("Saved filters: apply one, save this one, forget one"));
  saved_->setPopupMode(QToolButton::InstantPopup);
  saved_->setMenu(new QMenu(saved_));
  connect(saved_->menu(), &QMenu::aboutToShow, this, &RunsBrowser::saved_filters_menu);

  refresh_ = new QPushButton(tr("Refresh"), this);
  refresh_->setToolTip(tr("Re-read the run store (F5)"));
  refresh_->setShortcut(QKeySequence::Refresh);
  connect(refresh_, &QPushButton::clicked, this, &RunsBrowser::refresh);

  follow_ = new QPushButton(tr("Follow"), this);
  follow_->setCheckable(true);
  follow_->setToolTip(tr("Poll the store every second, so runs written by other processes appear and update live"));
  connect(follow_, &QPushButton::toggled, this, &RunsBrowser::set_follow);

  rename_ = new QPushButton(tr("Rename"), this);
  rename_->setToolTip(tr("Rename the selected run (F2)"));
  connect(rename_, &QPushButton::clicked, this, &RunsBrowser::rename_selected);

  notes_ = new QPushButton(tr("Notes…"), this);
  notes_->setToolTip(tr("Write notes on the selected run (kept in the store, shown in its report); tags are edited in the Tags column"));
  connect(notes_, &QPushButton::clicked, this, &RunsBrowser::edit_notes_of_selected);

  log_ = new QPushButton(tr("Log…"), this);
  log_->setToolTip(tr("Show the selected run's log: the phases it went through and what it decided (such as the concat "
                      "weight chosen on held-out queries), with the step each came at"));
  connect(log_, &QPushButton::clicked, this, [this] { show_log_of_selected(); });

  delete_ = new QPushButton(tr("Delete…"), this);
  delete_->setToolTip(tr("Delete the selected runs from the store (asks first)"));
  connect(delete_, &QPushButton::clicked, this, [this] { delete_selected(); });

  compare_ = new QPushButton(tr("Compare"), this);
  compare_->setToolTip(tr("Compare the selected runs (select two or more)"));
  connect(compare_, &QPushButton::clicked, this, &RunsBrowser::compare_selected);

  export_ = new QToolButton(this);
  export_->setText(tr("Export CSV"));
  export_->setToolButtonStyle(Qt::ToolButtonTextOnly);
  export_->setPopupMode(QToolButton::InstantPopup);
  auto* menu = new QMenu(export_);
  menu->addAction(tr("Runs table as shown…"), this, &RunsBrowser::choose_table_csv);
  QAction* run_csv = menu->addAction(tr("Selected run's scalars and metrics…"), this, &RunsBrowser::choose_run_csv);
  connect(menu, &QMenu::aboutToShow, this, [this, run_csv] { run_csv->setEnabled(selected_runs().size() == 1); });
  export_->setMenu(menu);

  metric_value_ = new QComboBox(this);
  metric_value_->addItem(tr("Final metrics"));
  metric_value_->addItem(tr("Best metrics (picked on test)"));
  metric_value_->setToolTip(tr("Metric columns: value at the last evaluation, or the best over all evaluations —\n"
                               "the best epoch is picked on the test split itself, so it is optimistic: report final values"));
  connect(metric_value_, &QComboBox::currentIndexChanged, this, [this](int i) {
    model_->set_metric_value(i == 1 ? RunTableModel::MetricValue::Best : RunTableModel::MetricValue::Final);
  });

  group_ = new QComboBox(this);
  group_->setEditable(true);
  group_->addItems({QString(), QLatin1String(RunTableModel::kSeedGroup), QStringLiteral("method"), QStringLiteral("dataset"), QStringLiteral("tag"), QStringLiteral("lr"),
                    QStringLiteral("loss"), QStringLiteral("encoder.type")});
  group_->lineEdit()->setPlaceholderText(tr("group by…"));
  group_->setToolTip(tr("Group the runs by method, dataset, tag or any config key (type it: temperature, encoder.dim, ...);\n"
                        "\"seeds\" gathers runs whose configs differ only in the seed. A summary under the table gives each\n"
                        "group's mean ± sd over its completed runs."));
  connect(group_, &QComboBox::currentTextChanged, this, [this](const QString& key) { set_group_key(key); });

  view_ = new QTableView(this);
  view_->setModel(proxy_);
  view_->setSortingEnabled(true);
  view_->sortByColumn(RunTableModel::kId, Qt::DescendingOrder);
  view_->setColumnHidden(RunTableModel::kGroup, true);  // shown while grouping
  view_->setSelectionBehavior(QAbstractItemView::SelectRows);
  view_->setSelectionMode(QAbstractItemView::ExtendedSelection);
  // Double-click opens the run; a click on the current cell of the selected run edits its name, tags or notes.
  view_->setEditTriggers(QAbstractItemView::EditKeyPressed | QAbstractItemView::SelectedClicked);
  view_->setTextElideMode(Qt::ElideMiddle);  // sweep names differ at their end: "…[lr=0.001]" stays readable
  view_->setAlternatingRowColors(true);
  view_->setWordWrap(false);
  view_->verticalHeader()->hide();
  view_->verticalHeader()->setDefaultSectionSize(view_->fontMetrics().height() + 8);
  QHeaderView* header = view_->horizontalHeader();
  header->setSectionResizeMode(QHeaderView::Interactive);
  header->setStretchLastSection(true);
  header->setHighlightSections(false);
  header->setContextMenuPolicy(Qt::CustomContextMenu);
  connect(header, &QHeaderView::customContextMenuRequested, this,
          [this, header](const QPoint& at) { column_menu(header->logicalIndexAt(at))->popup(header->mapToGlobal(at)); });
  view_->resizeColumnsToContents();
  const int name_width = view_->fontMetrics().horizontalAdvance(QLatin1Char('M')) * 16;
  if (view_->columnWidth(RunTableModel::kName) < name_width) view_->setColumnWidth(RunTableModel::kName, name_width);
  // Columns were sized while the table was empty: fit them to the runs once rows arrive.
  connect(model_, &QAbstractItemModel::rowsInserted, this, [this, name_width] {
    view_->resizeColumnsToContents();
    if (view_->columnWidth(RunTableModel::kName) > name_width * 2) view_->setColumnWidth(RunTableModel::kName, name_width * 2);
  });
  // A run that changes (status "running" -> "completed", metrics arriving) widens its columns as needed,
  // never narrowing one the user sized.
  connect(model_, &QAbstractItemModel::dataChanged, this, [this](const QModelIndex& top_left, const QModelIndex& bottom_right) {
    for (int c = top_left.column(); c <= bottom_right.column(); ++c)
      if (c != RunTableModel::kName && !view_->isColumnHidden(c)) {
        const int before = view_->columnWidth(c);
        view_->resizeColumnToContents(c);
        if (view_->columnWidth(c) < before) view_->setColumnWidth(c, before);
      }
  });
  connect(view_, &QTableView::doubleClicked, this, [this](const QModelIndex& index) {
    const std::int64_t run = model_->run_id(proxy_->mapToSource(index));
    if (run >= 0) Q_EMIT run_activated(run);
  });
  connect(view_->selectionModel(), &QItemSelectionModel::selectionChanged, this, [this] {
    update_actions();
    Q_EMIT selection_changed(selected_runs());
  });

  count_ = new QLabel(this);
  message_ = new QLabel(this);
  message_->setStyleSheet(QStringLiteral("color: #c62828;"));
  message_->setWordWrap(true);
  message_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  message_->hide();

  connect(model_, &RunTableModel::error_occurred, this, &RunsBrowser::show_error);
  connect(model_, &RunTableModel::refreshed, this, [this] {
    message_->hide();
    update_count();
  });
  connect(model_, &QAbstractItemModel::rowsInserted, this, &RunsBrowser::update_count);
  connect(model_, &QAbstractItemModel::rowsRemoved, this, &RunsBrowser::update_count);
  connect(model_, &QAbstractItemModel::modelReset, this, &RunsBrowser::update_count);

  auto* bar = new QHBoxLayout;
  bar->addWidget(filter_, 1);
  bar->addWidget(saved_);
  bar->addWidget(group_);
  bar->addWidget(metric_value_);
  bar->addSpacing(8);
  for (QWidget* w : std::initializer_list<QWidget*>{refresh_, follow_, rename_, notes_, log_, delete_, compare_, export_}) bar->addWidget(w);

  auto* bottom = new QHBoxLayout;
  bottom->addWidget(message_, 1);
  bottom->addStretch();
  bottom->addWidget(count_);

  summary_ = new GroupSummaryModel(model_, proxy_, this);
  summary_view_ = new QTableView(this);
  summary_view_->setObjectName("group_summary");
  summary_view_->setModel(summary_);
  summary_view_->verticalHeader()->hide();
  summary_view_->setTextElideMode(Qt::ElideMiddle);
  summary_view_->horizontalHeader()->setStretchLastSection(false);
  summary_view_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  summary_title_ = new QLabel(this);
  summary_title_->setWordWrap(true);
  auto update_summary = [this] {
    summary_->recompute();
    const bool grouped = !model_->group_key().isEmpty();
    summary_view_->setVisible(grouped);
    summary_title_->setVisible(grouped);
    if (!grouped) return;
    summary_view_->resizeColumnsToContents();
    summary_title_->setText(tr("Groups: mean ± sample sd of the %1 values over each group's completed runs")
                                .arg(model_->metric_value() == RunTableModel::MetricValue::Best ? tr("best (chosen on the test split: optimistic)") : tr("final")));
    const int rows = std::min(summary_->rowCount(), 6);
    summary_view_->setFixedHeight(summary_view_->horizontalHeader()->height() + (rows + 1) * summary_view_->verticalHeader()->defaultSectionSize());
  };
  for (auto signal : {&QAbstractItemModel::rowsInserted, &QAbstractItemModel::rowsRemoved, &QAbstractItemModel::columnsInserted,
                      &QAbstractItemModel::columnsRemoved})
    connect(proxy_, signal, this, update_summary);
  connect(proxy_, &QAbstractItemModel::modelReset, this, update_summary);
  connect(proxy_, &QAbstractItemModel::layoutChanged, this, update_summary);
  connect(proxy_, &QAbstractItemModel::dataChanged, this, update_summary);
  connect(model_, &QAbstractItemModel::headerDataChanged, this, update_summary);
  update_summary();

  auto* layout = new QVBoxLayout(this);
  layout->addLayout(bar);
  layout->addWidget(filter_error_);
  layout->addWidget(view_, 1);
  layout->addWidget(summary_title_);
  layout->addWidget(summary_view_);
  layout->addLayout(bottom);

  if (!model_->last_error().isEmpty()) show_error(model_->last_error());
  update_actions();
  update_count();

  // The columns added to this store's table come back at the next start, and every change is kept.
  const QString setting = store_setting(QStringLiteral("runs-columns"), db);
  for (const QString& entry : QSettings().value(setting).toStringList()) {
    const qsizetype colon = entry.indexOf(QLatin1Char(':'));
    for (const auto& [kind, name] : kColumnKinds)
      if (colon > 0 && entry.left(colon) == QLatin1String(name)) model_->add_column({kind, entry.mid(colon + 1)});
  }
  auto keep_columns = [this, setting] {
    QStringList entries;
    for (const auto& column : model_->extra_columns())
      for (const auto& [kind, name] : kColumnKinds)
        if (column.kind == kind) entries << QString::fromLatin1(name) + QLatin1Char(':') + column.key;
    QSettings().setValue(setting, entries);
  };
  connect(model_, &QAbstractItemModel::columnsInserted, this, keep_columns);
  connect(model_, &QAbstractItemModel::columnsRemoved, this, keep_columns);
  // So does the grouping (set_group_key keeps each change).
  group_setting_ = store_setting(QStringLiteral("runs-group"), db);
  if (const QString key = QSettings().value(group_setting_).toString(); !key.isEmpty()) set_group_key(key);
}

RunsBrowser::~RunsBrowser() = default;

std::vector<std::int64_t> RunsBrowser::selected_runs() const {
  QModelIndexList rows = view_->selectionModel()->selectedRows();
  std::sort(rows.begin(), rows.end(), [](const QModelIndex& a, const QModelIndex& b) { return a.row() < b.row(); });
  std::vector<std::int64_t> runs;
  for (const QModelIndex& index : rows) {
    const std::int64_t run = model_->run_id(proxy_->mapToSource(index));
    if (run >= 0) runs.push_back(run);
  }
  return runs;
}

bool RunsBrowser::select_run(std::int64_t run) {
  const QModelIndex index = proxy_->mapFromSource(model_->index_of_run(run));
  if (!index.isValid()) return false;
  view_->selectionModel()->setCurrentIndex(
      index, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
  view_->scrollTo(index);
  return true;
}

void RunsBrowser::set_filter_text(const QString& text) { filter_->setText(text); }

QString RunsBrowser::filter_error() const { return filter_error_->text(); }

void RunsBrowser::apply_filter_text(const QString& text) {
  const std::string expression = text.toStdString();
  if (!looks_like_filter_expression(expression)) {
    proxy_->set_expression(std::nullopt);
    proxy_->setFilterFixedString(text);
    filter_error_->clear();
    filter_error_->hide();
  } else {
    try {
      proxy_->set_expression(RunFilter::parse(expression));
      filter_error_->clear();
      filter_error_->hide();
    } catch (const FilterError& e) {
      filter_error_->setText(QString::fromStdString(e.what()));  // the last filter stays while the expression is being typed
      filter_error_->show();
    }
  }
  update_count();
}

namespace {
constexpr const char* kSavedFiltersSetting = "runs/saved_filters";
}

QMap<QString, QString> RunsBrowser::saved_filters() const {
  QMap<QString, QString> out;
  const QVariantMap stored = QSettings().value(kSavedFiltersSetting).toMap();
  for (auto it = stored.begin(); it != stored.end(); ++it)
    if (it.value().canConvert<QString>() && !it.key().trimmed().isEmpty()) out.insert(it.key(), it.value().toString());
  return out;
}

void RunsBrowser::save_filter(const QString& name) {
  if (name.trimmed().isEmpty() || filter_->text().trimmed().isEmpty()) return;
  QVariantMap stored = QSettings().value(kSavedFiltersSetting).toMap();
  stored.insert(name.trimmed(), filter_->text());
  QSettings().setValue(kSavedFiltersSetting, stored);
}

void RunsBrowser::forget_filter(const QString& name) {
  QVariantMap stored = QSettings().value(kSavedFiltersSetting).toMap();
  stored.remove(name);
  QSettings().setValue(kSavedFiltersSetting, stored);
}

QMenu* RunsBrowser::saved_filters_menu() {
  QMenu* menu = saved_->menu();
  menu->clear();
  const QMap<QString, QString> saved = saved_filters();
  for (auto it = saved.begin(); it != saved.end(); ++it) {
    QAction* apply = menu->addAction(it.key() + QStringLiteral("  —  ") + it.value());
    apply->setData(it.key());
    const QString text = it.value();
    connect(apply, &QAction::triggered, this, [this, text] { set_filter_text(text); });
  }
  if (!saved.isEmpty()) menu->addSeparator();
  QAction* save = menu->addAction(tr("Save this filter…"));
  save->setEnabled(!filter_->text().trimmed().isEmpty());
  connect(save, &QAction::triggered, this, [this] {
    bool ok = false;
    const QString name = QInputDialog::getText(this, tr("Save filter"), tr("Name of the filter “%1”:").arg(filter_->text()), QLineEdit::Normal, {}, &ok);
    if (ok) save_filter(name);
  });
  if (saved.isEmpty()) return menu;
  QMenu* forget = menu->addMenu(tr("Forget"));
  for (auto it = saved.begin(); it != saved.end(); ++it) {
    const QString name = it.key();
    connect(forget->addAction(name), &QAction::triggered, this, [this, name] { forget_filter(name); });
  }
  return menu;
}

QString RunsBrowser::group_key() const { return group_->currentText().trimmed(); }

void RunsBrowser::set_group_key(const QString& key) {
  if (group_->currentText() != key) group_->setCurrentText(key);
  model_->set_group_key(key);
  if (!group_setting_.isEmpty()) QSettings().setValue(group_setting_, key.trimmed());
  const bool grouped = !key.trimmed().isEmpty();
  view_->setColumnHidden(RunTableModel::kGroup, !grouped);
  if (grouped) {
    // The group first, and the runs sorted by it (newest first inside each group).
    view_->horizontalHeader()->moveSection(view_->horizontalHeader()->visualIndex(RunTableModel::kGroup), 0);
    view_->sortByColumn(RunTableModel::kGroup, Qt::AscendingOrder);
    view_->resizeColumnToContents(RunTableModel::kGroup);
  } else {
    view_->sortByColumn(RunTableModel::kId, Qt::DescendingOrder);
  }
}

QMenu* RunsBrowser::column_menu(int section) {
  delete column_menu_;
  column_menu_ = new QMenu(this);
  QMenu* menu = column_menu_;
  for (int c = 0; c < model_->columnCount(); ++c) {
    if (c == RunTableModel::kGroup || c == RunTableModel::kId) continue;  // the group follows the grouping; the id stays
    QAction* a = menu->addAction(model_->headerData(c, Qt::Horizontal).toString());
    a->setCheckable(true);
    a->setChecked(!view_->isColumnHidden(c));
    connect(a, &QAction::toggled, this, [this, c](bool on) {
      view_->setColumnHidden(c, !on);
      if (on) view_->resizeColumnToContents(c);
    });
  }
  menu->addSeparator();
  QMenu* metrics = menu->addMenu(tr("Add a metric column"));
  std::vector<std::string> seen = model_->metrics_seen();
  QStringList names;
  for (const auto& m : seen) names.append(QString::fromStdString(m));
  names.sort();
  for (const QString& m : names) {
    if (m.contains(QLatin1Char('/'))) continue;  // the per-mode copies ("emb/P@5"): the plain name is the headline
    QAction* a = metrics->addAction(m);
    bool shown = false;  // already a column
    for (int c = 0; c < model_->columnCount(); ++c) shown = shown || model_->metric_of_section(c) == m;
    a->setEnabled(!shown);
    connect(a, &QAction::triggered, this, [this, m] { model_->add_column({RunTableModel::ExtraColumn::Kind::metric, m}); });
  }
  metrics->setEnabled(!metrics->isEmpty());
  menu->addAction(tr("Add a config column…"), this, [this] {
    bool ok = false;
    const QString key = QInputDialog::getText(this, tr("Config column"), tr("Config key (e.g. lr, encoder.dim, negatives.kind):"),
                                              QLineEdit::Normal, QString(), &ok).trimmed();
    if (ok && !key.isEmpty()) model_->add_column({RunTableModel::ExtraColumn::Kind::config, key});
  });
  QAction* duration = menu->addAction(tr("Add the duration column"), this,
                                      [this] { model_->add_column({RunTableModel::ExtraColumn::Kind::duration, {}}); });
  duration->setEnabled(std::find(model_->extra_columns().begin(), model_->extra_columns().end(),
                                 RunTableModel::ExtraColumn{RunTableModel::ExtraColumn::Kind::duration, {}}) == model_->extra_columns().end());
  for (const auto& [key, text] : {std::pair{RunTableModel::kPeakMemory, tr("Add the peak memory column")},
                                  std::pair{RunTableModel::kMeanCpu, tr("Add the CPU use column")}}) {
    const RunTableModel::ExtraColumn column{RunTableModel::ExtraColumn::Kind::system, QLatin1String(key)};
    QAction* a = menu->addAction(text, this, [this, column] { model_->add_column(column); });
    a->setEnabled(std::find(model_->extra_columns().begin(), model_->extra_columns().end(), column) == model_->extra_columns().end());
  }
  if (section >= RunTableModel::kColumnCount) {
    const QString name = model_->headerData(section, Qt::Horizontal).toString();
    menu->addAction(tr("Remove the column “%1”").arg(name), this, [this, section] { model_->remove_column(section); });
  }
  return menu;
}

void RunsBrowser::set_delete_confirmation(DeleteConfirmation confirm) {
  confirm_ = confirm ? std::move(confirm) : DeleteConfirmation(default_confirmation);
}

void RunsBrowser::refresh() { model_->refresh(); }

void RunsBrowser::set_follow(bool on) {
  model_->set_follow(on);
  if (follow_->isChecked() != on) follow_->setChecked(on);
}

void RunsBrowser::edit_notes_of_selected() {
  const std::vector<std::int64_t> runs = selected_runs();
  if (runs.size() != 1) return;
  const QModelIndex index = model_->index_of_run(runs.front(), RunTableModel::kNotes);
  bool ok = false;
  const QString notes = QInputDialog::getMultiLineText(this, tr("Notes on run %1").arg(runs.front()), tr("Notes (kept with the run, shown in its report):"),
                                                       index.data(Qt::EditRole).toString(), &ok);
  if (!ok) return;
  QString error;
  if (!model_->set_notes(runs.front(), notes, &error)) QMessageBox::warning(this, tr("Cannot save the notes"), error);
}

QWidget* RunsBrowser::show_log_of_selected() {
  const std::vector<std::int64_t> runs = selected_runs();
  if (runs.size() != 1) return nullptr;
  QString text;
  try {
    for (const LogLine& line : model_->store()->run_log(runs.front()))
      text += QStringLiteral("step %1  %2\n").arg(line.step, 6).arg(QString::fromStdString(line.message));
  } catch (const std::exception& e) {
    show_error(QString::fromUtf8(e.what()));
    return nullptr;
  }
  auto* view = new QPlainTextEdit(text.isEmpty() ? tr("Run %1 has no log (it was trained before runs kept one).").arg(runs.front()) : text);
  view->setObjectName(QStringLiteral("run_log"));
  view->setReadOnly(true);
  view->setLineWrapMode(QPlainTextEdit::NoWrap);
  view->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));  // the step column lines up
  view->setAttribute(Qt::WA_DeleteOnClose);
  view->setWindowFlag(Qt::Window);
  view->setParent(this, Qt::Window);
  view->setWindowTitle(tr("Log of run %1").arg(runs.front()));
  view->resize(900, 500);
  view->show();
  return view;
}

void RunsBrowser::rename_selected() {
  const std::vector<std::int64_t> runs = selected_runs();
  if (runs.size() != 1) return;
  const QModelIndex index = proxy_->mapFromSource(model_->index_of_run(runs.front(), RunTableModel::kName));
  if (!index.isValid()) return;
  view_->setCurrentIndex(index);
  view_->edit(index);
}

int RunsBrowser::delete_selected() {
  const std::vector<std::int64_t> runs = selected_runs();
  if (runs.empty()) return 0;
  QStringList names;
  for (std::int64_t run : runs) {
    const RunInfo* info = model_->run_info(run);
    const QString name = info ? QString::fromStdString(info->name) : QString();
    if (info && info->status == RunStatus::Running)
      names << tr("“%1” (#%2, still running: its trainer fails on its next write)").arg(name).arg(run);
    else
      names << tr("“%1” (#%2)").arg(name).arg(run);
  }
  if (!confirm_(this, names)) return 0;
  int deleted = 0;
  QStringList errors;
  for (std::int64_t run : runs) {
    QString error;
    if (model_->delete_run(run, &error)) ++deleted;
    else errors << error;
  }
  if (!errors.isEmpty()) show_error(errors.join(QLatin1Char('\n')));
  return deleted;
}

void RunsBrowser::compare_selected() {
  std::vector<std::int64_t> runs = selected_runs();
  if (runs.size() >= 2) Q_EMIT compare_requested(std::move(runs));
}

bool RunsBrowser::export_table_csv(const QString& path, QString* error) const {
  QSaveFile file(path);
  if (!file.open(QIODevice::WriteOnly | QIODevice::Text)) {
    if (error) *error = tr("%1: %2").arg(path, file.errorString());
    return false;
  }
  const int columns = proxy_->columnCount();
  QString text;
  for (int c = 0; c < columns; ++c) {
    if (view_->isColumnHidden(c)) continue;
    if (c) text += QLatin1Char(',');
    text += csv_field(proxy_->headerData(c, Qt::Horizontal).toString());
  }
  text += QLatin1Char('\n');
  for (int r = 0; r < proxy_->rowCount(); ++r) {
    for (int c = 0; c < columns; ++c) {
      if (view_->isColumnHidden(c)) continue;
      if (c) text += QLatin1Char(',');
      const QModelIndex index = proxy_->index(r, c);
      // Full texts (error messages, dataset paths) rather than what fits in a cell.
      const bool full = c == RunTableModel::kLastError || c == RunTableModel::kDataset || c == RunTableModel::kCreated || c == RunTableModel::kNotes;
      text += csv_field(proxy_->data(index, full ? RunTableModel::kSortRole : Qt::DisplayRole).toString());
    }
    text += QLatin1Char('\n');
  }
  file.write(text.toUtf8());
  if (!file.commit()) {
    if (error) *error = tr("%1: %2").arg(path, file.errorString());
    return false;
  }
  return true;
}

void RunsBrowser::choose_table_csv() {
  const QString path = xmc::gui::save_file_name(this, tr("Export runs table"), QStringLiteral("runs.csv"),
                                                    tr("CSV files (*.csv)"));
  if (path.isEmpty()) return;
  QString error;
  if (!export_table_csv(path, &error)) show_error(error);
}

void RunsBrowser::choose_run_csv() {
  const std::vector<std::int64_t> runs = selected_runs();
  if (runs.size() != 1) return;
  const QString dir = xmc::gui::existing_directory(
      this, tr("Folder for run-%1-scalars.csv and run-%1-metrics.csv").arg(runs.front()));
  if (dir.isEmpty()) return;
  const QString stem = dir + QStringLiteral("/run-%1-").arg(runs.front());
  QString error;
  if (!export_run_csv(model_->store_path(), runs.front(), stem + QStringLiteral("scalars.csv"),
                      stem + QStringLiteral("metrics.csv"), &error))
    show_error(error);
}

void RunsBrowser::update_actions() {
  const std::size_t n = selected_runs().size();
  rename_->setEnabled(n == 1);
  notes_->setEnabled(n == 1);
  log_->setEnabled(n == 1);
  delete_->setEnabled(n >= 1);
  compare_->setEnabled(n >= 2);
}

void RunsBrowser::update_count() {
  const int total = model_->rowCount();
  const int shown = proxy_->rowCount();
  const QString runs = total == 1 ? tr("1 run") : tr("%1 runs").arg(total);
  count_->setText(shown == total ? runs : tr("%1 of %2 shown").arg(shown).arg(runs));
  update_actions();
}

void RunsBrowser::show_error(const QString& message) {
  message_->setText(message);
  message_->setToolTip(message);
  message_->show();
}

}  // namespace xmc::gui
