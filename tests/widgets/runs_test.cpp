// Runs browsing, comparing and reports: RunTableModel, RunsBrowser, CompareView and report_export over a
// temporary RunStore, including runs written by another process (fork()).
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <QAbstractItemModel>
#include <QAbstractItemModelTester>
#include <QColor>
#include <QApplication>
#include <QDir>
#include <QFile>
#include <QFont>
#include <QIcon>
#include <QAction>
#include <QMenu>
#include <QPixmap>
#include <QPlainTextEdit>
#include <QProcess>
#include <QPushButton>
#include <QSignalSpy>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <tuple>
#include <vector>

#include "engine/config/train_config.h"
#include "engine/data/csr_matrix.h"
#include "engine/data/dataset.h"
#include "engine/session/session.h"
#include "engine/store/run_store.h"
#include "widgets/compare/compare_view.h"
#include "widgets/plots/decile_plot.h"
#include "widgets/runs/group_summary_model.h"
#include "widgets/plots/metric_plot.h"
#include "widgets/runs/report_export.h"
#include "widgets/plots/plot_export.h"
#include "widgets/runs/table_page_breaks.h"
#include "widgets/runs/run_table_model.h"
#include "widgets/runs/runs_browser.h"
#include "widgets/search/search_results_model.h"

using xmc::gui::CompareView;
using xmc::gui::RunsBrowser;
using xmc::gui::RunTableModel;

namespace {

// Pictures to look at: $XMC_SCREENSHOT_DIR, else a fixed temporary folder.
const QString kShots = qEnvironmentVariableIsEmpty("XMC_SCREENSHOT_DIR") ? QStringLiteral("/tmp/xmc-runs-shots")
                                                                         : qEnvironmentVariable("XMC_SCREENSHOT_DIR");

const char* kTsnePayload =
    R"({"query":1,"query_text":"q","epoch":1,"step":10,"points":[{"x":0,"y":0,"group":"query","label":-1,"text":"q"},)"
    R"({"x":1,"y":1,"group":"positive","label":3,"text":"lbl"}]})";

/// Runs `body` in a forked child with its own RunStore on `db`; the child exits without cleaning up (as a
/// crashed or finished `xmc train` would). Returns the child's exit status (0 = body ran without throwing).
template <typename Body>
int in_child_process(const std::filesystem::path& db, Body body) {
  const pid_t pid = fork();
  if (pid == 0) {
    int rc = 0;
    try {
      xmc::RunStore store(db);
      body(store);
    } catch (...) {
      rc = 3;
    }
    _exit(rc);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

QStringList lines_of(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly | QIODevice::Text)) return {};
  QStringList lines = QString::fromUtf8(f.readAll()).split(QLatin1Char('\n'));
  if (!lines.isEmpty() && lines.back().isEmpty()) lines.pop_back();
  return lines;
}

/// Row of `metric` in the compare model's vertical header ("P@1 (%)"), -1 when absent.
int metric_row(const QAbstractItemModel* m, const QString& metric) {
  for (int r = 0; r < m->rowCount(); ++r)
    if (m->headerData(r, Qt::Vertical).toString() == metric + QStringLiteral(" (%)")) return r;
  return -1;
}

}  // namespace

class RunsTest : public QObject {
  Q_OBJECT

 private:
  QTemporaryDir tmp_;
  std::filesystem::path db_;
  std::filesystem::path dataset_;
  std::int64_t alpha_ = 0, beta_ = 0, gamma_ = 0;

  std::filesystem::path path(const char* name) const { return std::filesystem::path(tmp_.path().toStdString()) / name; }

 private Q_SLOTS:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);  // the tables' settings go to a test folder, not the user's
    QVERIFY(tmp_.isValid());
    QDir().mkpath(kShots);
    db_ = path("runs.sqlite");

    // A tiny dataset folder, so that the report can show its statistics.
    dataset_ = path("tiny-dataset");
    xmc::Dataset d;
    d.meta.name = "tiny";
    d.train_text = {"red apple", "green pear", "yellow banana"};
    d.test_text = {"apple", "banana"};
    d.label_text = {"fruit", "apple", "pear", "banana"};
    d.train_labels = xmc::csr_from_rows({{0, 1}, {0, 2}, {0, 3}}, 4);
    d.test_labels = xmc::csr_from_rows({{0, 1}, {3}}, 4);
    xmc::save_dataset(d, dataset_);

    xmc::RunStore store(db_);
    const auto metrics = [](double base) {
      std::vector<std::pair<std::string, double>> m;
      const std::vector<std::pair<std::string, double>> offsets = {
          {"P@1", 0.10}, {"P@3", 0.05}, {"P@5", 0.0}, {"nDCG@1", 0.10}, {"nDCG@3", 0.07}, {"nDCG@5", 0.06},
          {"PSP@1", -0.05}, {"PSP@3", -0.08}, {"PSP@5", -0.10}, {"PSnDCG@1", -0.05}, {"PSnDCG@3", -0.06},
          {"PSnDCG@5", -0.07}, {"R@1", -0.2}, {"R@3", -0.1}, {"R@5", 0.1}};
      for (const auto& [name, off] : offsets) m.emplace_back(name, base + off);
      return m;
    };

    alpha_ = store.create_run({.name = "alpha-bow",
                               .config_json = R"({"method":"dexml","encoder":{"kind":"bow","dim":64},"lr":0.001,"epochs":2})",
                               .dataset_path = dataset_.string(),
                               .dataset_fingerprint = xmc::dataset_fingerprint(dataset_),
                               .device = "cpu"});
    store.set_status(alpha_, xmc::RunStatus::Running);
    std::vector<xmc::ScalarPoint> scalars;
    for (int s = 1; s <= 60; ++s) {
      const double epoch = s / 30.0;
      scalars.push_back({s, epoch, "loss", 2.0 * std::exp(-s / 20.0) + 0.05 * ((s * 7) % 5) / 5.0, 1.7e9 + s});
      scalars.push_back({s, epoch, "lr", 1e-3 * std::min(1.0, s / 10.0), 1.7e9 + s});
    }
    store.add_scalars(alpha_, scalars);
    store.add_log_line(alpha_, 0, "epoch 1/2");
    store.add_log_line(alpha_, 60, "UniDEC: concat weight 0.8 (held-out <curve>)");
    store.add_evaluation(alpha_, 1, 30, metrics(0.40));
    store.add_evaluation(alpha_, 2, 60, metrics(0.45));  // final P@1 = 55 %, P@5 = 45 %, PSP@5 = 35 %
    store.add_decile_table(alpha_, 1, "P@5", {0.08, 0.07, 0.06, 0.05, 0.04, 0.03, 0.03, 0.02, 0.01, 0.01});
    store.add_decile_table(alpha_, 2, "P@5", {0.09, 0.08, 0.07, 0.05, 0.05, 0.04, 0.03, 0.02, 0.01, 0.01});
    store.add_tsne_snapshot(alpha_, 1, 1, kTsnePayload);
    store.add_artifact(alpha_, "checkpoint", path("alpha.ckpt").string());
    store.set_status(alpha_, xmc::RunStatus::Completed);

    beta_ = store.create_run({.name = "beta-ngame",
                              .config_json = R"({"method":"ngame","lr":0.0002})",
                              .dataset_path = path("gone-dataset").string(),
                              .device = "cuda:0"});
    store.set_status(beta_, xmc::RunStatus::Running);
    std::vector<xmc::ScalarPoint> beta_scalars;
    for (int s = 1; s <= 60; ++s) beta_scalars.push_back({s, s / 30.0, "loss", 1.5 * std::exp(-s / 15.0) + 0.1, 1.7e9 + s});
    store.add_scalars(beta_, beta_scalars);
    store.add_evaluation(beta_, 1, 30, metrics(0.38));
    // Final: P@1 = 50 % (alpha is better), P@5 = 47 % and PSP@5 = 37 % (beta is better).
    auto m = metrics(0.47);
    for (auto& [name, value] : m)
      if (name == "P@1") value = 0.50;
    store.add_evaluation(beta_, 2, 60, m);
    store.add_decile_table(beta_, 2, "P@5", {0.10, 0.09, 0.07, 0.06, 0.05, 0.04, 0.03, 0.01, 0.01, 0.01});
    store.set_status(beta_, xmc::RunStatus::Completed);

    gamma_ = store.create_run({.name = "gamma, \"quoted\"", .dataset_path = dataset_.string()});
    store.mark_failed(gamma_, "CUDA out of memory\nwhile allocating 2 GiB");
  }

  void model_lists_runs_with_columns_and_percentages() {
    RunTableModel model(db_);
    QCOMPARE(model.last_error(), QString());
    QCOMPARE(model.rowCount(), 3);
    QCOMPARE(model.columnCount(), int(RunTableModel::kColumnCount));
    QCOMPARE(model.headerData(RunTableModel::kName, Qt::Horizontal).toString(), QStringLiteral("Name"));
    QCOMPARE(model.headerData(RunTableModel::kP1, Qt::Horizontal).toString(), QStringLiteral("P@1 (%)"));
    QCOMPARE(model.headerData(RunTableModel::kPsp5, Qt::Horizontal).toString(), QStringLiteral("PSP@5 (%)"));
    // Newest first.
    QCOMPARE(model.run_id(model.index(0, 0)), gamma_);
    QCOMPARE(model.run_id(model.index(2, 0)), alpha_);

    const auto text = [&](std::int64_t run, int column) { return model.index_of_run(run, column).data().toString(); };
    QCOMPARE(text(alpha_, RunTableModel::kId), QString::number(alpha_));
    QCOMPARE(text(alpha_, RunTableModel::kName), QStringLiteral("alpha-bow"));
    QCOMPARE(text(alpha_, RunTableModel::kStatus), QStringLiteral("completed"));
    QCOMPARE(text(alpha_, RunTableModel::kDataset), QStringLiteral("tiny-dataset"));
    QCOMPARE(text(beta_, RunTableModel::kDevice), QStringLiteral("cuda:0"));
    QCOMPARE(text(alpha_, RunTableModel::kP1), QStringLiteral("55.00"));
    QCOMPARE(text(alpha_, RunTableModel::kP5), QStringLiteral("45.00"));
    QCOMPARE(text(alpha_, RunTableModel::kPsp5), QStringLiteral("35.00"));
    QCOMPARE(text(beta_, RunTableModel::kP1), QStringLiteral("50.00"));
    QCOMPARE(text(gamma_, RunTableModel::kP1), QString());  // never evaluated
    QCOMPARE(text(gamma_, RunTableModel::kStatus), QStringLiteral("failed"));
    QVERIFY(text(gamma_, RunTableModel::kLastError).startsWith(QStringLiteral("CUDA out of memory")));
    QVERIFY(!text(gamma_, RunTableModel::kLastError).contains(QLatin1Char('\n')));
    QVERIFY(!model.index_of_run(gamma_, RunTableModel::kStatus).data(Qt::DecorationRole).isNull());
    QVERIFY(model.index_of_run(alpha_, RunTableModel::kCreated).data().toString().contains(QLatin1Char(':')));
    QVERIFY(model.flags(model.index_of_run(alpha_, RunTableModel::kName)) & Qt::ItemIsEditable);
    QVERIFY(!(model.flags(model.index_of_run(alpha_, RunTableModel::kP1)) & Qt::ItemIsEditable));

    // Best over the evaluations instead of the final one (here equal, since the runs improved).
    model.set_metric_value(RunTableModel::MetricValue::Best);
    QCOMPARE(text(alpha_, RunTableModel::kP1), QStringLiteral("55.00"));
    QVERIFY(model.index_of_run(alpha_, RunTableModel::kP1).data(Qt::ToolTipRole).toString().contains(QStringLiteral("epoch 2")));
  }

  // One mode's search results as a table: the top-k best first, then the true labels that missed it under a
  // separator at their ranks (italic); true labels green, added labels blue, whole texts in the tooltips.
  void search_results_model_shows_top_k_then_missed_true_labels() {
    xmc::gui::SearchResultsModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    const std::vector<std::string> texts = {"alpha", "beta", "gamma", "delta", "epsilon"};
    const std::vector<xmc::LabelScore> top = {{2, 0.9f, "gamma"}, {4, 0.5f, "epsilon"}, {0, 0.25f, "alpha"}};
    const std::vector<std::pair<std::int64_t, xmc::LabelRank>> missed = {{3, {4, 0.125f}}};
    model.set_results(top, missed, texts, /*truth=*/{0, 3}, /*added=*/{4});
    QCOMPARE(model.rowCount(), 3 + 1 + 1);
    QCOMPARE(model.columnCount(), 3);
    QCOMPARE(model.top_rows(), 3);
    QCOMPARE(model.top_texts(), (QStringList{"gamma", "epsilon", "alpha"}));
    const auto cell = [&](int row, int column, int role = Qt::DisplayRole) { return model.data(model.index(row, column), role); };
    QCOMPARE(cell(0, 0).toString(), QString("1"));
    QCOMPARE(cell(0, 1).toString(), QString("0.9000"));
    QCOMPARE(cell(1, 2, xmc::gui::SearchResultsModel::kLabelIdRole).toLongLong(), 4);
    QVERIFY(!cell(0, 2, Qt::BackgroundRole).isValid());                            // neither true nor added
    QCOMPARE(cell(1, 2, Qt::BackgroundRole).value<QColor>(), QColor(205, 222, 250));  // added: blue
    QCOMPARE(cell(2, 2, Qt::BackgroundRole).value<QColor>(), QColor(200, 240, 200));  // true: green
    QVERIFY(cell(2, 2, Qt::ToolTipRole).toString().startsWith("ground truth: alpha"));
    QVERIFY(cell(3, 2).toString().contains("below the top 3"));
    QVERIFY(!cell(3, 2, xmc::gui::SearchResultsModel::kLabelIdRole).isValid());
    QCOMPARE(cell(4, 0).toString(), QString("4"));  // its rank, not its row
    QCOMPARE(cell(4, 2).toString(), QString("delta"));
    QVERIFY(cell(4, 2, Qt::FontRole).value<QFont>().italic());
    QCOMPARE(cell(4, 2, Qt::ToolTipRole).toString(), QString("ground truth, rank 4 of 5: delta"));
    QCOMPARE(model.headerData(2, Qt::Horizontal, Qt::DisplayRole).toString(), QString("label"));
    // Another run's results: its true labels are matched by text; nothing below the top-k.
    model.set_results_by_text({{7, 0.5f, "delta"}, {1, 0.25f, "beta"}}, {"delta"});
    QCOMPARE(model.rowCount(), 2);
    QCOMPARE(cell(0, 2, Qt::BackgroundRole).value<QColor>(), QColor(200, 240, 200));
    QVERIFY(!cell(1, 2, Qt::BackgroundRole).isValid());
    model.clear();
    QCOMPARE(model.rowCount(), 0);
    QVERIFY(model.top_texts().isEmpty());
  }

  void tags_and_notes_are_edited_in_the_table_kept_and_filtered_on() {
    RunsBrowser browser(db_);
    RunTableModel& model = *browser.model();
    QCOMPARE(model.index_of_run(alpha_, RunTableModel::kMethod).data().toString(), QStringLiteral("dexml"));
    const QModelIndex tags = model.index_of_run(alpha_, RunTableModel::kTags);
    QVERIFY(model.flags(tags) & Qt::ItemIsEditable);
    QVERIFY(model.setData(tags, QStringLiteral(" baseline , bow,,baseline"), Qt::EditRole));  // trimmed, once each
    QVERIFY(model.setData(model.index_of_run(alpha_, RunTableModel::kNotes), QStringLiteral("tau 0.05 overfits\nthe head"), Qt::EditRole));
    {
      const xmc::RunInfo stored = xmc::RunStore(db_).get_run(alpha_);
      QCOMPARE(stored.tags, (std::vector<std::string>{"baseline", "bow"}));
      QCOMPARE(stored.notes, std::string("tau 0.05 overfits\nthe head"));
    }
    QCOMPARE(model.index_of_run(alpha_, RunTableModel::kTags).data().toString(), QStringLiteral("baseline, bow"));
    QCOMPARE(model.index_of_run(alpha_, RunTableModel::kNotes).data().toString(), QStringLiteral("tau 0.05 overfits …"));  // first line
    // Editing the cell replaces the set: "bow" goes.
    QVERIFY(model.setData(tags, QStringLiteral("baseline"), Qt::EditRole));
    QCOMPARE(xmc::RunStore(db_).get_run(alpha_).tags, std::vector<std::string>{"baseline"});
    // A bad tag is refused with its text and changes nothing.
    QString error;
    QVERIFY(!model.set_tags(alpha_, QStringLiteral("ok, %1").arg(QString(70, QLatin1Char('x'))), &error));
    QVERIFY2(error.contains(QStringLiteral("1 to 64 bytes")), qPrintable(error));
    QCOMPARE(xmc::RunStore(db_).get_run(alpha_).tags, std::vector<std::string>{"baseline"});
    // The filter finds runs by tag, notes and method.
    for (const QString& text : {QStringLiteral("baseline"), QStringLiteral("overfits"), QStringLiteral("dexml")}) {
      browser.set_filter_text(text);
      QCOMPARE(browser.proxy()->rowCount(), 1);
    }
    browser.set_filter_text(QString());
    // Grouping: a Group column first, the rows sorted by it; by method, then by a config key.
    QVERIFY(browser.view()->isColumnHidden(RunTableModel::kGroup));
    browser.set_group_key(QStringLiteral("method"));
    QVERIFY(!browser.view()->isColumnHidden(RunTableModel::kGroup));
    QCOMPARE(browser.view()->horizontalHeader()->visualIndex(RunTableModel::kGroup), 0);
    QStringList groups;
    for (int r = 0; r < browser.proxy()->rowCount(); ++r) groups << browser.proxy()->index(r, RunTableModel::kGroup).data().toString();
    QCOMPARE(groups, (QStringList{QString(), QStringLiteral("dexml"), QStringLiteral("ngame")}));  // gamma has no method
    browser.set_group_key(QStringLiteral("lr"));
    QCOMPARE(model.index_of_run(alpha_, RunTableModel::kGroup).data().toString(), QStringLiteral("0.001"));
    QCOMPARE(model.index_of_run(gamma_, RunTableModel::kGroup).data().toString(), QStringLiteral("—"));
    browser.set_group_key(QStringLiteral("encoder.dim"));  // nested in the stored config
    QCOMPARE(model.index_of_run(alpha_, RunTableModel::kGroup).data().toString(), QStringLiteral("64"));
    browser.set_group_key(QString());
    QVERIFY(browser.view()->isColumnHidden(RunTableModel::kGroup));
    QVERIFY(model.set_tags(alpha_, QString()));  // clears them, for the other tests
    QVERIFY(model.set_notes(alpha_, QString()));
  }

  void refresh_without_changes_keeps_the_model() {
    RunTableModel model(db_);
    QSignalSpy reset(&model, &QAbstractItemModel::modelReset);
    QSignalSpy changed(&model, &QAbstractItemModel::dataChanged);
    QSignalSpy inserted(&model, &QAbstractItemModel::rowsInserted);
    QVERIFY(model.refresh());
    QCOMPARE(reset.count(), 0);
    QCOMPARE(changed.count(), 0);
    QCOMPARE(inserted.count(), 0);
  }

  void run_written_by_another_process_appears_after_refresh() {
    RunsBrowser browser(db_);
    RunTableModel& model = *browser.model();
    const int before = model.rowCount();
    QVERIFY(browser.select_run(beta_));
    QSignalSpy reset(&model, &QAbstractItemModel::modelReset);
    QSignalSpy inserted(&model, &QAbstractItemModel::rowsInserted);

    QCOMPARE(in_child_process(db_, [](xmc::RunStore& store) {
               const std::int64_t run = store.create_run({.name = "from-another-process"});
               store.add_evaluation(run, 1, 5, {{"P@1", 0.123}});
               store.set_status(run, xmc::RunStatus::Completed);
             }),
             0);
    QCOMPARE(model.rowCount(), before);
    QVERIFY(model.refresh());
    QCOMPARE(model.rowCount(), before + 1);
    QCOMPARE(reset.count(), 0);
    QCOMPARE(inserted.count(), 1);
    QCOMPARE(model.index(0, RunTableModel::kName).data().toString(), QStringLiteral("from-another-process"));
    QCOMPARE(model.index(0, RunTableModel::kP1).data().toString(), QStringLiteral("12.30"));
    // The selection stayed on the same run.
    QCOMPARE(browser.selected_runs(), std::vector<std::int64_t>{beta_});

    QVERIFY(model.delete_run(model.run_id(model.index(0, 0))));
    QCOMPARE(model.rowCount(), before);
  }

  void the_log_button_shows_the_selected_runs_phases_and_decisions() {
    RunsBrowser browser(db_);
    QPushButton* button = nullptr;
    for (auto* b : browser.findChildren<QPushButton*>())
      if (b->text() == QStringLiteral("Log…")) button = b;
    QVERIFY(button);
    QVERIFY(browser.select_run(alpha_));
    QVERIFY(button->isEnabled());  // one run selected
    QWidget* window = browser.show_log_of_selected();
    QVERIFY(window);
    auto* text = qobject_cast<QPlainTextEdit*>(window);
    QVERIFY(text);
    QVERIFY(text->isReadOnly());
    const QStringList lines = text->toPlainText().split(QLatin1Char('\n'), Qt::SkipEmptyParts);
    QCOMPARE(lines.size(), 2);
    QVERIFY2(lines[0].startsWith(QStringLiteral("step      0")) && lines[0].endsWith(QStringLiteral("epoch 1/2")), qPrintable(lines[0]));
    QVERIFY2(lines[1].contains(QStringLiteral("60")) && lines[1].endsWith(QStringLiteral("UniDEC: concat weight 0.8 (held-out <curve>)")),
             qPrintable(lines[1]));
    QVERIFY(window->windowTitle().contains(QString::number(alpha_)));
    // A run from before runs kept a log says so instead of showing nothing.
    QVERIFY(browser.select_run(beta_));
    QWidget* empty = browser.show_log_of_selected();
    QVERIFY(empty);
    QVERIFY(qobject_cast<QPlainTextEdit*>(empty)->toPlainText().contains(QStringLiteral("no log")));
    window->resize(700, 200);
    QVERIFY(window->grab().save(kShots + QStringLiteral("/run-log.png")));
  }

  void follow_mode_picks_up_other_processes_and_reaps_crashed_runs() {
    RunTableModel model(db_);
    const int before = model.rowCount();
    model.set_follow(true, 50);
    QVERIFY(model.following());
    std::int64_t crashed = -1;
    // A trainer that marks its run running and dies without finishing it.
    int pipe_fds[2];
    QCOMPARE(pipe(pipe_fds), 0);
    QCOMPARE(in_child_process(db_, [&](xmc::RunStore& store) {
               const std::int64_t run = store.create_run({.name = "crashes"});
               store.set_status(run, xmc::RunStatus::Running);  // owner = this child
               store.add_scalars(run, {{1, 0.1, "loss", 3.0, xmc::RunStore::now_seconds()}});
               if (write(pipe_fds[1], &run, sizeof run) != sizeof run) _exit(4);
             }),
             0);
    QCOMPARE(read(pipe_fds[0], &crashed, sizeof crashed), static_cast<ssize_t>(sizeof crashed));
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    QTRY_COMPARE_WITH_TIMEOUT(model.rowCount(), before + 1, 5000);
    const QModelIndex status = model.index_of_run(crashed, RunTableModel::kStatus);
    QCOMPARE(status.data().toString(), QStringLiteral("failed"));
    QVERIFY(model.index_of_run(crashed, RunTableModel::kLastError).data().toString().contains(QStringLiteral("ended without finishing")));
    model.set_follow(false);
    QVERIFY(!model.following());
    QVERIFY(model.delete_run(crashed));
  }

  void rename_through_the_model_edits_the_store() {
    RunTableModel model(db_);
    const QModelIndex name = model.index_of_run(beta_, RunTableModel::kName);
    QVERIFY(model.setData(name, QStringLiteral("  beta renamed ")));
    QCOMPARE(name.data().toString(), QStringLiteral("beta renamed"));
    QCOMPARE(xmc::Session(db_).get_run(beta_).name, std::string("beta renamed"));
    QSignalSpy errors(&model, &RunTableModel::error_occurred);
    QVERIFY(!model.setData(name, QStringLiteral("   ")));
    QCOMPARE(errors.count(), 1);
    QCOMPARE(xmc::Session(db_).get_run(beta_).name, std::string("beta renamed"));
    QVERIFY(model.rename_run(beta_, QStringLiteral("beta-ngame")));
  }

  void browser_filters_compares_and_exports() {
    RunsBrowser browser(db_);
    QCOMPARE(browser.proxy()->rowCount(), 3);
    browser.set_filter_text(QStringLiteral("BETA"));
    QCOMPARE(browser.proxy()->rowCount(), 1);
    browser.set_filter_text(QStringLiteral("failed"));  // status
    QCOMPARE(browser.proxy()->rowCount(), 1);
    browser.set_filter_text(QStringLiteral("tiny-dataset"));  // dataset path
    QCOMPARE(browser.proxy()->rowCount(), 2);
    browser.set_filter_text(QString());

    QSignalSpy compare(&browser, &RunsBrowser::compare_requested);
    QSignalSpy selection(&browser, &RunsBrowser::selection_changed);
    QVERIFY(browser.select_run(alpha_));
    browser.compare_selected();
    QCOMPARE(compare.count(), 0);  // one run is not a comparison
    browser.view()->selectAll();
    QVERIFY(selection.count() >= 2);
    QCOMPARE(browser.selected_runs().size(), std::size_t(3));
    browser.compare_selected();
    QCOMPARE(compare.count(), 1);
    QCOMPARE(compare.front().front().value<std::vector<std::int64_t>>().size(), std::size_t(3));

    QSignalSpy activated(&browser, &RunsBrowser::run_activated);
    const QModelIndex cell = browser.proxy()->mapFromSource(browser.model()->index_of_run(alpha_, RunTableModel::kName));
    Q_EMIT browser.view()->doubleClicked(cell);
    QCOMPARE(activated.count(), 1);
    QCOMPARE(activated.front().front().value<std::int64_t>(), alpha_);

    const QString csv = tmp_.filePath(QStringLiteral("runs-table.csv"));
    QString error;
    QVERIFY2(browser.export_table_csv(csv, &error), qPrintable(error));
    const QStringList lines = lines_of(csv);
    QVERIFY(lines.size() >= 4);  // header + 3 runs (the failed run's error has a quoted line break)
    QVERIFY(lines.front().startsWith(QStringLiteral("ID,Name,Status,Created,Method,Dataset,Device,Mode,P@1 (%),P@5 (%),PSP@5 (%),Tags,Notes,Last error")));
    QVERIFY(lines.join(QLatin1Char('\n')).contains(QStringLiteral("\"gamma, \"\"quoted\"\"\"")));

    browser.resize(1250, 300);
    browser.show();
    QVERIFY(QTest::qWaitForWindowExposed(&browser));
    QVERIFY(browser.select_run(beta_));
    QVERIFY(browser.grab().save(kShots + QStringLiteral("/runs-browser.png")));
  }

  void filter_expressions_choose_runs_by_config_and_metrics_and_are_saved() {
    RunsBrowser browser(db_);
    browser.set_filter_text(QStringLiteral(R"(method == "dexml" and P@1 > 0.5)"));
    QCOMPARE(browser.filter_error(), QString());
    QCOMPARE(browser.proxy()->rowCount(), 1);
    QCOMPARE(browser.model()->run_id(browser.proxy()->mapToSource(browser.proxy()->index(0, 0))), alpha_);
    browser.set_filter_text(QStringLiteral("lr < 0.0005"));
    QCOMPARE(browser.proxy()->rowCount(), 1);  // beta's 0.0002
    browser.set_filter_text(QStringLiteral("P@1 >= 50%"));
    QCOMPARE(browser.proxy()->rowCount(), 2);
    browser.set_filter_text(QStringLiteral("not P@1 > 0"));  // the failed run was never evaluated
    QCOMPARE(browser.proxy()->rowCount(), 1);
    // While an expression is being typed the last filter stays, and the box says what is wrong and where.
    browser.set_filter_text(QStringLiteral("P@1 > "));
    QVERIFY2(browser.filter_error().contains(QStringLiteral("at character 7")), qPrintable(browser.filter_error()));
    QCOMPARE(browser.proxy()->rowCount(), 1);
    browser.set_filter_text(QStringLiteral("lrr < 1"));
    QVERIFY2(browser.filter_error().contains(QStringLiteral("unknown name \"lrr\"")), qPrintable(browser.filter_error()));
    browser.resize(1250, 300);
    browser.show();
    QVERIFY(QTest::qWaitForWindowExposed(&browser));
    QVERIFY(browser.grab().save(kShots + QStringLiteral("/runs-filter-error.png")));
    // Words find text again.
    browser.set_filter_text(QStringLiteral("beta"));
    QCOMPARE(browser.filter_error(), QString());
    QCOMPARE(browser.proxy()->rowCount(), 1);

    // A saved filter is there for every browser, from the star's menu.
    browser.set_filter_text(QStringLiteral("lr < 0.0005"));
    browser.save_filter(QStringLiteral("slow lr"));
    RunsBrowser other(db_);
    QCOMPARE(other.saved_filters().value(QStringLiteral("slow lr")), QStringLiteral("lr < 0.0005"));
    QAction* apply = nullptr;
    for (QAction* action : other.saved_filters_menu()->actions())
      if (action->data().toString() == QStringLiteral("slow lr")) apply = action;
    QVERIFY(apply != nullptr);
    QCOMPARE(other.proxy()->rowCount(), 3);
    apply->trigger();
    QCOMPARE(other.proxy()->rowCount(), 1);
    other.forget_filter(QStringLiteral("slow lr"));
    QVERIFY(other.saved_filters().isEmpty());
  }

  void seed_groups_are_named_by_what_sets_them_apart_within_their_method_and_dataset() {
    // An lr x seed sweep of dexml on wn8k beside a baseline dexml run there and runs of another method and dataset that
    // differ in other keys: each sweep group is named by its lr first (the key its family varies most). It was named by
    // the keys varying anywhere in the store, alphabetically: "batch_size=256, dataset=…, encoder.bag=mean, … config".
    const auto db = path("seed-names.sqlite");
    {
      xmc::RunStore store(db);
      auto add = [&](const std::string& dataset, const std::string& config) {
        const auto run = store.create_run({.name = "run", .config_json = config, .dataset_path = dataset});
        store.set_status(run, xmc::RunStatus::Completed);
      };
      for (const char* lr : {"0.01", "0.02"})
        for (const char* seed : {"1", "2"})
          add("data/wn8k", std::string(R"({"method":"dexml","dataset":"data/wn8k","batch_size":256,"encoder.bag":"mean","lr":)") + lr +
                               R"(,"seed":)" + seed + "}");
      add("data/wn8k", R"({"method":"dexml","dataset":"data/wn8k","batch_size":512,"encoder.bag":"l2","lr":0.003,"seed":1})");
      add("data/wn8k", R"({"method":"ngame","dataset":"data/wn8k","batch_size":1024,"encoder.bag":"l2","lr":0.001,"seed":1})");
      add("data/bibtex", R"({"method":"dexml","dataset":"data/bibtex","batch_size":64,"encoder.bag":"l2","lr":0.05,"epochs":30,"seed":1})");
    }
    RunsBrowser browser(db);
    RunTableModel* model = browser.model();
    browser.set_group_key(QLatin1String(RunTableModel::kSeedGroup));
    QCOMPARE(model->group_of(*model->run_info(1)), QStringLiteral("dexml · wn8k · lr=0.01, batch_size=256, encoder.bag=mean"));
    QCOMPARE(model->group_of(*model->run_info(2)), model->group_of(*model->run_info(1)));
    QCOMPARE(model->group_of(*model->run_info(3)), QStringLiteral("dexml · wn8k · lr=0.02, batch_size=256, encoder.bag=mean"));
    QCOMPARE(model->group_of(*model->run_info(6)), QStringLiteral("ngame · wn8k"));  // alone in its family
    QCOMPARE(model->group_of(*model->run_info(7)), QStringLiteral("dexml · bibtex"));
  }

  void seed_groups_summarise_mean_and_sd_and_columns_are_chosen() {
    // Three completed seeds of one config (P@1 40, 42, 44 %: mean 42, sample sd 2), a fourth seed that failed
    // (never averaged), and another lr.
    const auto db = path("seeds.sqlite");
    std::vector<std::int64_t> seeds;
    {
      xmc::RunStore store(db);
      auto add = [&](const char* name, const std::string& config, double p1, double ndcg5, xmc::RunStatus status) {
        const auto run = store.create_run({.name = name, .config_json = config});
        store.add_evaluation(run, 1, 10, {{"P@1", p1}, {"P@5", p1 / 2}, {"PSP@5", p1 / 4}, {"nDCG@5", ndcg5}, {"emb/P@1", p1},
                                          {"emb/P@5", p1 / 2}, {"emb/PSP@5", p1 / 4}, {"emb/nDCG@5", ndcg5}, {"clf/P@1", p1 / 3}});
        store.set_status(run, status);
        return run;
      };
      // A sweep names each seed's run in its config too: the names differ, the setting does not.
      seeds.push_back(add("s1", R"({"method":"dexml","lr":0.001,"seed":1,"name":"dexml [seed=1]"})", 0.40, 0.30, xmc::RunStatus::Completed));
      seeds.push_back(add("s2", R"({"seed":2,"lr":0.001,"method":"dexml","name":"dexml [seed=2]"})", 0.42, 0.33, xmc::RunStatus::Completed));  // keys in another order
      seeds.push_back(add("s3", R"({"method":"dexml","lr":0.001,"seed":3,"name":"dexml [seed=3]"})", 0.44, 0.36, xmc::RunStatus::Completed));
      add("s4 failed", R"({"method":"dexml","lr":0.001,"seed":4})", 0.90, 0.90, xmc::RunStatus::Failed);
      add("other lr", R"({"method":"dexml","lr":0.01,"seed":1})", 0.50, 0.20, xmc::RunStatus::Completed);
    }
    RunsBrowser browser(db);
    RunTableModel* model = browser.model();
    QAbstractItemModelTester tester(model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    browser.set_group_key(QLatin1String(RunTableModel::kSeedGroup));
    const QString group = model->group_of(*model->run_info(seeds[0]));
    QCOMPARE(group, QStringLiteral("dexml · lr=0.001"));  // named by what sets it apart; the seed left out
    // The metric columns say whose numbers they are: the mode whose copies are the plain metrics (emb, not clf).
    QCOMPARE(model->data(model->index_of_run(seeds[0], RunTableModel::kMode)).toString(), QStringLiteral("emb"));
    QCOMPARE(model->headerData(RunTableModel::kMode, Qt::Horizontal).toString(), QStringLiteral("Mode"));
    for (const auto run : seeds) QCOMPARE(model->group_of(*model->run_info(run)), group);
    QCOMPARE(browser.summary_view()->isHidden(), false);
    const auto* summary = browser.group_summary();
    QCOMPARE(summary->rowCount(), 2);
    const int row = summary->data(summary->index(0, 0)).toString() == group ? 0 : 1;
    QCOMPARE(summary->data(summary->index(row, 1)).toString(), QStringLiteral("3 of 4"));
    QCOMPARE(summary->headerData(2, Qt::Horizontal).toString(), QStringLiteral("P@1 (%, mean ± sd)"));
    QCOMPARE(summary->data(summary->index(row, 2)).toString(), QStringLiteral("42.00 ± 2.00"));
    QCOMPARE(summary->data(summary->index(1 - row, 2)).toString(), QStringLiteral("50.00 (1 run)"));

    // Any metric as a column: the table and the summary gain it (nDCG@5 30, 33, 36: mean 33, sd 3).
    QMenu* menu = browser.column_menu(-1);
    QMenu* metrics = nullptr;
    for (QAction* a : menu->actions())
      if (a->menu() && a->text() == "Add a metric column") metrics = a->menu();
    QVERIFY(metrics);
    QAction* ndcg = nullptr;
    for (QAction* a : metrics->actions()) {
      QVERIFY2(!a->text().contains('/'), "per-mode copies are not offered");
      if (a->text() == "nDCG@5") ndcg = a;
      if (a->text() == "P@1") QVERIFY(!a->isEnabled());  // already a column
    }
    QVERIFY(ndcg && ndcg->isEnabled());
    ndcg->trigger();
    QCOMPARE(model->columnCount(), RunTableModel::kColumnCount + 1);
    QCOMPARE(model->headerData(RunTableModel::kColumnCount, Qt::Horizontal).toString(), QStringLiteral("nDCG@5 (%)"));
    QCOMPARE(model->data(model->index_of_run(seeds[1], RunTableModel::kColumnCount)).toString(), QStringLiteral("33.00"));
    QCOMPARE(summary->columnCount(), 6);
    QCOMPARE(summary->data(summary->index(row, 5)).toString(), QStringLiteral("33.00 ± 3.00"));

    // A config key and the duration as columns; config values sort as numbers.
    QVERIFY(model->add_column({RunTableModel::ExtraColumn::Kind::config, "lr"}));
    QVERIFY(!model->add_column({RunTableModel::ExtraColumn::Kind::config, "lr"}));  // once
    QVERIFY(model->add_column({RunTableModel::ExtraColumn::Kind::duration, {}}));
    const int lr = RunTableModel::kColumnCount + 1, duration = RunTableModel::kColumnCount + 2;
    QCOMPARE(model->data(model->index_of_run(seeds[0], lr)).toString(), QStringLiteral("0.001"));
    QCOMPARE(model->data(model->index_of_run(seeds[0], lr), RunTableModel::kSortRole).toDouble(), 0.001);
    QVERIFY(model->data(model->index_of_run(seeds[0], duration), RunTableModel::kSortRole).toDouble() >= 0);
    QVERIFY(model->data(model->index_of_run(seeds[0], duration)).toString().endsWith(" s"));
    // Hiding a fixed column, removing an added one.
    QMenu* again = browser.column_menu(lr);
    QAction* remove = nullptr;
    for (QAction* a : again->actions()) {
      if (a->text() == "Device") a->setChecked(false);
      if (a->text().startsWith("Remove the column")) remove = a;
    }
    QVERIFY(browser.view()->isColumnHidden(RunTableModel::kDevice));
    QVERIFY(remove);
    remove->trigger();
    QCOMPARE(model->columnCount(), RunTableModel::kColumnCount + 2);
    QCOMPARE(model->headerData(lr, Qt::Horizontal).toString(), QStringLiteral("Duration"));

    browser.resize(1250, 420);
    browser.show();
    QVERIFY(QTest::qWaitForWindowExposed(&browser));
    QVERIFY(browser.grab().save(kShots + QStringLiteral("/runs-seed-groups.png")));
    browser.set_group_key(QString());
    QVERIFY(browser.summary_view()->isHidden());
  }

  void a_value_chosen_while_training_is_shown_as_used() {
    // Two seeds of a UniDEC config with concat_weight 0.5 whose held-out queries chose w = 1 and w = 0.3.
    const auto db = path("chosen.sqlite");
    std::vector<std::int64_t> runs;
    {
      xmc::RunStore store(db);
      for (const auto& [seed, w, p1] : {std::tuple{1, 1.0, 0.60}, std::tuple{2, 0.3, 0.50}}) {
        const auto run = store.create_run(
            {.name = "unidec seed " + std::to_string(seed),
             .config_json = R"({"method":"unidec","seed":)" + std::to_string(seed) + R"(,"unidec":{"concat_weight":0.5,"concat_holdout":0.1}})"});
        store.add_scalars(run, {{40, 2.0, "loss", 1.0, 1.7e9}, {40, 2.0, "chosen/unidec.concat_weight", w, 1.7e9}});
        store.add_evaluation(run, 2, 40, {{"P@1", p1}, {"P@5", p1 / 2}});
        store.set_status(run, xmc::RunStatus::Completed);
        runs.push_back(run);
      }
    }
    // The Runs table's config column: the value used, with the configured one beside it; sorted by the used one.
    RunsBrowser browser(db);
    RunTableModel* model = browser.model();
    QVERIFY(model->add_column({RunTableModel::ExtraColumn::Kind::config, "unidec.concat_weight"}));
    const int column = RunTableModel::kColumnCount;
    QCOMPARE(model->data(model->index_of_run(runs[0], column)).toString(), QStringLiteral("1 (chosen while training; configured 0.5)"));
    QCOMPARE(model->data(model->index_of_run(runs[1], column)).toString(), QStringLiteral("0.3 (chosen while training; configured 0.5)"));
    QCOMPARE(model->data(model->index_of_run(runs[1], column), RunTableModel::kSortRole).toDouble(), 0.3);
    // What the user asked for is what makes seeds one group, whatever each seed chose.
    browser.set_group_key(QLatin1String(RunTableModel::kSeedGroup));
    QCOMPARE(model->group_of(*model->run_info(runs[0])), model->group_of(*model->run_info(runs[1])));

    // Compare: the key differs by what was used, and the scatter plots the used values.
    CompareView view;
    view.set_runs(xmc::Session(db), runs);
    QVERIFY(view.config_difference_keys().contains(QStringLiteral("unidec.concat_weight")));
    view.set_scatter(QStringLiteral("unidec.concat_weight"), QStringLiteral("P@1"));
    QCOMPARE(view.scatter_points().size(), std::size_t{2});
    QCOMPARE(view.scatter_points()[0].first, 1.0);
    QCOMPARE(view.scatter_points()[1].first, 0.3);

    // The report's configuration table.
    const QString html_path = tmp_.filePath(QStringLiteral("chosen.html"));
    QString error;
    QVERIFY2(xmc::gui::export_run_report_html(db, runs[0], html_path, &error), qPrintable(error));
    QFile f(html_path);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QString html = QString::fromUtf8(f.readAll());
    QVERIFY2(html.contains(QStringLiteral("<code>unidec.concat_weight</code></td><td>1 (chosen while training; configured 0.5)</td>")), qPrintable(html));
  }

  void compare_draws_seeds_as_mean_and_sd_bands() {
    // Three seeds of lr 0.001 (P@1 at epoch 1: 30, 30, 33 %: mean 31, sd √3; at epoch 2: 40, 42, 44: mean 42,
    // sd 2) and one run of lr 0.01.
    const auto db = path("bands.sqlite");
    std::vector<std::int64_t> ids;
    {
      xmc::RunStore store(db);
      auto add = [&](const std::string& config, double p1_first, double p1_last) {
        const auto run = store.create_run({.name = "dexml bands", .config_json = config});
        // A constant loss (its smoothed curve is the same constant): 10 × the last P@1, so 4.0, 4.2, 4.4 for the seeds.
        std::vector<xmc::ScalarPoint> loss;
        for (int s = 1; s <= 20; ++s) loss.push_back({s, s / 10.0, "loss", 10 * p1_last, 1.7e9 + s});
        store.add_scalars(run, loss);
        store.add_evaluation(run, 1, 10, {{"P@1", p1_first}, {"P@5", p1_first / 2}});
        store.add_evaluation(run, 2, 20, {{"P@1", p1_last}, {"P@5", p1_last / 2}});
        store.add_decile_table(run, 2, "P@5", std::vector<double>(10, p1_last / 20));  // P@5 spread evenly over the bins
        store.set_status(run, xmc::RunStatus::Completed);
        ids.push_back(run);
      };
      add(R"({"method":"dexml","lr":0.001,"seed":1,"name":"a"})", 0.30, 0.40);
      add(R"({"method":"dexml","lr":0.01,"seed":1,"name":"b"})", 0.20, 0.25);
      add(R"({"seed":2,"lr":0.001,"method":"dexml","name":"c"})", 0.30, 0.42);
      add(R"({"method":"dexml","lr":0.001,"seed":3,"name":"d"})", 0.33, 0.44);
    }
    CompareView view;
    view.set_runs(xmc::Session(db), ids);
    QCOMPARE(view.seed_group_labels(), (QStringList{QStringLiteral("lr=0.001 — 3 seeds"), QStringLiteral("lr=0.01")}));
    xmc::gui::MetricPlot* plot = view.metric_plot();
    QCOMPARE(plot->comparison_count(), 3);  // one curve per run until asked
    QVERIFY(!view.seed_bands());
    view.set_seed_bands(true);
    QCOMPARE(plot->comparison_count(), 1);  // the lr=0.01 run beside the group
    QCPGraph* mean = plot->metric_graph(QStringLiteral("P@1"));
    QCOMPARE(mean->dataCount(), 2);
    QCOMPARE(mean->data()->at(0)->value, 31.0);
    QCOMPARE(mean->data()->at(1)->value, 42.0);
    const auto [lower, upper] = plot->band_graphs(QStringLiteral("lr=0.001 — 3 seeds"), QStringLiteral("P@1"));
    QVERIFY(lower && upper);
    QVERIFY(std::abs(lower->data()->at(0)->value - (31.0 - std::sqrt(3.0))) < 1e-9);
    QVERIFY(std::abs(upper->data()->at(0)->value - (31.0 + std::sqrt(3.0))) < 1e-9);
    QVERIFY(std::abs(lower->data()->at(1)->value - 40.0) < 1e-9);
    QVERIFY(std::abs(upper->data()->at(1)->value - 44.0) < 1e-9);
    QVERIFY(upper->channelFillGraph() == lower);
    QCOMPARE(plot->band_graphs(QStringLiteral("lr=0.01"), QStringLiteral("P@1")).first, nullptr);  // one run: no band
    // The decile bars follow: the group's bars are its runs' mean (0.40, 0.42 and 0.44 spread over ten bins: 2.1 %).
    QCOMPARE(view.decile_plot()->all_bars().size(), std::size_t{2});
    QVERIFY(std::abs(view.decile_plot()->bars()->data()->at(0)->value - 2.1) < 1e-9);
    QCOMPARE(view.decile_plot()->bars()->name(), QStringLiteral("lr=0.001 — 3 seeds"));
    // So does the loss: the group's mean (4.2) inside a band of ± its sd (0.2), the other run alone.
    const auto loss_graph = [&](const QString& name) -> QCPGraph* {
      for (int g = 0; g < view.loss_plot()->graphCount(); ++g)
        if (view.loss_plot()->graph(g)->name() == name) return view.loss_plot()->graph(g);
      return nullptr;
    };
    QCPGraph* group_loss = loss_graph(QStringLiteral("lr=0.001 — 3 seeds"));
    QVERIFY(group_loss != nullptr);
    QCOMPARE(group_loss->dataCount(), 20);
    QVERIFY(std::abs(group_loss->data()->at(5)->value - 4.2) < 1e-9);
    QCPGraph* loss_upper = loss_graph(QStringLiteral("lr=0.001 — 3 seeds + sd"));
    QVERIFY(loss_upper != nullptr && loss_upper->channelFillGraph() == loss_graph(QStringLiteral("lr=0.001 — 3 seeds − sd")));
    QVERIFY(std::abs(loss_upper->data()->at(5)->value - 4.4) < 1e-9);
    QVERIFY(std::abs(loss_upper->channelFillGraph()->data()->at(5)->value - 4.0) < 1e-9);
    QVERIFY(loss_graph(QStringLiteral("lr=0.01")) != nullptr);
    QCOMPARE(view.loss_plot()->graphCount(), 4);  // the group's mean and band edges, the other run
    // The band follows its metric's visibility.
    plot->set_metric_visible(QStringLiteral("P@5"), false);
    QVERIFY(!plot->band_graphs(QStringLiteral("lr=0.001 — 3 seeds"), QStringLiteral("P@5")).first->visible());
    view.resize(1300, 820);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    QCoreApplication::processEvents();
    QVERIFY(view.grab().save(kShots + QStringLiteral("/compare-seed-bands.png")));
    view.set_seed_bands(false);
    QCOMPARE(view.loss_plot()->graphCount(), 4);  // a curve per run again
    QCOMPARE(loss_graph(QStringLiteral("lr=0.001 — 3 seeds")), nullptr);
    QCOMPARE(plot->comparison_count(), 3);
    QCOMPARE(view.decile_plot()->all_bars().size(), std::size_t{4});
    QCOMPARE(plot->band_graphs(QStringLiteral("lr=0.001 — 3 seeds"), QStringLiteral("P@1")).first, nullptr);
  }

  void system_use_shows_in_columns_and_the_report() {
    // A run whose process peaked at 3.5 GB and kept 1 core busy for 10 s, then 4 for 20 s: 90/30 = 3 on average.
    const auto db = path("system.sqlite");
    std::int64_t sampled = 0, unsampled = 0;
    {
      xmc::RunStore store(db);
      sampled = store.create_run({.name = "sampled", .config_json = R"({"method":"dexml"})"});
      store.add_scalars(sampled, {{1, 0.1, "system/cpu_cores", 2.0, 100}, {1, 0.1, "system/peak_memory_gb", 1.0, 100},
                                  {5, 0.5, "system/cpu_cores", 1.0, 110}, {5, 0.5, "system/peak_memory_gb", 3.5, 110},
                                  {9, 1.0, "system/cpu_cores", 4.0, 130}, {9, 1.0, "system/memory_gb", 2.0, 130}});
      store.set_status(sampled, xmc::RunStatus::Completed);
      unsampled = store.create_run({.name = "older", .config_json = R"({"method":"dexml"})"});
      store.set_status(unsampled, xmc::RunStatus::Completed);
    }
    RunsBrowser browser(db);
    RunTableModel* model = browser.model();
    QMenu* menu = browser.column_menu(-1);
    QStringList offered;
    for (QAction* a : menu->actions()) offered << a->text();
    QVERIFY2(offered.contains(QStringLiteral("Add the peak memory column")) && offered.contains(QStringLiteral("Add the CPU use column")),
             qPrintable(offered.join(", ")));
    for (QAction* a : menu->actions())
      if (a->text() == QStringLiteral("Add the peak memory column") || a->text() == QStringLiteral("Add the CPU use column")) a->trigger();
    const int memory = RunTableModel::kColumnCount, cpu = RunTableModel::kColumnCount + 1;
    QCOMPARE(model->headerData(memory, Qt::Horizontal).toString(), QStringLiteral("Peak memory (GB)"));
    QCOMPARE(model->headerData(cpu, Qt::Horizontal).toString(), QStringLiteral("CPU cores (mean)"));
    QCOMPARE(model->data(model->index_of_run(sampled, memory)).toString(), QStringLiteral("3.50"));
    QCOMPARE(model->data(model->index_of_run(sampled, cpu)).toString(), QStringLiteral("3.0"));
    QCOMPARE(model->data(model->index_of_run(sampled, cpu), RunTableModel::kSortRole).toDouble(), 3.0);
    QCOMPARE(model->data(model->index_of_run(unsampled, memory)).toString(), QString());
    QCOMPARE(model->data(model->index_of_run(unsampled, memory), RunTableModel::kSortRole).toDouble(), -1.0);
    QVERIFY(!model->add_column({RunTableModel::ExtraColumn::Kind::system, "gpu_use"}));  // no such column

    const QString html_path = tmp_.filePath(QStringLiteral("system.html"));
    QString error;
    QVERIFY2(xmc::gui::export_run_report_html(db, sampled, html_path, &error), qPrintable(error));
    QFile f(html_path);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QString html = QString::fromUtf8(f.readAll());
    QVERIFY2(html.contains(QStringLiteral("<td class=\"key\">system use</td><td>peak memory 3.50 GB, 3.0 CPU cores busy on average (4.0 at most) (the training process)</td>")),
             qPrintable(html.mid(html.indexOf(QStringLiteral("system use")) - 40, 300)));
  }

  void delete_asks_with_the_run_name_and_removes_it() {
    RunsBrowser browser(db_);
    const std::int64_t doomed = xmc::RunStore(db_).create_run({.name = "doomed run"});
    const std::filesystem::path files = xmc::Session(db_).run_directory(doomed);
    std::filesystem::create_directories(files);
    std::ofstream(files / "checkpoint.pt") << "weights";
    browser.refresh();
    QStringList asked;
    bool answer = false;
    browser.set_delete_confirmation([&](QWidget*, const QStringList& runs) {
      asked = runs;
      return answer;
    });
    QVERIFY(browser.select_run(doomed));
    QCOMPARE(browser.delete_selected(), 0);  // declined
    QCOMPARE(asked.size(), 1);
    QVERIFY(asked.front().contains(QStringLiteral("doomed run")));
    QVERIFY(xmc::Session(db_).find_run(doomed).has_value());

    answer = true;
    QCOMPARE(browser.delete_selected(), 1);
    QVERIFY(!xmc::Session(db_).find_run(doomed).has_value());
    QVERIFY(!std::filesystem::exists(files));  // as the confirmation says: its files go too
    QVERIFY(!browser.model()->index_of_run(doomed).isValid());
    QVERIFY(browser.selected_runs().empty());
  }

  void compare_view_shows_both_runs_with_bold_best_values() {
    const xmc::Session store(db_);
    CompareView view;
    view.set_runs(store, {alpha_, beta_, 9999});
    QCOMPARE(view.runs(), (std::vector<std::int64_t>{alpha_, beta_}));
    QVERIFY(view.note().contains(QStringLiteral("9999")));
    const QAbstractItemModel* m = view.metric_model();
    QCOMPARE(m->columnCount(), 2);
    QVERIFY(m->headerData(0, Qt::Horizontal).toString().contains(QStringLiteral("alpha-bow")));
    QVERIFY(m->headerData(1, Qt::Horizontal).toString().contains(QStringLiteral("beta-ngame")));
    QCOMPARE(m->rowCount(), 15);
    // Papers' order: P@k first, then nDCG, PSP, PSnDCG, R.
    QCOMPARE(m->headerData(0, Qt::Vertical).toString(), QStringLiteral("P@1 (%)"));
    QCOMPARE(m->headerData(3, Qt::Vertical).toString(), QStringLiteral("nDCG@1 (%)"));
    QCOMPARE(m->headerData(14, Qt::Vertical).toString(), QStringLiteral("R@5 (%)"));

    const auto bold = [&](int row, int column) { return m->index(row, column).data(Qt::FontRole).value<QFont>().bold(); };
    const int p1 = metric_row(m, QStringLiteral("P@1"));
    const int p5 = metric_row(m, QStringLiteral("P@5"));
    const int psp5 = metric_row(m, QStringLiteral("PSP@5"));
    QVERIFY(p1 >= 0 && p5 >= 0 && psp5 >= 0);
    QCOMPARE(m->index(p1, 0).data().toString(), QStringLiteral("55.00"));
    QCOMPARE(m->index(p1, 1).data().toString(), QStringLiteral("50.00"));
    QVERIFY(bold(p1, 0) && !bold(p1, 1));
    QCOMPARE(m->index(p5, 1).data().toString(), QStringLiteral("47.00"));
    QVERIFY(!bold(p5, 0) && bold(p5, 1));
    QVERIFY(!bold(psp5, 0) && bold(psp5, 1));

    QVERIFY(view.metric_plot()->comparison_count() == 1);
    QVERIFY(view.decile_plot()->bars() != nullptr && view.decile_plot()->overlay_bars() != nullptr);
    QCOMPARE(view.loss_plot()->graphCount(), 2);
    // One colour per run in every chart: the metric curves take the run's table colour.
    const QColor alpha_colour = view.metric_model()->headerData(0, Qt::Horizontal, Qt::DecorationRole).value<QIcon>().pixmap(12).toImage().pixelColor(6, 6);
    QCOMPARE(view.metric_plot()->metric_graph(QStringLiteral("P@1"))->pen().color(), alpha_colour);
    QCOMPARE(view.loss_plot()->graph(0)->pen().color(), alpha_colour);
    const QColor beta_colour = view.metric_model()->headerData(1, Qt::Horizontal, Qt::DecorationRole).value<QIcon>().pixmap(12).toImage().pixelColor(6, 6);
    QCOMPARE(view.metric_plot()->comparison_graph(QStringLiteral("beta-ngame (#%1)").arg(beta_), QStringLiteral("P@5"))->pen().color(), beta_colour);
    QVERIFY(alpha_colour != beta_colour);
    // The table for a paper or a spreadsheet: the best value of each row in bold, names escaped.
    const QString latex = view.metric_table_text(QStringLiteral("latex"));
    QVERIFY2(latex.startsWith(QStringLiteral("\\begin{tabular}{lrr}")), qPrintable(latex));
    QVERIFY2(latex.contains(QStringLiteral("metric (\\%) & alpha-bow (\\#%1) & beta-ngame (\\#%2) \\\\").arg(alpha_).arg(beta_)), qPrintable(latex));
    QVERIFY2(latex.contains(QStringLiteral("P@1 & \\textbf{55.00} & 50.00 \\\\")), qPrintable(latex));
    QVERIFY2(latex.contains(QStringLiteral("P@5 & 45.00 & \\textbf{47.00} \\\\")), qPrintable(latex));
    const QString csv = view.metric_table_text(QStringLiteral("csv"));
    QVERIFY2(csv.startsWith(QStringLiteral("metric,alpha-bow (#%1),beta-ngame (#%2)\nP@1,55.00,50.00\n").arg(alpha_).arg(beta_)), qPrintable(csv));
    // A config key against a metric, one point per run: lr (0.001 and 0.0002) against the final P@1.
    view.set_scatter(QStringLiteral("lr"), QStringLiteral("P@1"));
    QCOMPARE(view.scatter_points().size(), std::size_t{2});
    QCOMPARE(view.scatter_points()[0].first, 0.001);
    QCOMPARE(view.scatter_points()[0].second, 55.0);
    QCOMPARE(view.scatter_points()[1].first, 0.0002);
    QCOMPARE(view.scatter_points()[1].second, 50.0);
    // Parallel coordinates over the numeric keys that differ (encoder.dim and epochs only alpha has; lr on a
    // log axis: 0.0002 at 0, 0.001 at 1) and P@1 (50 at 0, 55 at 1).
    QCOMPARE(view.parallel_lines().size(), std::size_t{2});
    const auto& alpha_line = view.parallel_lines()[0];
    const auto& beta_line = view.parallel_lines()[1];
    QCOMPARE(alpha_line.size(), std::size_t{4});  // encoder.dim, epochs, lr, P@1
    QCOMPARE(alpha_line[2], 1.0);
    QCOMPARE(beta_line[2], 0.0);
    QVERIFY(std::isnan(beta_line[0]));
    QCOMPARE(alpha_line[3], 1.0);
    QCOMPARE(beta_line[3], 0.0);
    if (auto* views = view.findChild<QTabWidget*>(); views && !qEnvironmentVariableIsEmpty("XMC_SCREENSHOT_DIR")) {
      views->setCurrentIndex(1);
      view.resize(1300, 820);
      QCoreApplication::processEvents();
      QVERIFY(view.grab().save(kShots + QStringLiteral("/compare-parallel.png")));
      views->setCurrentIndex(0);
    }
    // The whole comparison as one figure.
    view.resize(1200, 760);
    for (const QString& ext : {QStringLiteral("png"), QStringLiteral("svg"), QStringLiteral("pdf")}) {
      const QString figure = tmp_.filePath(QStringLiteral("comparison.") + ext);
      QString figure_error;
      QVERIFY2(xmc::gui::export_figure(&view, figure, &figure_error), qPrintable(figure_error));
      QFile written(figure);
      QVERIFY(written.open(QIODevice::ReadOnly));
      const QByteArray bytes = written.readAll();
      if (ext == QLatin1String("png")) QCOMPARE(QImage::fromData(bytes).size(), QSize(2400, 1520));
      if (ext == QLatin1String("svg")) QVERIFY(bytes.contains("<svg") && bytes.contains("alpha-bow"));
      if (ext == QLatin1String("pdf")) QVERIFY(bytes.startsWith("%PDF"));
    }
    QString bad;
    QVERIFY(!xmc::gui::export_figure(&view, tmp_.filePath(QStringLiteral("comparison.jpg")), &bad));
    QVERIFY2(bad.contains(QStringLiteral("unknown format '.jpg'")), qPrintable(bad));
    view.set_scatter(QStringLiteral("method"), QStringLiteral("P@5"));  // categories: dexml 0, ngame 1
    QCOMPARE(view.scatter_points()[1].first, 1.0);
    QCOMPARE(view.scatter_points()[1].second, 47.0);
    // Only the config keys that differ, flattened.
    QCOMPARE(view.config_difference_keys(), (QStringList{QStringLiteral("encoder.dim"), QStringLiteral("encoder.kind"), QStringLiteral("epochs"),
                                                         QStringLiteral("lr"), QStringLiteral("method")}));

    view.resize(1300, 820);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    QCoreApplication::processEvents();
    QVERIFY(view.grab().save(kShots + QStringLiteral("/compare-view.png")));

    // Three runs, one never evaluated: all in the table; the decile bars show the two that have tables.
    view.set_runs(store, {alpha_, beta_, gamma_});
    QCOMPARE(view.metric_model()->columnCount(), 3);
    QCOMPARE(view.decile_plot()->all_bars().size(), std::size_t{2});
    QVERIFY2(view.note().contains(QStringLiteral("2 of the 3 runs")), qPrintable(view.note()));

    // Losses of different kinds get panels of their own (a triplet loss near 0.1 beside a softmax near 5).
    std::int64_t triplet = 0, softmax = 0;
    {
      xmc::RunStore raw(db_);
      triplet = raw.create_run({.name = "triplet run", .config_json = R"({"method":"ngame","loss":"triplet"})"});
      softmax = raw.create_run({.name = "softmax run", .config_json = R"({"method":"dexml","loss":"decoupled_softmax"})"});
      for (int s = 1; s <= 20; ++s) {
        raw.add_scalars(triplet, {{s, s / 10.0, "loss", 0.1 + 0.01 * std::sin(s), 1.7e9 + s}});
        raw.add_scalars(softmax, {{s, s / 10.0, "loss", 5.0 - s / 10.0, 1.7e9 + s}});
      }
    }
    view.set_runs(store, {triplet, softmax, alpha_});
    QCOMPARE(view.loss_kinds(), (QStringList{QStringLiteral("triplet"), QStringLiteral("decoupled_softmax"), QStringLiteral("loss")}));
    QCOMPARE(view.loss_plot()->axisRectCount(), 3);
    QVERIFY(view.loss_plot()->graph(0)->valueAxis() != view.loss_plot()->graph(1)->valueAxis());
    QVERIFY(view.loss_plot()->graph(0)->valueAxis()->range().upper < 1);
    QCoreApplication::processEvents();  // queued replots
    QVERIFY(view.grab().save(kShots + QStringLiteral("/compare-loss-kinds.png")));
    view.set_runs(store, {alpha_, beta_});  // back to one panel
    QCOMPARE(view.loss_plot()->axisRectCount(), 1);
    {
      xmc::RunStore raw(db_);
      raw.delete_run(triplet);
      raw.delete_run(softmax);
    }
  }

  void compare_view_puts_up_to_four_runs_deciles_side_by_side() {
    // A store of its own: five runs whose decile tables are easy to tell apart (run k: every bin = k %).
    const std::filesystem::path many_db = path("many-runs.sqlite");
    std::vector<std::int64_t> ids;
    {
      xmc::RunStore store(many_db);
      for (int k = 1; k <= 5; ++k) {
        const auto id = store.create_run({.name = "run-" + std::to_string(k), .dataset_path = dataset_.string()});
        store.add_evaluation(id, 1, 10, {{"P@1", 0.1 * k}, {"P@5", 0.1 * k}});
        store.add_decile_table(id, 1, "P@5", std::vector<double>(10, 0.01 * k));
        ids.push_back(id);
      }
    }
    CompareView view;
    view.set_runs(xmc::Session(many_db), ids);
    const std::vector<QCPBars*> bars = view.decile_plot()->all_bars();
    QCOMPARE(bars.size(), std::size_t{4});
    for (std::size_t r = 0; r < bars.size(); ++r) {
      QVERIFY2(bars[r]->name().startsWith(QStringLiteral("run-%1").arg(r + 1)), qPrintable(bars[r]->name()));
      QCOMPARE(bars[r]->dataCount(), 10);
      for (int bin = 0; bin < 10; ++bin) QVERIFY(std::abs(bars[r]->data()->at(bin)->value - (static_cast<double>(r) + 1.0)) < 1e-9);  // percent
      QCOMPARE(bars[r]->barsGroup(), bars[0]->barsGroup());  // side by side, not stacked or hidden
      // Each run's bars have the colour of its swatch in the metric table's header.
      const QIcon swatch = view.metric_model()->headerData(static_cast<int>(r), Qt::Horizontal, Qt::DecorationRole).value<QIcon>();
      QCOMPARE(bars[r]->brush().color(), swatch.pixmap(12, 12).toImage().pixelColor(5, 5));
    }
    QCOMPARE(view.decile_plot()->legend->itemCount(), 4);
    QVERIFY2(view.note().contains(QStringLiteral("first 4 of the 5 runs")), qPrintable(view.note()));
    view.resize(1300, 820);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    QVERIFY(view.grab().save(kShots + QStringLiteral("/compare-four-runs.png")));
  }

  void a_comparison_figure_at_one_column_keeps_every_header_whole() {
    // An lr x seed sweep exported at 3.3 in: the table's column headers name each run by its lr and seed, and the row
    // names carry k. Squeezed, they read "lr=0.01, s…=2 (#2)" and "nDCG… (%)"; now the font shrinks and a header
    // breaks after its commas, so every piece is written whole (the SVG keeps text as text).
    const std::filesystem::path fig_db = path("narrow-figure.sqlite");
    std::vector<std::int64_t> ids;
    {
      xmc::RunStore store(fig_db);
      for (const char* lr : {"0.01", "0.02"})
        for (const char* seed : {"1", "2"}) {
          const auto id = store.create_run({.name = std::string("dexml bow wordnet [lr=") + lr + ", seed=" + seed + ", epochs=2]",
                                            .config_json = std::string(R"({"method":"dexml","epochs":2,"lr":)") + lr + R"(,"seed":)" + seed + "}",
                                            .dataset_path = dataset_.string()});
          store.add_evaluation(id, 2, 20,
                               {{"P@1", 0.4}, {"P@5", 0.2}, {"nDCG@10", 0.3}, {"PSnDCG@10", 0.25}, {"PSP@5", 0.1}, {"R@10", 0.5}});
          store.add_decile_table(id, 2, "P@5", std::vector<double>(10, 0.02));
          for (int step = 1; step <= 20; ++step) store.add_scalars(id, {{step, step / 10.0, "loss", 2.0 / step, 1.0}});
          store.set_status(id, xmc::RunStatus::Completed);
          ids.push_back(id);
        }
    }
    CompareView view;
    view.set_runs(xmc::Session(fig_db), ids);
    xmc::gui::FigureOptions options;
    options.width_inches = 3.3;
    options.columns = 1;
    const QString svg = tmp_.filePath("narrow.svg");
    QString error;
    QVERIFY2(view.export_comparison_figure(svg, {"metric table"}, options, &error), qPrintable(error));
    QFile svg_file(svg);
    QVERIFY(svg_file.open(QIODevice::ReadOnly));
    const QString text = QString::fromUtf8(svg_file.readAll());
    QFile::remove(kShots + QStringLiteral("/compare-figure-3.3in.svg"));
    QFile::copy(svg, kShots + QStringLiteral("/compare-figure-3.3in.svg"));
    const QString png = tmp_.filePath("narrow.png");
    QVERIFY2(view.export_comparison_figure(png, {"metric table", "metric curves"}, options, &error), qPrintable(error));
    QCOMPARE(QImage(png).width(), 990);  // 3.3 in at 300 dpi
    QFile::remove(kShots + QStringLiteral("/compare-figure-3.3in.png"));
    QFile::copy(png, kShots + QStringLiteral("/compare-figure-3.3in.png"));
    options.width_inches = 7;
    options.columns = 2;
    QVERIFY2(view.export_comparison_figure(png, {"metric table", "metric curves", "decile bars", "training loss"}, options, &error), qPrintable(error));
    QFile::remove(kShots + QStringLiteral("/compare-figure-7in.png"));
    QFile::copy(png, kShots + QStringLiteral("/compare-figure-7in.png"));
    // At 7 in every panel's text is whole too: the deciles' sums name a run by its id where its name does not fit.
    const QString wide_svg = tmp_.filePath("wide.svg");
    QVERIFY2(view.export_comparison_figure(wide_svg, {"metric table", "metric curves", "decile bars", "training loss"}, options, &error),
             qPrintable(error));
    QFile wide(wide_svg);
    QVERIFY(wide.open(QIODevice::ReadOnly));
    const QString wide_text = QString::fromUtf8(wide.readAll());
    QVERIFY2(!wide_text.contains(QStringLiteral("…")), "an elided text in the 7 in figure");
    QVERIFY(wide_text.contains(QStringLiteral("seed=2, epochs=2 (#4)")));
    // The decile sums go by the runs' ids, several to a line, so the bars keep their height (one line a run left
    // them a 60 px strip under four lines of text).
    QVERIFY2(wide_text.contains(QStringLiteral("P@5 — #1: 20.00 %")), "the decile sums are not packed by id");
    QVERIFY2(!text.contains(QStringLiteral("…")), "an elided header or row name");
    for (const QString& piece : {QStringLiteral("lr=0.01"), QStringLiteral("lr=0.02"), QStringLiteral("seed=1"), QStringLiteral("seed=2"),
                                 QStringLiteral("nDCG@10 (%)"), QStringLiteral("PSnDCG@10 (%)")})
      QVERIFY2(text.contains(piece), qPrintable(piece));
  }

  void compare_exports_a_figure_laid_out_at_a_papers_width() {
    // Four runs with losses and deciles; the figure is laid out afresh at 7 in (both columns of a paper).
    const std::filesystem::path fig_db = path("figure-runs.sqlite");
    std::vector<std::int64_t> ids;
    {
      xmc::RunStore store(fig_db);
      for (int k = 1; k <= 4; ++k) {
        const auto id = store.create_run({.name = "sweep [lr=0.00" + std::to_string(k) + "]", .dataset_path = dataset_.string()});
        for (int e = 1; e <= 3; ++e)
          store.add_evaluation(id, e, 10 * e, {{"P@1", 0.1 * k + 0.02 * e}, {"P@5", 0.05 * k + 0.01 * e}, {"PSP@5", 0.03 * k}});
        store.add_decile_table(id, 3, "P@5", std::vector<double>(10, 0.02 * k));
        for (int step = 1; step <= 20; ++step) store.add_scalars(id, {{step, step / 20.0, "loss", 2.0 / step + 0.1 * k, 1.0}});
        store.set_status(id, xmc::RunStatus::Completed);
        ids.push_back(id);
      }
    }
    CompareView view;
    view.set_runs(xmc::Session(fig_db), ids);
    xmc::gui::FigureOptions options;  // 7 in, two plots a row, 8 pt ticks, 300 dpi
    const QStringList panels{"metric table", "metric curves", "decile bars", "training loss"};
    const QString png = tmp_.filePath("comparison.png"), pdf = tmp_.filePath("comparison.pdf"), svg = tmp_.filePath("comparison.svg");
    QString error;
    QVERIFY2(view.export_comparison_figure(png, panels, options, &error), qPrintable(error));
    QVERIFY2(view.export_comparison_figure(pdf, panels, options, &error), qPrintable(error));
    QVERIFY2(view.export_comparison_figure(svg, panels, options, &error), qPrintable(error));
    // The PNG is 7 in at 300 dpi whatever the window's size, and says so.
    QFile::remove(kShots + QStringLiteral("/compare-figure.png"));
    QFile::copy(png, kShots + QStringLiteral("/compare-figure.png"));
    QFile::remove(kShots + QStringLiteral("/compare-figure.svg"));
    QFile::copy(svg, kShots + QStringLiteral("/compare-figure.svg"));
    const QImage image(png);
    QCOMPARE(image.width(), 2100);
    QVERIFY(std::abs(image.dotsPerMeterX() - 300 / 0.0254) < 2);
    // Two rows of plots at 0.75 of a half-width panel, under the table (metrics + header): taller than the
    // plots alone, shorter than a page.
    const double height_in = image.height() / 300.0;
    QVERIFY2(height_in > 2 * 0.75 * 3.4 && height_in < 9, qPrintable(QString::number(height_in)));
    // The PDF's page is the figure: 7 in = 504 pt wide.
    QFile pdf_file(pdf);
    QVERIFY(pdf_file.open(QIODevice::ReadOnly));
    QVERIFY(pdf_file.readAll().contains("/MediaBox [0 0 504"));
    // The SVG keeps the table and the plots' text as text.
    QFile svg_file(svg);
    QVERIFY(svg_file.open(QIODevice::ReadOnly));
    const QByteArray text = svg_file.readAll();
    QVERIFY(text.contains("PSP@5"));
    QVERIFY(text.contains("lr=0.004 (#4)"));  // the runs as the view names them
    // Nothing of the screen: the figure's pixels are white outside what was drawn (no grey window background).
    QCOMPARE(image.pixelColor(image.width() - 1, image.height() - 1), QColor(Qt::white));
    QVERIFY(!view.export_comparison_figure(png, {"heat map"}, options, &error));
    QVERIFY2(error.contains("heat map") && error.contains("metric curves"), qPrintable(error));
  }

  void html_report_is_self_contained() {
    const QString html_path = kShots + QStringLiteral("/report.html");
    QString error;
    QVERIFY2(xmc::gui::export_run_report_html(db_, alpha_, html_path, &error), qPrintable(error));
    QFile f(html_path);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QString html = QString::fromUtf8(f.readAll());
    QVERIFY(html.contains(QStringLiteral("alpha-bow")));
    QVERIFY(html.contains(QStringLiteral("Final metrics")));
    QVERIFY(html.contains(QStringLiteral("PSP@k")));
    QVERIFY(html.contains(QStringLiteral("<td class=\"num\" title=\"P@1\">55.00</td>")));
    QVERIFY(html.contains(QStringLiteral("encoder.kind")));  // the configuration, flattened
    QVERIFY(html.contains(QStringLiteral("labels (L)")));    // the dataset statistics
    QVERIFY(html.count(QStringLiteral("data:image/png;base64,")) >= 4);  // loss, metrics, deciles, t-SNE
    QVERIFY(!html.contains(QStringLiteral("src=\"file:")));
    // The run's log closes the report, its text escaped.
    QVERIFY(html.indexOf(QStringLiteral("<h2>Log</h2>")) > html.indexOf(QStringLiteral("labels (L)")));
    QVERIFY(html.contains(QStringLiteral("UniDEC: concat weight 0.8 (held-out &lt;curve&gt;)")));
    QVERIFY(html.contains(QStringLiteral("step 60")));

    // The beta run's dataset folder is gone: the report says so.
    const QString beta_path = tmp_.filePath(QStringLiteral("beta.html"));
    QVERIFY2(xmc::gui::export_run_report_html(db_, beta_, beta_path, &error), qPrintable(error));
    QFile b(beta_path);
    QVERIFY(b.open(QIODevice::ReadOnly));
    QVERIFY(QString::fromUtf8(b.readAll()).contains(QStringLiteral("no longer exists")));

    QVERIFY(!xmc::gui::export_run_report_html(db_, 424242, html_path, &error));
    QVERIFY(error.contains(QStringLiteral("424242")));
  }

  void added_columns_come_back_with_their_store() {
    // Columns a user adds to a store's Runs table are there at the next start (they were lost), removals too; another
    // store keeps its own.
    const auto db = path("columns.sqlite"), other = path("other-columns.sqlite");
    for (const auto& store_path : {db, other}) {
      xmc::RunStore store(store_path);
      store.create_run({.name = "a run", .config_json = R"({"method":"dexml","lr":0.01})"});
    }
    using Kind = RunTableModel::ExtraColumn::Kind;
    {
      RunsBrowser browser(db);
      QVERIFY(browser.model()->add_column({Kind::config, QStringLiteral("lr")}));
      QVERIFY(browser.model()->add_column({Kind::metric, QStringLiteral("nDCG@5")}));
      QVERIFY(browser.model()->add_column({Kind::duration, {}}));
    }
    {
      RunsBrowser again(db);
      const auto& columns = again.model()->extra_columns();
      QCOMPARE(columns.size(), std::size_t{3});
      QVERIFY(columns[0] == (RunTableModel::ExtraColumn{Kind::config, QStringLiteral("lr")}));
      QVERIFY(columns[1] == (RunTableModel::ExtraColumn{Kind::metric, QStringLiteral("nDCG@5")}));
      QCOMPARE(columns[2].kind, Kind::duration);
      QVERIFY(again.model()->remove_column(RunTableModel::kColumnCount));  // lr
    }
    RunsBrowser third(db);
    QCOMPARE(third.model()->extra_columns().size(), std::size_t{2});
    QCOMPARE(third.model()->extra_columns()[0].key, QStringLiteral("nDCG@5"));
    RunsBrowser elsewhere(other);
    QVERIFY(elsewhere.model()->extra_columns().empty());
  }

  void a_report_lists_the_config_keys_that_shape_the_run() {
    // A dexml run stores every key (as a real run does); its report leaves out IRENE's, xrlinear's and UniDEC's keys
    // and says how many, keeping what shapes a dexml run. (4.5 of 8 pages listed them all.)
    xmc::TrainConfig config;
    config.method = "dexml";
    config.dataset = dataset_;
    const auto db = path("report-keys.sqlite");
    std::int64_t run = 0;
    {
      xmc::RunStore store(db);
      run = store.create_run({.name = "dexml-all-keys", .config_json = xmc::to_json(config), .dataset_path = dataset_.string()});
      store.set_status(run, xmc::RunStatus::Completed);
    }
    const QString html_path = tmp_.filePath(QStringLiteral("report-keys.html"));
    QString error;
    QVERIFY2(xmc::gui::export_run_report_html(db, run, html_path, &error), qPrintable(error));
    QFile f(html_path);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QString html = QString::fromUtf8(f.readAll());
    for (const char* kept : {"encoder.dim", "batch_size", "optim.grad_clip", "eval.k"})
      QVERIFY2(html.contains(QString::fromLatin1(kept)), kept);
    for (const char* dropped : {"irene.base_run", "xrlinear.trees", "unidec.concat_weight", "psl.positives"})
      QVERIFY2(!html.contains(QString::fromLatin1(dropped)), dropped);
    QVERIFY(html.contains(QStringLiteral("that do not shape this run are left out")));
    QVERIFY(html.contains(QStringLiteral("irene.*")));
  }

  void pdf_report_has_pages_and_images() {
    const QString pdf_path = kShots + QStringLiteral("/report.pdf");
    QString error;
    QVERIFY2(xmc::gui::export_run_report_pdf(db_, alpha_, pdf_path, &error), qPrintable(error));
    QFile f(pdf_path);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QByteArray bytes = f.readAll();
    QVERIFY(bytes.startsWith("%PDF"));
    QVERIFY2(bytes.size() > 30000, qPrintable(QString::number(bytes.size())));
    QVERIFY(bytes.contains("/Image"));
  }

  void printed_tables_never_split_a_row_across_pages() {
    // Rows whose second cell wraps over several lines, as long config values and error messages do.
    QString html = QStringLiteral("<table border=\"1\" cellpadding=\"3\">");
    for (int r = 0; r < 120; ++r)
      html += QStringLiteral("<tr><td>key %1</td><td>%2</td></tr>").arg(r).arg(QString(QStringLiteral("word ")).repeated(20 + (r * 37) % 90));
    html += QStringLiteral("</table>");
    QTextDocument doc;
    doc.setHtml(html);
    doc.setPageSize(QSizeF(794, 1123));  // A4 at 96 dpi
    QVERIFY(xmc::gui::table_rows_split_across_pages(doc) > 0);  // what Qt's layout does alone
    const int pages_before = doc.pageCount();
    xmc::gui::keep_table_rows_whole(doc);
    QCOMPARE(xmc::gui::table_rows_split_across_pages(doc), 0);
    QVERIFY(doc.pageCount() >= pages_before);
  }

  void csv_has_headers_and_one_line_per_record() {
    const QString scalars = tmp_.filePath(QStringLiteral("scalars.csv"));
    const QString metrics = tmp_.filePath(QStringLiteral("metrics.csv"));
    QString error;
    QVERIFY2(xmc::gui::export_run_csv(db_, alpha_, scalars, metrics, &error), qPrintable(error));
    const QStringList s = lines_of(scalars);
    QCOMPARE(s.size(), 1 + 120);
    QCOMPARE(s.front(), QStringLiteral("step,epoch,key,value,wall_time"));
    QVERIFY(s[1].startsWith(QStringLiteral("1,")));
    QCOMPARE(s[1].split(QLatin1Char(',')).size(), 5);
    const QStringList m = lines_of(metrics);
    QCOMPARE(m.size(), 1 + 30);
    QCOMPARE(m.front(), QStringLiteral("epoch,step,metric,value"));
    QCOMPARE(m[1], QStringLiteral("1,30,P@1,0.5"));

    QCOMPARE(xmc::gui::csv_field(QStringLiteral("plain")), QStringLiteral("plain"));
    QCOMPARE(xmc::gui::csv_field(QStringLiteral("a,b")), QStringLiteral("\"a,b\""));
    QCOMPARE(xmc::gui::csv_field(QStringLiteral("say \"hi\"\n")), QStringLiteral("\"say \"\"hi\"\"\n\""));
    QVERIFY(!xmc::gui::export_run_csv(db_, 424242, scalars, metrics, &error));
  }
};

QTEST_MAIN(RunsTest)
#include "runs_test.moc"
