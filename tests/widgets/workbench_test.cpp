// The whole workbench window on a tiny dataset, as a user drives it: fill the launch form, start, watch
// the live plots fill, search labels when the run is done, save a screenshot.
#include <QAction>
#include <QFileDialog>
#include <QApplication>
#include <QFileSystemModel>
#include <QTimer>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <QComboBox>
#include <QDir>
#include <QWheelEvent>
#include <QLabel>
#include <QLineEdit>
#include <QCompleter>
#include <QSpinBox>
#include <QProgressBar>
#include <QProcess>
#include <QSignalSpy>
#include <QScrollBar>
#include <QScrollArea>
#include <QSettings>
#include <QSplitter>
#include <QThread>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTabWidget>
#include <QTableWidget>
#include <QtTest/QtTest>

#include "app/main_window.h"
#include "widgets/compare/compare_view.h"
#include "widgets/runs/runs_browser.h"
#include "widgets/search/search_results_model.h"
#include "widgets/live/synthetic_dataset_dialog.h"
#include "tests/support/evaluation_events.h"
#include "engine/data/dataset.h"
#include "engine/core/error.h"
#include "engine/core/memory_budget.h"
#include "engine/session/session.h"
#include "engine/store/run_store.h"
#include "engine/model/bow/bow_options.h"
#include "engine/model/decoder/decoder_options.h"
#include "engine/method/xrlinear/xrlinear_options.h"
#include "engine/sampler/negatives_options.h"
#include "widgets/plots/plot_export.h"  // QCustomPlot, included the way the widgets need it
#include "widgets/plots/decile_plot.h"
#include "widgets/file_dialogs.h"
#include "widgets/runs/run_table_model.h"
#include "widgets/runs/runs_browser.h"
#include "widgets/labels/label_quality_view.h"
#include "widgets/projector/projector_view.h"
#include "widgets/live/live_view.h"
#include "widgets/plots/evaluation_view.h"
#include "widgets/live/launch_form.h"
#include "widgets/plots/loss_plot.h"
#include "widgets/plots/metric_plot.h"
#include "widgets/search/search_panel.h"
#include "widgets/live/sweep_dialog.h"
#include "widgets/qt_progress.h"
#include "widgets/live/training_progress.h"
#include "widgets/live/training_worker.h"
#include "widgets/plots/tsne_plot.h"

namespace {

// Eight labels named by keywords; each query names two of them.
/// Two training texts, one test text, two labels: the smallest dataset a form can be pointed at.
xmc::Dataset two_label_dataset() {
  xmc::Dataset d;
  d.train_text = {"a", "b"};
  d.test_text = {"a"};
  d.label_text = {"x", "y"};
  d.train_labels = xmc::csr_from_rows({{0}, {1}}, 2);
  d.test_labels = xmc::csr_from_rows({{0}}, 2);
  return d;
}

void write_keyword_dataset(const std::filesystem::path& dir) {
  xmc::Dataset d;
  d.meta.name = "keywords";
  for (int l = 0; l < 8; ++l) d.label_text.push_back("key" + std::to_string(l) + " topic");
  std::vector<std::vector<std::int32_t>> train, test;
  for (int i = 0; i < 160; ++i) {
    const int a = i % 8, b = (i / 8) % 8;
    d.train_text.push_back("key" + std::to_string(a) + " key" + std::to_string(b) + " filler" + std::to_string(i % 5));
    train.push_back({a, b});
  }
  for (int i = 0; i < 24; ++i) {
    d.test_text.push_back("key" + std::to_string(i % 8) + " filler1");
    test.push_back({i % 8});
  }
  d.train_labels = xmc::csr_from_rows(train, 8);
  d.test_labels = xmc::csr_from_rows(test, 8);
  xmc::save_dataset(d, dir);
}

// Searches `text` in the panel and waits for its results to be shown.
bool search_and_wait(xmc::gui::SearchPanel* panel, const QString& text) {
  QSignalSpy finished(panel, &xmc::gui::SearchPanel::search_finished);
  panel->search(text);
  return finished.wait(30000) && finished.last().at(0).toString() == text;
}

// A workbench over the keyword dataset written into `dir`, its launch form set for runs of a second or two.
std::unique_ptr<xmc::app::MainWindow> tiny_workbench(const QTemporaryDir& dir, const QString& epochs) {
  write_keyword_dataset(dir.filePath("data").toStdString());
  xmc::app::WorkbenchOptions options;
  options.db = dir.filePath("runs.sqlite");
  options.dataset = dir.filePath("data");
  auto window = std::make_unique<xmc::app::MainWindow>(options);
  auto* form = window->findChild<xmc::gui::LaunchForm*>();
  form->set_field_text("encoder.dim", "16");
  form->set_field_text("batch_size", "16");
  form->set_field_text("epochs", epochs);
  return window;
}

struct Result {
  bool finished = false;
  int exit_code = -1;
  QString err;
};

// Runs the xmc-workbench binary offscreen, as a script would, for at most two minutes.
Result run_workbench(const QStringList& args) {
  QProcess process;
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  env.insert("QT_QPA_PLATFORM", "offscreen");
  process.setProcessEnvironment(env);
  process.start(XMC_WORKBENCH_BINARY, args);
  Result r;
  r.finished = process.waitForFinished(120000);
  if (!r.finished) process.kill();
  r.exit_code = process.exitCode();
  r.err = QString::fromLocal8Bit(process.readAllStandardError());
  return r;
}

// POSIX locks this process holds on `file` (from /proc/locks: "1: POSIX ADVISORY READ <pid> <maj:min:inode> ...").
int posix_locks_held_on(const QString& file) {
  struct stat info {};
  if (::stat(file.toLocal8Bit().constData(), &info) != 0) return -1;
  std::ifstream locks("/proc/locks");
  const std::string pid = std::to_string(::getpid());
  const std::string inode = ":" + std::to_string(info.st_ino);
  int held = 0;
  for (std::string line; std::getline(locks, line);) {
    std::istringstream fields(line);
    std::string n, kind, mode, access, owner, where;
    fields >> n >> kind >> mode >> access >> owner >> where;
    if (kind == "POSIX" && owner == pid && where.size() > inode.size() && where.compare(where.size() - inode.size(), inode.size(), inode) == 0) ++held;
  }
  return held;
}

}  // namespace

class WorkbenchTest : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);  // the workbench's settings go to a test folder, not the user's
    QSettings().clear();                       // and start from none, whatever an earlier run left there
  }

  void importsRunsOfAnotherStoreOnce() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const std::string server = dir.filePath("server.sqlite").toStdString();
    {
      xmc::RunStore store(server);
      const auto run = store.create_run({.name = "trained elsewhere", .config_json = R"({"method":"dexml"})"});
      store.add_evaluation(run, 1.0, 10, {{"P@1", 0.5}});
    }
    xmc::app::WorkbenchOptions options;
    options.db = dir.filePath("laptop.sqlite");
    xmc::app::MainWindow window(options);
    auto* runs = window.findChild<xmc::gui::RunsBrowser*>();
    QCOMPARE(runs->model()->rowCount(), 0);
    QCOMPARE(window.import_runs_from(QString::fromStdString(server)), 1);
    QCOMPARE(runs->model()->rowCount(), 1);
    QCOMPARE(window.import_runs_from(QString::fromStdString(server)), 0);  // by its identity: already here
    QCOMPARE(runs->model()->rowCount(), 1);
  }

  void aClosedWindowComesBackAsItWasLeft() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    xmc::app::WorkbenchOptions options;
    options.db = dir.filePath("runs.sqlite");
    QList<int> split;
    {
      xmc::app::MainWindow window(options);
      window.show();
      window.resize(1111, 777);
      window.findChild<xmc::gui::RunsBrowser*>()->set_group_key("method");
      auto* runs_split = window.findChild<QSplitter*>("runs_split");
      QVERIFY(runs_split);
      runs_split->setSizes({200, 500});
      QCoreApplication::processEvents();
      split = runs_split->sizes();
      QVERIFY(window.close());
    }
    xmc::app::MainWindow again(options);
    again.show();
    QCoreApplication::processEvents();
    QCOMPARE(again.size(), QSize(1111, 777));
    QCOMPARE(again.findChild<xmc::gui::RunsBrowser*>()->group_key(), QStringLiteral("method"));
    QCOMPARE(again.findChild<QSplitter*>("runs_split")->sizes(), split);
    // Another store keeps its own grouping (none yet).
    xmc::app::WorkbenchOptions other = options;
    other.db = dir.filePath("other.sqlite");
    xmc::app::MainWindow elsewhere(other);
    QCOMPARE(elsewhere.findChild<xmc::gui::RunsBrowser*>()->group_key(), QString());
    again.close();
    elsewhere.close();
    QSettings().clear();  // the tests after this one start from the defaults
  }

  void trainsWatchesAndSearches() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const std::filesystem::path data = dir.filePath("data").toStdString();
    write_keyword_dataset(data);
    xmc::app::WorkbenchOptions options;
    options.db = dir.filePath("runs.sqlite");
    options.dataset = QString::fromStdString(data.string());
    options.presets_dir = XMC_SOURCE_DIR "/datasets/configs";
    xmc::app::MainWindow window(options);
    window.show();

    auto* form = window.findChild<xmc::gui::LaunchForm*>();
    QVERIFY(form);
    // The memory budget is a field like any other, and its label says what 0 means on this machine.
    QVERIFY(form->field_shown("memory_mb"));
    bool budget_labelled = false;
    for (auto* label : form->findChildren<QLabel*>())
      budget_labelled |= label->text() == QString("memory_mb (0 = %1 MB here)").arg(xmc::default_memory_budget_mb());
    QVERIFY(budget_labelled);
    form->set_field_text("memory_mb", "64");
    QCOMPARE(form->config().memory_mb, std::int64_t{64});
    form->set_field_text("encoder.dim", "16");
    form->set_field_text("batch_size", "16");
    form->set_field_text("epochs", "3");
    form->set_field_text("lr", "0.02");
    form->set_field_text("sampler.type", "cluster");
    form->set_field_text("sampler.cluster_size", "4");
    form->set_field_text("eval.k", "1, 3, 5");
    form->set_field_text("eval.top", "8");
    QCOMPARE(form->config().epochs, 3);

    auto* worker = window.findChild<xmc::gui::TrainingWorker*>();
    QVERIFY(worker);
    QSignalSpy ended(worker, &xmc::gui::TrainingWorker::ended);
    QSignalSpy reported(worker->progress(), &xmc::gui::QtProgress::progressed);
    window.start_training();
    QVERIFY(worker->running());
    QVERIFY(ended.wait(120000));
    QCOMPARE(ended.at(0).at(1).toBool(), true);
    QCoreApplication::processEvents();

    // Progress came for the epochs' steps and for the work between them, each task under its own name.
    QStringList tasks;
    for (const auto& r : reported) tasks << r.at(0).toString();
    for (const char* task : {"epoch 1/3", "balanced clustering", "evaluation: encoding labels", "evaluation: encoding and ranking test queries"})
      QVERIFY2(tasks.contains(QString(task)), task);
    auto* progress = window.findChild<xmc::gui::TrainingProgress*>();
    QVERIFY(progress);
    QCOMPARE(progress->run_text(), QStringLiteral("run completed — epoch 3.00 of 3"));
    QVERIFY2(progress->work_text().startsWith("done: evaluation"), qPrintable(progress->work_text()));
    QCOMPARE(progress->steps_text(), QStringLiteral("epoch 3/3 — 10/10"));

    // The live view filled while training ran.
    auto* loss = window.findChild<xmc::gui::LossPlot*>();
    QVERIFY(loss->point_count() >= 3 * 10);  // 160 queries / 16 = 10 steps per epoch
    // The process's memory and CPU came live too: at least a sample at each epoch's end.
    QVERIFY(loss->memory_graph()->dataCount() >= 3);
    QVERIFY(loss->cpu_graph()->dataCount() >= 3);
    auto* tsne = window.findChild<xmc::gui::TsnePlot*>();
    // With 8 labels every label is within the 50 nearest, so the map shows the query and all 8 labels,
    // split into positives and hard negatives (in or missed by the batch).
    QCOMPARE(tsne->point_count(), 1 + 8);
    QVERIFY(tsne->group_count() >= 3);
    const auto run = worker->run_id();
    const xmc::Session store(options.db.toStdString());
    QCOMPARE(store.get_run(run).status, xmc::RunStatus::Completed);
    QCOMPARE(static_cast<int>(store.latest_decile_table(run, "P@5").size()), 10);

    // The search panel loads the finished run; a dataset query shows its true label highlighted.
    auto* search = window.findChild<xmc::gui::SearchPanel*>();
    if (!search->ready()) {
      QSignalSpy loaded(search, &xmc::gui::SearchPanel::run_loaded);
      QVERIFY(loaded.wait(60000));
    }
    QVERIFY(search_and_wait(search, "key3 filler1"));
    const QStringList results = search->result_texts(search->modes().front());
    QVERIFY(!results.isEmpty());
    QCOMPARE(results.front(), QString("key3 topic"));
    QVERIFY(search->highlighted_count() >= 1);
    // A label the run never saw is ranked once added: one that names both keys of a query ranks high.
    QCOMPARE(search->add_label("key3 key5 topic"), 8);
    QVERIFY(search_and_wait(search, "key3 key5"));
    const QStringList with_new = search->result_texts(search->modes().front());
    QVERIFY(with_new.mid(0, 3).contains("key3 key5 topic"));
    // The panel says where the new label ranks: the same place the result table shows it.
    QCOMPARE(search->added_label_rank(search->modes().front()), with_new.indexOf("key3 key5 topic") + 1);
    // That line wraps in its column instead of widening the panel (with four modes it pushed the window off-screen).
    const QList<QLabel*> lines = search->findChildren<QLabel*>();
    const auto line = std::find_if(lines.begin(), lines.end(), [](QLabel* l) { return l->text().contains("ranks"); });
    QVERIFY(line != lines.end());
    QVERIFY2((*line)->minimumSizeHint().width() < 200, qPrintable(QString::number((*line)->minimumSizeHint().width())));
    // Searches run in the background in the order typed: queries typed while one runs are superseded by
    // the newest, and only its results are shown.
    QSignalSpy finished(search, &xmc::gui::SearchPanel::search_finished);
    for (const char* query : {"key1 filler0", "key2 key6", "key5 filler1"}) search->search(query);
    QVERIFY(finished.wait(30000));
    QTest::qWait(200);  // a superseded search would have finished by now
    QCOMPARE(finished.count(), 1);
    QCOMPARE(finished.front().at(0).toString(), QString("key5 filler1"));
    QCOMPARE(search->result_texts(search->modes().front()).front(), QString("key5 topic"));
    QVERIFY(search->highlighted_count() >= 1);

    // Every true label's rank is shown, those below the top-k too, at the rank `xmc predict` gives them.
    auto* top = search->findChild<QSpinBox*>();
    QVERIFY(top);
    top->setValue(1);
    // Typing offers the dataset's queries that contain the text: "key3 key5" is in training queries 43 and
    // 107 (i % 8 = 3, i / 8 = 5 or 13) only.
    QLineEdit* query_edit = nullptr;
    for (auto* edit : search->findChildren<QLineEdit*>())
      if (edit->completer()) query_edit = edit;
    QVERIFY(query_edit);
    query_edit->completer()->setCompletionPrefix("key3 key5");
    QCOMPARE(query_edit->completer()->completionCount(), 2);
    QVERIFY(search_and_wait(search, "key3 key5 filler3"));  // a training query of labels 3 and 5
    const QString mode = search->modes().front();
    QCOMPARE(search->result_texts(mode).size(), 1);  // the top-1 alone; the true labels below it follow
    const auto truth_ranks = search->true_label_ranks(mode);
    QCOMPARE(truth_ranks.size(), std::size_t{2});
    const auto full = store.open_predictor(run).predict({"key3 key5 filler3"}, 8, mode.toStdString()).front();
    for (const auto& [label, rank] : truth_ranks) {
      QVERIFY(label == 3 || label == 5);
      const auto at = std::find_if(full.begin(), full.end(), [&](const xmc::LabelScore& s) { return s.label == label; });
      QCOMPARE(rank, static_cast<std::int64_t>(at - full.begin()) + 1);
    }
    QVERIFY(std::any_of(truth_ranks.begin(), truth_ranks.end(), [](const auto& entry) { return entry.second > 1; }));
    top->setValue(5);

    // A run of another dataset (fingerprint) has deciles of other labels: never offered beside this one's.
    const std::int64_t foreign = [&] {
      xmc::RunStore raw(options.db.toStdString());
      const std::int64_t id = raw.create_run({.name = "other data", .dataset_path = "/elsewhere", .dataset_fingerprint = "another"});
      raw.add_decile_table(id, 1, "P@5", std::vector<double>(10, 0.5));
      return id;
    }();

    // The Labels tab ranks the test set. Training counts by hand: label l is i % 8 for 20 of the 160 queries
    // and (i / 8) % 8 for 24 (l < 4: i / 8 runs to 19) or 16, both for 3 or 2: 41 or 34. The hits over all
    // labels are P@5 · 5 · 24 — per-label and per-query counting agree — against the P@5 training stored.
    auto* labels = window.findChild<xmc::gui::LabelQualityView*>();
    QVERIFY(labels);
    QSignalSpy computed(labels, &xmc::gui::LabelQualityView::computed);
    labels->compute();
    QVERIFY(computed.wait(60000));
    const xmc::LabelQualityReport* quality = labels->report();
    QVERIFY(quality);
    QCOMPARE(quality->labels.size(), std::size_t{8});
    std::int64_t hits = 0, test_count = 0;
    for (const auto& q : quality->labels) {
      QCOMPARE(q.train_count, std::int64_t{q.label < 4 ? 41 : 34});
      QCOMPARE(q.test_count, std::int64_t{3});  // 24 test queries, label i % 8
      hits += q.hits;
      test_count += q.test_count;
    }
    QCOMPARE(test_count, std::int64_t{24});
    double p5 = -1;
    for (const auto& e : store.evaluations(run))
      if (e.metric == "P@5") p5 = e.value;  // the last evaluation's
    QCOMPARE(hits, std::llround(p5 * 5 * 24));
    QVERIFY(labels->tail_rows() >= 1);
    // The run's modes are offered once known, its primary ranked first; the label column never takes more
    // than a third of the table (at least 120 px), so the numbers stay in view.
    QCOMPARE(labels->modes(), search->modes());
    QCOMPARE(labels->mode(), search->modes().front());
    labels->resize(1300, 700);
    labels->compute();
    QVERIFY(computed.wait(60000));
    QVERIFY2(labels->label_column_width() <= std::max(120, labels->table_width() / 3),
             qPrintable(QString("label column %1 of %2 px").arg(labels->label_column_width()).arg(labels->table_width())));
    if (const QByteArray keep = qgetenv("XMC_SCREENSHOT_DIR"); !keep.isEmpty()) QVERIFY(labels->grab().save(QString(keep) + "/labels-tab.png"));
    // Double-clicking a tail row looks its missed test query up in Search.
    QSignalSpy chosen(labels, &xmc::gui::LabelQualityView::query_chosen);
    QSignalSpy searched(search, &xmc::gui::SearchPanel::search_finished);
    labels->activate_tail_row(0);
    QCOMPARE(chosen.size(), 1);
    const QString missed = chosen.front().front().toString();
    QVERIFY(!missed.isEmpty());
    QVERIFY(searched.wait(30000));
    QCOMPARE(searched.back().front().toString(), missed);
    QCOMPARE(search->query_text(), missed);  // the query box shows what was ranked (it stayed empty)
    QCOMPARE(window.findChild<QTabWidget*>()->currentWidget(), static_cast<QWidget*>(search));

    // The Projector: every label of the run in 2-D (PCA: centred, the first axis the one of larger
    // variance), coloured by decile; the test queries with the positives of a chosen label in red (three:
    // rows 3, 11 and 19 hold key3).
    auto* projector = window.findChild<xmc::gui::ProjectorView*>();
    QVERIFY(projector);
    QSignalSpy projected(projector, &xmc::gui::ProjectorView::computed);
    projector->compute("labels", "pca");
    QVERIFY(projected.wait(60000));
    const xmc::Projection* map = projector->projection();
    QVERIFY(map);
    QCOMPARE(map->points.size(), std::size_t{8});
    double mx = 0, my = 0, vx = 0, vy = 0;
    for (std::size_t i = 0; i < map->points.size(); ++i) {
      QCOMPARE(map->points[i].id, static_cast<std::int64_t>(i));
      QCOMPARE(map->texts[i], "key" + std::to_string(i) + " topic");
      QVERIFY(map->points[i].decile >= 0 && map->points[i].decile <= 9);
      mx += map->points[i].x / 8;
      my += map->points[i].y / 8;
    }
    for (const auto& p : map->points) vx += (p.x - mx) * (p.x - mx), vy += (p.y - my) * (p.y - my);
    QVERIFY(std::abs(mx) < 1e-4 && std::abs(my) < 1e-4);
    QVERIFY(vx >= vy);
    // Every decile's colour stands out on the white plot: a contrast of at least 3:1 (WCAG's for graphics).
    {
      const auto luminance = [](const QColor& c) {
        const auto linear = [](double v) { return v <= 0.04045 ? v / 12.92 : std::pow((v + 0.055) / 1.055, 2.4); };
        return 0.2126 * linear(c.redF()) + 0.7152 * linear(c.greenF()) + 0.0722 * linear(c.blueF());
      };
      auto* plot = projector->findChild<QCustomPlot*>();
      QVERIFY(plot);
      int deciles = 0;
      for (int g = 0; g < plot->graphCount(); ++g) {
        if (!plot->graph(g)->name().startsWith("decile")) continue;
        ++deciles;
        const QColor colour = plot->graph(g)->scatterStyle().brush().color();
        const double contrast = 1.05 / (luminance(colour) + 0.05);
        QVERIFY2(contrast >= 3.0, qPrintable(plot->graph(g)->name() + QString(": contrast %1 against white").arg(contrast)));
      }
      QCOMPARE(deciles, 10);
    }
    projector->set_search_text("key5");
    QCOMPARE(projector->highlighted_count(), 1);
    auto* points = projector->findChild<QSpinBox*>();
    QVERIFY(points);
    QCOMPARE(points->value(), 20000);
    auto* progress_bar = projector->findChild<QProgressBar*>("projector_progress");
    QVERIFY(progress_bar && progress_bar->isHidden());
    QSignalSpy converging(projector, &xmc::gui::ProjectorView::converging);
    int maps_in_the_making = 0;
    const QMetaObject::Connection keep_one = connect(projector, &xmc::gui::ProjectorView::converging, this, [&] {
      const QByteArray keep = qgetenv("XMC_SCREENSHOT_DIR");
      if (++maps_in_the_making == 4 && !keep.isEmpty()) QVERIFY(projector->grab().save(QString(keep) + "/projector-converging.png"));
    });
    projector->compute("queries", "tsne");
    QCOMPARE(points->value(), 5000);  // t-SNE's limit, shown in the box rather than applied silently
    QCOMPARE(points->maximum(), projector->sample_limit());
    QVERIFY(projected.wait(60000));
    QVERIFY(progress_bar->isHidden());  // shown while it ran, gone when done
    QCOMPARE(projector->projection()->points.size(), std::size_t{24});
    QVERIFY2(converging.count() >= 5, qPrintable(QString::number(converging.count())));  // the map was drawn as it formed
    disconnect(keep_one);
    QCOMPARE(projector->set_positives_of("key3 topic"), 3);
    // A label or a search that finds nothing says so.
    QCOMPARE(projector->set_positives_of("no such label"), 0);
    projector->set_search_text("zzz");
    projector->set_positives_of("no such label");
    {
      const QList<QLabel*> texts = projector->findChildren<QLabel*>();
      const bool said = std::any_of(texts.begin(), texts.end(), [](QLabel* l) {
        return l->text().contains("nothing matches “zzz”") && l->text().contains("no label of the run is called “no such label”");
      });
      QVERIFY(said);
    }
    projector->set_search_text("");
    QCOMPARE(projector->set_positives_of("key3 topic"), 3);
    if (const QByteArray keep = qgetenv("XMC_SCREENSHOT_DIR"); !keep.isEmpty()) {
      projector->resize(1000, 700);
      QVERIFY(projector->grab().save(QString(keep) + "/projector-tab.png"));
    }

    // A second run; its decile bars can be put beside the first run's from the Live tab.
    QSignalSpy second_ended(worker, &xmc::gui::TrainingWorker::ended);
    window.start_training();
    // Every panel starts afresh: no t-SNE of the last run's query; the schedule's marks are this run's
    // (clustered batches from epoch 1, C = 4).
    QCOMPARE(tsne->point_count(), 0);
    auto* metrics = window.findChild<xmc::gui::MetricPlot*>("live_metrics");
    QVERIFY(metrics);
    QCOMPARE(metrics->milestones().size(), std::size_t{1});
    QCOMPARE(metrics->milestones().front().first, 1.0);
    QCOMPARE(metrics->milestones().front().second, QStringLiteral("clusters, C = 4"));
    QVERIFY(second_ended.wait(120000));
    QCoreApplication::processEvents();
    auto* overlay = window.findChild<QComboBox*>("decile_overlay");
    QVERIFY(overlay);
    const int first_run = overlay->findData(QVariant::fromValue<qlonglong>(run));
    QVERIFY2(first_run > 0, "the first run is offered for the decile comparison");
    QCOMPARE(overlay->findData(QVariant::fromValue<qlonglong>(worker->run_id())), -1);  // not the run shown
    QCOMPARE(overlay->findData(QVariant::fromValue<qlonglong>(foreign)), -1);
    overlay->setCurrentIndex(first_run);
    Q_EMIT overlay->activated(first_run);
    auto* deciles = window.findChild<xmc::gui::DecilePlot*>("live_deciles");
    QVERIFY(deciles);
    QCOMPARE(deciles->all_bars().size(), std::size_t{2});
    const auto stored = store.latest_decile_table(run, "P@5");
    for (int bin = 0; bin < 10; ++bin)
      QVERIFY(std::abs(deciles->overlay_bars()->data()->at(bin)->value - 100 * stored[static_cast<std::size_t>(bin)]) < 1e-9);

    // Search puts another run's ranking of the same query beside this run's: run 1's beside run 2's, equal
    // to what run 1's own predictor gives.
    const auto second_run = worker->run_id();
    QTRY_COMPARE_WITH_TIMEOUT(search->run_id(), second_run, 60000);
    QSignalSpy compared(search, &xmc::gui::SearchPanel::compared_run_loaded);
    search->findChild<QSpinBox*>()->setValue(5);  // the top-k
    search->compare_with(run);
    QVERIFY(compared.wait(60000));
    QVERIFY(search_and_wait(search, "key5 filler1"));
    QStringList expected;
    const auto ranked_by_run_1 = store.open_predictor(run).predict({"key5 filler1"}, 5);  // kept: front() refers into it
    for (const auto& hit : ranked_by_run_1.front()) expected << QString::fromStdString(hit.text);
    QCOMPARE(search->compared_results(), expected);
    search->compare_with(0);
    QVERIFY(search->compared_results().isEmpty());

    const QString shot = dir.filePath("window.png");
    QVERIFY(window.save_screenshot(shot));
    QImage image(shot);
    QVERIFY(!image.isNull());
    QVERIFY(image.width() >= 800);
    // With XMC_SCREENSHOT_DIR set, keep a picture of every tab to look at.
    if (const QByteArray keep = qgetenv("XMC_SCREENSHOT_DIR"); !keep.isEmpty()) {
      auto* tabs = window.findChild<QTabWidget*>();
      for (int i = 0; i < tabs->count(); ++i) {
        tabs->setCurrentIndex(i);
        QCoreApplication::processEvents();
        window.save_screenshot(QString(keep) + "/workbench-" + tabs->tabText(i).toLower() + ".png");
      }
    }
  }

  // An 800 x 500 window squashed the Live plots into unreadable strips; now each keeps a readable size and the
  // tab scrolls.
  void aSmallWindowScrollsTheLivePlotsInsteadOfSquashingThem() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    xmc::app::WorkbenchOptions options;
    options.db = dir.filePath("runs.sqlite");
    xmc::app::MainWindow window(options);
    window.resize(800, 500);
    window.show();
    window.findChild<QTabWidget*>()->setCurrentIndex(1);
    QCoreApplication::processEvents();
    // Every tab scrolls below its content's size: the window itself can be that small.
    QVERIFY2(window.width() <= 800 && window.height() <= 500, qPrintable(QString("%1 x %2").arg(window.width()).arg(window.height())));
    auto* loss = window.findChild<xmc::gui::LossPlot*>();
    QVERIFY2(loss->width() >= 450 && loss->height() >= 280, qPrintable(QString("%1 x %2").arg(loss->width()).arg(loss->height())));
    auto* scroll = window.findChild<QScrollArea*>("live_scroll");
    QVERIFY(scroll);
    QVERIFY(scroll->verticalScrollBar()->maximum() > 0 && scroll->horizontalScrollBar()->maximum() > 0);
    if (const QByteArray keep = qgetenv("XMC_SCREENSHOT_DIR"); !keep.isEmpty()) window.grab().save(QString::fromUtf8(keep) + "/live-800x500.png");
    // A large window has no scroll bars: the plots fill it.
    window.resize(1600, 1000);
    QCoreApplication::processEvents();
    QCOMPARE(scroll->verticalScrollBar()->maximum(), 0);
    QCOMPARE(scroll->horizontalScrollBar()->maximum(), 0);

    // Nor after a run shown in a panel per metric (two modes), nor for the single-mode run after it: the decile
    // chart keeps its room (the whole window, as a user saw it).
    auto* live = window.findChild<xmc::gui::LiveView*>();
    QVERIFY(live);
    const auto evaluation = xmc::test::evaluation_event;
    const auto settled = [&] {
      for (int i = 0; i < 3; ++i) QCoreApplication::processEvents();
      return scroll->verticalScrollBar()->maximum();
    };
    xmc::TrainConfig config;
    live->begin_run(1, config, "run 1");
    for (double epoch : {1.0, 2.0, 3.0}) live->on_event(evaluation(1, epoch, true));
    auto* evaluations = live->findChild<xmc::gui::EvaluationView*>();
    QVERIFY(evaluations);
    evaluations->set_mode_chosen("emb mode", true);
    QCOMPARE(evaluations->effective_layout(), xmc::gui::EvaluationView::Layout::panel_per_metric);
    QCOMPARE(settled(), 0);
    evaluations->set_layout(xmc::gui::EvaluationView::Layout::panel_per_mode);
    QCOMPARE(settled(), 0);
    evaluations->set_layout(xmc::gui::EvaluationView::Layout::automatic);
    live->begin_run(2, config, "run 2");
    for (double epoch : {1.0, 2.0}) live->on_event(evaluation(2, epoch, false));
    QCOMPARE(settled(), 0);
    QVERIFY2(live->decile_plot()->height() > 200, qPrintable(QString::number(live->decile_plot()->height())));
    if (const QByteArray keep = qgetenv("XMC_SCREENSHOT_DIR"); !keep.isEmpty()) window.grab().save(QString::fromUtf8(keep) + "/live-after-panels-1600x1000.png");
  }

  void theMouseWheelChangesNoUnfocusedChoice() {
    // Scrolling the form over a combo box once started a run with pooling = cls: the wheel changes a
    // choice only when its box has the focus.
    xmc::gui::LaunchForm form(XMC_SOURCE_DIR "/datasets/configs");
    form.resize(900, 700);
    form.show();
    QVERIFY(QTest::qWaitForWindowExposed(&form));
    const QString before = form.field_text("method");
    QComboBox* method = nullptr;
    for (auto* combo : form.findChildren<QComboBox*>())
      if (combo->currentText() == before && combo->findText("ngame") >= 0) method = combo;
    QVERIFY(method);
    auto wheel = [&](QWidget* target) {
      const QPointF at(target->width() / 2.0, target->height() / 2.0);
      QWheelEvent event(at, target->mapToGlobal(at), QPoint(), QPoint(0, -120), Qt::NoButton, Qt::NoModifier, Qt::NoScrollPhase, false);
      QCoreApplication::sendEvent(target, &event);
    };
    form.setFocus();
    QVERIFY(!method->hasFocus());
    wheel(method);
    QCOMPARE(form.field_text("method"), before);
    method->setFocus();
    QTRY_VERIFY(method->hasFocus());
    wheel(method);
    QVERIFY(form.field_text("method") != before);  // focused: the wheel chooses, as in any Qt form
  }

  void launchFormShowsOnlyTheChosenComponentsKeys() {
    xmc::gui::LaunchForm form(XMC_SOURCE_DIR "/datasets/configs");
    form.show();
    // Defaults: dexml, bow, random batches, in-batch negatives, decoupled softmax.
    for (const char* key : {"lr", "temperature", "encoder.min_count"}) QVERIFY2(form.field_shown(key), key);
    for (const char* key : {"margin", "encoder.pooling", "sampler.cluster_size", "hard.per_query", "ngame.m4_epochs"})
      QVERIFY2(!form.field_shown(key), key);
    form.set_field_text("method", "ngame");
    form.set_field_text("encoder.type", "bert");
    form.set_field_text("sampler.type", "cluster");
    form.set_field_text("loss", "triplet");
    for (const char* key : {"margin", "encoder.pooling", "sampler.cluster_size", "ngame.m4_epochs"}) QVERIFY2(form.field_shown(key), key);
    for (const char* key : {"temperature", "encoder.min_count", "hard.per_query"}) QVERIFY2(!form.field_shown(key), key);
    // A hidden key keeps its value and still reaches the config.
    form.set_field_text("encoder.min_count", "3");
    QCOMPARE(form.config().get<xmc::BowOptions>().min_count, std::int64_t{3});
    // A decoder: its prompt, LoRA and memory keys, beside the transformer keys it shares with bert.
    form.set_field_text("encoder.type", "decoder");
    for (const char* key : {"encoder.template", "encoder.tokenizer", "encoder.lora.rank", "encoder.lora.alpha", "encoder.lora.targets",
                            "encoder.lora.rslora", "encoder.checkpointing", "encoder.base_dtype", "encoder.pooling", "encoder.max_len"})
      QVERIFY2(form.field_shown(key), key);
    QVERIFY(!form.field_shown("encoder.min_count"));
    form.set_field_text("encoder.lora.rank", "64");
    QCOMPARE(form.config().get<xmc::DecoderOptions>().lora_rank, std::int64_t{64});
    // The shortlist search's keys (its clusters' size, its probe, the probe it may be raised to, the products' type)
    // with hard negatives only.
    form.set_field_text("method", "unidec");
    form.set_field_text("negatives", "inbatch");
    for (const char* key : {"hard.cluster_size", "hard.probe", "hard.max_probe", "hard.precision"}) QVERIFY2(!form.field_shown(key), key);
    form.set_field_text("negatives", "hard");
    for (const char* key : {"hard.cluster_size", "hard.probe", "hard.max_probe", "hard.precision", "psl.shortlist"}) QVERIFY2(form.field_shown(key), key);
    form.set_field_text("hard.max_probe", "256");
    form.set_field_text("hard.cluster_size", "500");
    form.set_field_text("hard.precision", "float32");
    QCOMPARE(form.config().get<xmc::NegativesOptions>().max_probe, std::int64_t{256});
    QCOMPARE(form.config().get<xmc::NegativesOptions>().cluster_size, std::int64_t{500});
    QVERIFY(!form.config().get<xmc::NegativesOptions>().bfloat16_products());
    if (const QByteArray keep = qgetenv("XMC_SCREENSHOT_DIR"); !keep.isEmpty()) {
      form.resize(900, 1400);
      QCoreApplication::processEvents();
      form.grab().save(QString::fromUtf8(keep) + "/launch-form-unidec-hard.png");
    }
    form.set_field_text("method", "ngame");
    form.set_field_text("negatives", "inbatch");
    if (const QByteArray keep = qgetenv("XMC_SCREENSHOT_DIR"); !keep.isEmpty()) {
      form.resize(900, 1400);
      form.grab().save(QString::fromUtf8(keep) + "/launch-form-decoder.png");
    }
    // xrlinear trains no encoder by a loss: its own keys (the fusion with a dense run among them), the run's and
    // the evaluation's, and none of the encoder, loss, batching or optimiser keys.
    form.set_field_text("method", "xrlinear");
    for (const char* key : {"xrlinear.ngrams", "xrlinear.dense_run", "xrlinear.fusion_weight", "xrlinear.trees", "xrlinear.knn", "seed", "eval.k", "max_steps"})
      QVERIFY2(form.field_shown(key), key);
    for (const char* key : {"encoder.type", "encoder.template", "loss", "temperature", "lr", "batch_size", "epochs", "sampler.type", "tsne.every", "rag.use"})
      QVERIFY2(!form.field_shown(key), key);
    // The tf-idf keys are for features fit on the texts: not for the dataset's given rows.
    form.set_field_text("xrlinear.features", "given");
    QVERIFY(!form.field_shown("xrlinear.ngrams"));
    QVERIFY(!form.field_shown("xrlinear.min_df"));
    QVERIFY(form.field_shown("xrlinear.trees"));
    form.set_field_text("xrlinear.features", "text");
    QVERIFY(form.field_shown("xrlinear.ngrams"));
    // It trains in one process: the choice of processes is held at 1 (and comes back for a method that can split).
    auto* processes = form.findChild<QSpinBox*>("processes");
    QVERIFY(processes);
    QVERIFY(!processes->isEnabled());
    QCOMPARE(form.processes(), 1);
    form.set_field_text("method", "dexml");
    QVERIFY(processes->isEnabled());
    form.set_field_text("method", "xrlinear");
    // The choice's share and budget are keys of the choice: shown once it is asked for.
    QVERIFY(form.field_shown("xrlinear.choose"));
    QVERIFY(!form.field_shown("xrlinear.choose_budget"));
    form.set_field_text("xrlinear.choose", "held-out");
    QVERIFY(form.field_shown("xrlinear.choose_budget"));
    QVERIFY(form.field_shown("xrlinear.choose_holdout"));
    form.show_chosen("xrlinear.ngrams", 2);
    form.show_chosen("xrlinear.trees", 3);
    if (const QByteArray keep = qgetenv("XMC_SCREENSHOT_DIR"); !keep.isEmpty()) {
      form.resize(900, 1000);
      QCoreApplication::processEvents();  // the layout settles after the rows were hidden
      form.grab().save(QString::fromUtf8(keep) + "/launch-form-xrlinear.png");
    }
  }

  void theRecommendedPresetIsOfferedFirst() {
    xmc::gui::LaunchForm form(XMC_SOURCE_DIR "/datasets/configs");
    auto* presets = form.findChild<QComboBox*>("presets");
    QVERIFY(presets);
    QVERIFY(presets->count() > 3);
    QCOMPARE(presets->itemText(0), QStringLiteral("(defaults)"));
    QCOMPARE(presets->itemText(1), QStringLiteral("recommended-text"));
    QCOMPARE(presets->count(), QDir(XMC_SOURCE_DIR "/datasets/configs").entryList({"*.json"}, QDir::Files).size() + 1);
    QVERIFY(presets->findText("recommended-text") == 1 && presets->findText("dexml-bow-wordnet") > 1);
    // Typing a preset's whole name into the box chooses that preset, not a longer one it begins ("…-all").
    presets->setFocus();
    QTest::keyClicks(presets, QStringLiteral("dexml-bow-wordnet"));
    QCOMPARE(presets->currentText(), QStringLiteral("dexml-bow-wordnet"));
    presets->setCurrentIndex(1);
    Q_EMIT presets->activated(1);
    const xmc::TrainConfig config = form.config();
    QCOMPARE(QString::fromStdString(config.method), QStringLiteral("xrlinear"));
    QCOMPARE(config.get<xmc::XrlinearOptions>().trees, std::int64_t{2});
    QCOMPARE(config.get<xmc::XrlinearOptions>().knn, std::int64_t{50});
    QCOMPARE(QString::fromStdString(config.get<xmc::XrlinearOptions>().choose), QStringLiteral("held-out"));
    // The preset's name describes its values: it goes once they change (it stayed: "…, 2 trees and 50 neighbours").
    QVERIFY(form.field_text("name").contains(QStringLiteral("50 neighbours")));
    form.set_field_text("seed", "7");  // another seed is the same setting: the name stays
    QVERIFY(form.field_text("name").contains(QStringLiteral("50 neighbours")));
    form.set_field_text("xrlinear.trees", "1");
    QCOMPARE(form.field_text("name"), QString());
    QCOMPARE(form.config().get<xmc::XrlinearOptions>().trees, std::int64_t{1});
    // What a run chose while it trained is said beside the field until the next run.
    form.show_chosen("xrlinear.trees", 3);
    form.show_chosen("xrlinear.knn_weight", 0.7);
    QCOMPARE(form.field_label("xrlinear.trees"), QStringLiteral("xrlinear.trees · chosen 3"));
    QCOMPARE(form.field_label("xrlinear.knn_weight"), QStringLiteral("xrlinear.knn_weight · chosen 0.7"));
    form.show_chosen("xrlinear.trees", 2);  // chosen again: said once
    QCOMPARE(form.field_label("xrlinear.trees"), QStringLiteral("xrlinear.trees · chosen 2"));
    QCOMPARE(form.field_text("xrlinear.trees"), QStringLiteral("1"));  // the configured value stays what was asked for
    form.clear_chosen();
    QCOMPARE(form.field_label("xrlinear.trees"), QStringLiteral("xrlinear.trees"));
  }

  void theImageKeysAppearForADatasetWithImageBanks() {
    QTemporaryDir dir;
    xmc::Dataset d = two_label_dataset();
    xmc::save_dataset(d, (dir.path() + "/texts").toStdString());
    d.label_images = std::make_shared<const xmc::ImageBank>(xmc::ImageBank::from_values(2, 1, 4, std::vector<float>(8, 1.0f)));
    xmc::save_dataset(d, (dir.path() + "/pictures").toStdString());

    xmc::gui::LaunchForm form(XMC_SOURCE_DIR "/datasets/configs");
    form.show();
    form.set_field_text("encoder.type", "bert");
    form.set_dataset(dir.path() + "/texts");
    QVERIFY(!form.field_shown("images.max"));
    form.set_dataset(dir.path() + "/pictures");
    QVERIFY(form.field_shown("images.max"));
    QVERIFY(form.field_shown("images.fusion"));
    if (const QByteArray keep = qgetenv("XMC_SCREENSHOT_DIR"); !keep.isEmpty()) {
      form.resize(900, 1300);
      QCoreApplication::processEvents();
      form.grab().save(QString::fromUtf8(keep) + "/launch-form-images.png");
    }
    form.set_field_text("encoder.type", "bow");  // the bow encoder fuses no images
    QVERIFY(!form.field_shown("images.max"));
  }

  void ireneOffersTheRunsItCanBuildOnAndDropsTheBaseRunsName() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    xmc::Dataset d = two_label_dataset();
    const std::string split = (dir.path() + "/zs").toStdString(), plain = (dir.path() + "/plain").toStdString();
    xmc::save_dataset(d, split);
    xmc::save_dataset(d, plain);
    std::ofstream(split + "/novel_labels.txt") << "1\n";  // what marks a zero-shot split
    xmc::app::WorkbenchOptions options;
    options.db = dir.filePath("runs.sqlite");
    std::int64_t unidec = 0, ngame = 0;
    {
      xmc::RunStore store(options.db.toStdString());
      auto add = [&](const char* name, const char* method, const std::string& dataset, xmc::RunStatus status) {
        xmc::TrainConfig c;
        c.method = method;
        c.dataset = dataset;
        const auto run = store.create_run({.name = name, .config_json = xmc::to_json(c), .dataset_path = dataset});
        store.set_status(run, status);
        return run;
      };
      unidec = add("unidec zs base", "unidec", split, xmc::RunStatus::Completed);
      add("a dexml run", "dexml", split, xmc::RunStatus::Completed);          // no classifiers to build on
      add("unfinished", "unidec", split, xmc::RunStatus::Failed);           // not completed
      add("other data", "unidec", plain, xmc::RunStatus::Completed);        // another dataset
      ngame = add("ngame zs base", "ngame", split, xmc::RunStatus::Completed);
    }
    xmc::app::MainWindow window(options);
    auto* form = window.findChild<xmc::gui::LaunchForm*>();
    QVERIFY(form);
    // A base run's config loaded into the form, then IRENE chosen: the base run's name does not carry over.
    xmc::TrainConfig base;
    base.method = "unidec";
    base.name = "unidec zs base";
    form->set_config(base);
    QCOMPARE(form->field_text("name"), QStringLiteral("unidec zs base"));
    form->set_field_text("method", "irene");
    QCOMPARE(form->field_text("name"), QString());
    form->set_dataset(QString::fromStdString(split));
    auto* base_run = window.findChild<QComboBox*>("irene.base_run");
    QVERIFY(base_run && base_run->isEditable());
    QCOMPARE(base_run->count(), 2);  // newest first
    QCOMPARE(base_run->itemData(0).toString(), QString::number(ngame));
    QCOMPARE(base_run->itemData(1).toString(), QString::number(unidec));
    QVERIFY(base_run->itemText(1).contains("unidec zs base (unidec)"));
    QCOMPARE(form->field_text("irene.base_run"), QString::number(ngame));  // unset: the newest is offered
    if (const QByteArray keep = qgetenv("XMC_SCREENSHOT_DIR"); !keep.isEmpty()) {
      window.resize(1300, 900);
      window.show();
      QCoreApplication::processEvents();
      if (auto* area = form->findChild<QScrollArea*>()) area->ensureWidgetVisible(base_run);
      QCoreApplication::processEvents();
      window.grab().save(QString::fromUtf8(keep) + "/launch-form-irene.png");
    }
    base_run->setCurrentIndex(1);
    QCOMPARE(form->field_text("irene.base_run"), QString::number(unidec));
    base_run->setEditText("42");  // any id can still be typed
    QCOMPARE(form->field_text("irene.base_run"), QStringLiteral("42"));
    form->set_dataset(QString::fromStdString(plain));  // not a zero-shot split: nothing to build on
    QCOMPARE(base_run->count(), 0);
    QVERIFY(base_run->lineEdit()->placeholderText().contains("no finished run"));
  }

  void theDeviceListSaysWhatEachDeviceIsWhileTheConfigTakesItsId() {
    xmc::gui::LaunchForm form(XMC_SOURCE_DIR "/datasets/configs");
    auto* device = form.findChild<QComboBox*>("device");
    QVERIFY(device);
    // The CPU with its cores and memory (a GPU, when present, with its name and memory).
    const QString cores = QString::number(QThread::idealThreadCount());
    QVERIFY2(device->itemText(0).startsWith("cpu: " + cores + " core"), qPrintable(device->itemText(0)));
    QVERIFY2(device->itemText(0).contains("GiB"), qPrintable(device->itemText(0)));
    QCOMPARE(form.field_text("device"), QString("cpu"));
    QCOMPARE(form.config().device, std::string("cpu"));
    for (int i = 1; i < device->count(); ++i) QVERIFY(device->itemData(i).toString().startsWith("cuda:"));
    form.set_field_text("device", "cpu");
    QCOMPARE(device->currentIndex(), 0);
  }

  void stoppedRunContinuesFromTheTrainingMenu() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const auto owned = tiny_workbench(dir, "4");
    xmc::app::MainWindow& window = *owned;
    const QString db = dir.filePath("runs.sqlite");
    auto* worker = window.findChild<xmc::gui::TrainingWorker*>();
    auto* resume = window.findChild<QAction*>("continue_run");
    QVERIFY(resume);
    QVERIFY(!resume->isEnabled());
    // Stop at the first step, as a user pressing Stop would.
    bool stop_sent = false;
    connect(worker, &xmc::gui::TrainingWorker::event, this, [&](const xmc::TrainEvent& e) {
      if (e.kind == xmc::TrainEvent::Kind::Step && !stop_sent) {
        stop_sent = true;
        worker->stop();
      }
    });
    QSignalSpy ended(worker, &xmc::gui::TrainingWorker::ended);
    window.start_training();
    QVERIFY(ended.wait(120000));
    QCoreApplication::processEvents();
    const auto run = worker->run_id();
    QCOMPARE(xmc::Session(db.toStdString()).get_run(run).status, xmc::RunStatus::Stopped);
    QVERIFY(resume->isEnabled());

    resume->trigger();
    QVERIFY(worker->running());
    QVERIFY(!resume->isEnabled());
    QVERIFY(ended.wait(120000));
    QCoreApplication::processEvents();
    QCOMPARE(worker->run_id(), run);  // the same run, continued
    const xmc::Session store(db.toStdString());
    QCOMPARE(store.get_run(run).status, xmc::RunStatus::Completed);
    QCOMPARE(store.list_runs().size(), std::size_t{1});
    QVERIFY(!resume->isEnabled());
  }

  void aTwoProcessRunStartsFromTheLaunchFormAndShowsLikeAnyOther() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const auto owned = tiny_workbench(dir, "2");
    xmc::app::MainWindow& window = *owned;
    auto* form = window.findChild<xmc::gui::LaunchForm*>();
    form->set_field_text("encoder.dropout", "0");
    auto* processes = window.findChild<QSpinBox*>("processes");
    QVERIFY(processes);
    QVERIFY(processes->maximum() >= 1);
    processes->setMaximum(2);  // a 1-core test machine still runs two processes
    processes->setValue(2);
    QCOMPARE(form->processes(), 2);
    auto* worker = window.findChild<xmc::gui::TrainingWorker*>();
    worker->set_worker_binary(XMC_CLI_PATH);
    int steps = 0, evaluations = 0;
    connect(worker, &xmc::gui::TrainingWorker::event, this, [&](const xmc::TrainEvent& e) {
      steps += e.kind == xmc::TrainEvent::Kind::Step;
      evaluations += e.kind == xmc::TrainEvent::Kind::Evaluation;
    });
    QSignalSpy ended(worker, &xmc::gui::TrainingWorker::ended);
    window.start_training();
    QVERIFY(worker->running());
    QCOMPARE(worker->processes(), 2);
    auto* label = window.findChild<QLabel*>("run_label");
    QVERIFY(label);
    QVERIFY2(label->text().contains("2 processes"), qPrintable(label->text()));
    QVERIFY(ended.wait(120000));
    QCoreApplication::processEvents();
    QVERIFY2(ended.front().at(1).toBool(), qPrintable(ended.front().at(2).toString()));
    const xmc::Session store(dir.filePath("runs.sqlite").toStdString());
    QCOMPARE(store.list_runs().size(), std::size_t{1});
    QCOMPARE(store.get_run(worker->run_id()).status, xmc::RunStatus::Completed);
    QVERIFY(steps > 10);
    QCOMPARE(evaluations, 2);  // rank 0 evaluates each epoch, as a single process does
  }

  void aSweepErrorGoesOnceItsRowIsFixed() {
    // Start with an empty value names the row; typing the values clears the message (it stayed, stale).
    xmc::gui::SweepDialog dialog;
    dialog.set_axes({xmc::parse_sweep_axis("epochs=1")});
    auto* table = dialog.findChild<QTableWidget*>();
    QVERIFY(table != nullptr && table->item(0, 1) != nullptr);
    table->item(0, 1)->setText(QString());
    dialog.accept();
    QVERIFY2(dialog.error_text().contains(QStringLiteral("epochs")), qPrintable(dialog.error_text()));
    QCOMPARE(dialog.point_count(), 0);
    table->item(0, 1)->setText(QStringLiteral("1, 2"));
    QCOMPARE(dialog.error_text(), QString());
    QCOMPARE(dialog.point_count(), 2);
    table->item(0, 1)->setText(QStringLiteral("1, x"));  // another mistake replaces it
    QVERIFY2(dialog.error_text().contains(QStringLiteral("epochs")), qPrintable(dialog.error_text()));
  }

  void aSweepRunsEveryPointFollowsEachInTheLiveTabAndResumesAfterAStop() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const auto owned = tiny_workbench(dir, "2");
    xmc::app::MainWindow& window = *owned;
    const QString db = dir.filePath("runs.sqlite");
    auto* worker = window.findChild<xmc::gui::TrainingWorker*>();

    // The dialog reads rows as the command line does, names a bad row and counts the runs.
    xmc::gui::SweepDialog dialog;
    dialog.set_axes({xmc::parse_sweep_axis("lr=0.01, 0.02"), xmc::parse_sweep_axis("temperature=0.05,0.1")});
    QCOMPARE(dialog.point_count(), 4);
    dialog.set_axes({xmc::parse_sweep_axis("lrr=0.01")});
    QCOMPARE(dialog.point_count(), 0);
    try {
      dialog.axes();
      QFAIL("an unknown key was accepted");
    } catch (const xmc::ConfigError& e) {
      QVERIFY2(QString(e.what()).contains("did you mean 'lr'"), e.what());
    }

    // 2 × 2 points; the Live tab turns to each point's run. Stop during the third point (one of the long
    // ones: a short run could end before the stop reaches it).
    std::vector<std::int64_t> started;
    connect(worker, &xmc::gui::TrainingWorker::point_started, this,
            [&](std::int64_t, std::int64_t, std::int64_t, std::int64_t run) { started.push_back(run); });
    bool stop_sent = false;
    connect(worker, &xmc::gui::TrainingWorker::event, this, [&](const xmc::TrainEvent& e) {
      if (started.size() == 3 && e.kind == xmc::TrainEvent::Kind::Step && !stop_sent) {
        stop_sent = true;
        worker->stop();
      }
    });
    QSignalSpy ended(worker, &xmc::gui::TrainingWorker::ended);
    const std::int64_t sweep = window.start_sweep({xmc::parse_sweep_axis("epochs=2,30"), xmc::parse_sweep_axis("lr=0.01,0.02")}, "tiny");
    QVERIFY(sweep > 0);
    QVERIFY(ended.wait(120000));
    QCoreApplication::processEvents();
    QCOMPARE(started.size(), std::size_t{3});
    auto* live_label = window.findChild<xmc::gui::TrainingProgress*>();
    QVERIFY(live_label);
    xmc::Session store(db.toStdString());
    auto info = store.get_sweep(sweep);
    QCOMPARE(store.get_run(info.points[0].run).status, xmc::RunStatus::Completed);
    QCOMPARE(store.get_run(info.points[2].run).status, xmc::RunStatus::Stopped);
    QCOMPARE(info.points[3].run, std::int64_t{0});  // never started
    // The Runs tab lists the sweep's runs.
    auto* runs = window.findChild<xmc::gui::RunsBrowser*>();
    QCOMPARE(runs->proxy()->rowCount(), 3);

    // Resume: the stopped point continues in its run, the last one starts; completed ones stay.
    started.clear();
    window.resume_sweep(sweep);
    QVERIFY(ended.wait(120000));
    QCoreApplication::processEvents();
    info = store.get_sweep(sweep);
    QCOMPARE(started, (std::vector<std::int64_t>{info.points[2].run, info.points[3].run}));
    for (const auto& p : info.points) QCOMPARE(store.get_run(p.run).status, xmc::RunStatus::Completed);
    QCOMPARE(store.list_runs().size(), std::size_t{4});
    for (const auto& run : store.list_runs()) QCOMPARE(run.tags, std::vector<std::string>{"sweep-" + std::to_string(sweep)});
    QCOMPARE(runs->proxy()->rowCount(), 4);
    // The comparison shows the sweep just finished (not the selection before it).
    auto* compare = window.findChild<xmc::gui::CompareView*>();
    QVERIFY(compare);
    QCOMPARE(compare->runs().size(), std::size_t{4});
    if (const QByteArray keep = qgetenv("XMC_SCREENSHOT_DIR"); !keep.isEmpty()) {
      window.resize(1400, 900);
      dialog.set_axes({xmc::parse_sweep_axis("lr=0.001, 0.003"), xmc::parse_sweep_axis("temperature=0.05,0.1")});
      dialog.show();
      QCoreApplication::processEvents();
      dialog.grab().save(QString(keep) + "/sweep-dialog.png");
      runs->select_run(info.points[0].run);
      auto* tabs = window.findChild<QTabWidget*>();
      tabs->setCurrentIndex(tabs->count() - 1);
      QCoreApplication::processEvents();
      window.save_screenshot(QString(keep) + "/sweep-runs.png");
    }
  }

  void aStoredRunWhoseEmbeddingsCollapsedSaysSoWhenShown() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    xmc::app::WorkbenchOptions options;
    options.db = dir.filePath("runs.sqlite");
    std::int64_t collapsed = 0, healthy = 0;
    {
      xmc::RunStore raw(options.db.toStdString());
      collapsed = raw.create_run({.name = "collapsed", .config_json = R"({"method":"dexml"})"});
      raw.add_scalars(collapsed, {{10, 1.0, "loss", 0.5, 0}, {10, 1.0, "score_spread", 0.0008, 0}, {10, 1.0, "score_mean", 0.9995, 0}});
      raw.set_status(collapsed, xmc::RunStatus::Stopped);
      healthy = raw.create_run({.name = "healthy", .config_json = R"({"method":"dexml"})"});
      raw.add_scalars(healthy, {{10, 1.0, "loss", 0.5, 0}, {10, 1.0, "score_spread", 0.12, 0}, {10, 1.0, "score_mean", 0.31, 0}});
      raw.set_status(healthy, xmc::RunStatus::Stopped);
    }
    xmc::app::MainWindow window(options);
    window.show();
    window.show_run(collapsed);
    auto* warning = window.findChild<QLabel*>("collapse_warning");
    QVERIFY(warning);
    QVERIFY(warning->isVisibleTo(&window));
    QVERIFY2(warning->text().contains("embeddings collapsed at epoch 1.00"), qPrintable(warning->text()));
    window.show_run(healthy);
    QVERIFY(!warning->isVisibleTo(&window));
  }

  void liveTabFollowsARunAnotherProcessWrites() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    xmc::app::WorkbenchOptions options;
    options.db = dir.filePath("runs.sqlite");
    // The "other process" writes through its own connection, as `xmc train` on a server would (the
    // store itself: the Session records runs only by training them).
    xmc::RunStore writer(options.db.toStdString());
    const auto run = writer.create_run({.name = "remote"});
    writer.set_status(run, xmc::RunStatus::Running);
    writer.add_scalars(run, {{1, 0.1, "loss", 1.0, 1.0}});
    xmc::app::MainWindow window(options);
    window.show_run(run);
    auto* loss = window.findChild<xmc::gui::LossPlot*>();
    auto* metrics = window.findChild<xmc::gui::MetricPlot*>("live_metrics");
    QVERIFY(metrics);
    QCOMPARE(loss->point_count(), std::size_t{1});
    writer.add_scalars(run, {{2, 0.2, "loss", 0.8, 2.0}, {3, 0.3, "loss", 0.7, 3.0}});
    writer.add_evaluation(run, 1.0, 3, {{"P@1", 0.3}, {"P@5", 0.2}});
    QTRY_COMPARE_WITH_TIMEOUT(loss->point_count(), std::size_t{3}, 10000);
    QTRY_VERIFY_WITH_TIMEOUT(metrics->metric_names().contains("P@1"), 10000);
    // The bars follow too (they froze at the epoch the run was opened at): 4.37 of the default 10 epochs is
    // 37 % into the 5th.
    writer.add_scalars(run, {{40, 4.37, "loss", 0.5, 4.0}});
    auto* progress = window.findChild<xmc::gui::TrainingProgress*>();
    QTRY_COMPARE_WITH_TIMEOUT(progress->run_text(), QStringLiteral("running — epoch 4.37 of 10"), 10000);
    QCOMPARE(progress->steps_text(), QStringLiteral("epoch 5/10 — 37 %"));
    QVERIFY2(progress->work_text().contains("another process"), qPrintable(progress->work_text()));
  }

  void scriptedLineTrainsAndLeavesScreenshots() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    write_keyword_dataset(dir.filePath("data").toStdString());
    QFile config(dir.filePath("tiny.json"));
    QVERIFY(config.open(QIODevice::WriteOnly));
    config.write(R"({"method": "dexml", "encoder": {"type": "bow", "dim": 16}, "batch_size": 16, "epochs": 2,
                    "lr": 0.02, "eval": {"k": [1, 3, 5], "top": 8}})");
    config.close();
    // The screenshot's folder does not exist yet: the workbench makes it.
    const QString shot = dir.filePath("shots/s.png");
    const Result r = run_workbench({"--db", dir.filePath("runs.sqlite"), "--dataset", dir.filePath("data"), "--config",
                                    config.fileName(), "--autostart", "--screenshot", shot, "--quit-when-done"});
    QVERIFY2(r.finished, "the scripted workbench did not quit");
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    for (const QString& png : {shot, dir.filePath("shots/s-first-evaluation.png")}) {
      const QImage image(png);
      QVERIFY2(!image.isNull() && image.width() >= 800, qPrintable(png));
    }
    const xmc::Session store(dir.filePath("runs.sqlite").toStdString());
    QCOMPARE(store.list_runs().size(), std::size_t{1});
    QCOMPARE(store.list_runs().front().status, xmc::RunStatus::Completed);
  }

  // A storage fault in the middle of a run (here a file-size limit the checkpoint runs into): the workbench says
  // so on the Live tab and on stderr, stores the run as failed, and exits cleanly; nothing is lost or aborted.
  void aRunThatCannotWriteItsCheckpointFailsWithTheCauseOnTheLiveTab() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    write_keyword_dataset(dir.filePath("data").toStdString());
    QFile config(dir.filePath("wide.json"));
    QVERIFY(config.open(QIODevice::WriteOnly));
    // d = 1024: the residual block alone is 4 MB, its checkpoint with AdamW's moments about 12 MB.
    config.write(R"({"method": "dexml", "encoder": {"type": "bow", "dim": 1024}, "batch_size": 16, "epochs": 1,
                    "lr": 0.02, "threads": 1, "eval": {"k": [1, 3], "top": 8}})");
    config.close();
    const QString shot = dir.filePath("failed.png");
    QProcess process;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("QT_QPA_PLATFORM", "offscreen");
    process.setProcessEnvironment(env);
    process.setChildProcessModifier([] {
      rlimit limit{4 << 20, 4 << 20};  // 4 MB a file: the store and the screenshot fit, the checkpoint does not
      ::setrlimit(RLIMIT_FSIZE, &limit);
    });
    process.start(XMC_WORKBENCH_BINARY, {"--db", dir.filePath("runs.sqlite"), "--dataset", dir.filePath("data"), "--config", config.fileName(),
                                         "--autostart", "--screenshot", shot, "--quit-when-done"});
    QVERIFY(process.waitForFinished(120000));
    const QString err = QString::fromLocal8Bit(process.readAllStandardError());
    QCOMPARE(process.exitStatus(), QProcess::NormalExit);  // not killed by SIGXFSZ, not aborted
    QCOMPARE(process.exitCode(), 1);
    QVERIFY2(err.contains("checkpoint.pt: cannot write the checkpoint: File too large"), qPrintable(err));
    QVERIFY2(!QImage(shot).isNull(), "no screenshot of the failed run");
    if (const QByteArray keep = qgetenv("XMC_SCREENSHOT_DIR"); !keep.isEmpty()) QFile::copy(shot, QString::fromUtf8(keep) + "/live-failed-run.png");
    const xmc::Session store(dir.filePath("runs.sqlite").toStdString());
    QCOMPARE(store.list_runs().size(), std::size_t{1});
    QCOMPARE(store.list_runs().front().status, xmc::RunStatus::Failed);
  }

  void scriptedErrorsGoToStderrInsteadOfADialog() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    // A config file that is not there, and a dataset folder that is not there: exit code 2 and the name.
    Result r = run_workbench({"--db", dir.filePath("runs.sqlite"), "--config", dir.filePath("missing.json"), "--autostart",
                              "--quit-when-done"});
    QVERIFY2(r.finished, "the workbench waited for a dialog");
    QCOMPARE(r.exit_code, 2);
    QVERIFY2(r.err.contains("missing.json"), qPrintable(r.err));
    r = run_workbench({"--db", dir.filePath("runs.sqlite"), "--dataset", dir.filePath("nope"), "--autostart", "--quit-when-done"});
    QVERIFY2(r.finished, "the workbench waited for a dialog");
    QCOMPARE(r.exit_code, 2);
    QVERIFY2(r.err.contains("nope"), qPrintable(r.err));
    QVERIFY(xmc::Session(dir.filePath("runs.sqlite").toStdString()).list_runs().empty());  // nothing half-started
  }

  // A file dialog in the store's folder used to open runs.sqlite (to choose its icon) and so drop every
  // POSIX lock SQLite held on it; an `xmc train` exiting then deleted the -wal/-shm files under the open
  // workbench ("disk I/O error", stale rows). The workbench's dialogs read names only, and it keeps working.
  void fileDialogsKeepTheStoreLockedWhileAnotherProcessTrains() {
    QTemporaryDir dir;
    const std::filesystem::path data = dir.filePath("data").toStdString();
    write_keyword_dataset(data);
    const QString db = dir.filePath("runs.sqlite");
    const QString train = QString(XMC_CLI_PATH) + " train --db " + db + " --set dataset=" + QString::fromStdString(data.string()) +
                          " --set encoder.dim=8 --set epochs=1 --set threads=1 --set eval.every=0";
    QCOMPARE(QProcess::execute("sh", {"-c", train + " >/dev/null 2>&1"}), 0);
    xmc::app::WorkbenchOptions options;
    options.db = db;
    xmc::app::MainWindow window(options);
    auto* runs = window.findChild<xmc::gui::RunsBrowser*>();
    QVERIFY(runs != nullptr);
    QVERIFY(runs->model()->refresh());
    QCOMPARE(runs->model()->rowCount(), 1);
    const int locks_before = posix_locks_held_on(db);
    QVERIFY2(locks_before > 0, "the open store should hold SQLite's shared lock");

    // Open the dialog in the store's folder, let it list (and draw) the files, then cancel it.
    bool listed = false;
    QTimer::singleShot(0, [&] {
      auto* dialog = qobject_cast<QFileDialog*>(QApplication::activeModalWidget());
      if (dialog == nullptr) return;
      auto* model = dialog->findChild<QFileSystemModel*>();
      if (model != nullptr) {
        QSignalSpy loaded(model, &QFileSystemModel::directoryLoaded);
        if (model->rowCount(model->index(dir.path())) == 0) loaded.wait(5000);
        for (int r = 0; r < model->rowCount(model->index(dir.path())); ++r) {
          const QModelIndex index = model->index(r, 0, model->index(dir.path()));
          model->data(index, Qt::DecorationRole);   // the icon
          model->data(model->index(r, 2, model->index(dir.path())), Qt::DisplayRole);  // the type column
          listed = listed || model->fileName(index) == "runs.sqlite";
        }
      }
      dialog->grab();
      dialog->reject();
    });
    xmc::gui::open_file_name(&window, "Run store", dir.path(), "SQLite (*.sqlite)");
    QVERIFY2(listed, "the dialog should have listed runs.sqlite");
    QCOMPARE(posix_locks_held_on(db), locks_before);

    // Another process trains a run to the end and exits; the workbench still reads the store.
    QCOMPARE(QProcess::execute("sh", {"-c", train + " >/dev/null 2>&1"}), 0);
    QVERIFY2(QFileInfo::exists(db + "-wal"), "the exiting trainer must not delete the WAL under the open store");
    QVERIFY2(runs->model()->refresh(), qPrintable(runs->model()->last_error()));
    QCOMPARE(runs->model()->rowCount(), 2);
  }

  // The classic sparse baseline is searched like any run: its one mode ranks by beam search, a dataset query
  // finds its label, and adding a label (which xrlinear cannot rank) is refused without storing it.
  void xrlinearRunsAreSearchedLikeAnyOther() {
    QTemporaryDir dir;
    const std::filesystem::path data = dir.filePath("data").toStdString();
    write_keyword_dataset(data);
    const QString db = dir.filePath("runs.sqlite");
    const QString train = QString(XMC_CLI_PATH) + " train --db " + db + " --set method=xrlinear --set threads=1 --set dataset=" +
                          QString::fromStdString(data.string());
    QCOMPARE(QProcess::execute("sh", {"-c", train + " >/dev/null 2>&1"}), 0);
    // A value the run chose while training (as a fused run chooses its fusion weight) is said beside its modes.
    xmc::RunStore(db.toStdString()).add_scalars(1, {{0, 1.0, "chosen/xrlinear.fusion_weight", 0.85, xmc::RunStore::now_seconds()}});
    xmc::gui::SearchPanel search;
    QSignalSpy loaded(&search, &xmc::gui::SearchPanel::run_loaded);
    search.open_run(db, 1);
    QVERIFY(loaded.wait(60000));
    QCOMPARE(search.modes(), QStringList{"tree"});
    const QString status = search.findChild<QLabel*>("search_status")->text();
    QVERIFY2(status.contains("chosen while training: xrlinear.fusion_weight = 0.85"), qPrintable(status));
    QVERIFY(search_and_wait(&search, "key3 filler1"));
    QVERIFY(search.findChild<QLabel*>("search_status")->text().contains("fusion_weight = 0.85"));  // and after a search
    const QStringList results = search.result_texts("tree");
    QVERIFY(!results.isEmpty());
    QCOMPARE(results.front(), QString("key3 topic"));
    QVERIFY(search.highlighted_count() >= 1);
    try {
      search.add_label("key3 key5 topic");
      QFAIL("xrlinear took a label it has no ranker for");
    } catch (const std::exception& e) {
      QVERIFY2(QString(e.what()).contains("xrlinear cannot take labels"), e.what());
    }
    QVERIFY(xmc::RunStore(db.toStdString()).added_labels(1).empty());
    QVERIFY(search_and_wait(&search, "key5 filler1"));
    QCOMPARE(search.result_texts("tree").front(), QString("key5 topic"));
    if (const QByteArray keep = qgetenv("XMC_SCREENSHOT_DIR"); !keep.isEmpty()) {
      search.resize(1000, 600);
      QVERIFY(search.grab().save(QString(keep) + "/search-xrlinear.png"));
    }

    // The recommended starting point (the nearest training queries, its settings chosen on held-out queries) searches in
    // both its modes.
    QCOMPARE(QProcess::execute("sh", {"-c", train + " --config " XMC_SOURCE_DIR "/datasets/configs/recommended-text.json >/dev/null 2>&1"}), 0);
    xmc::gui::SearchPanel recommended;
    QSignalSpy recommended_loaded(&recommended, &xmc::gui::SearchPanel::run_loaded);
    recommended.open_run(db, 2);
    QVERIFY(recommended_loaded.wait(60000));
    QCOMPARE(recommended.modes(), (QStringList{"tree-knn", "tree"}));
    QVERIFY(search_and_wait(&recommended, "key3 filler1"));
    QVERIFY(!recommended.result_texts("tree-knn").isEmpty());
    QCOMPARE(recommended.result_texts("tree-knn").front(), QString("key3 topic"));
    if (const QByteArray keep = qgetenv("XMC_SCREENSHOT_DIR"); !keep.isEmpty()) {
      recommended.resize(1000, 600);
      QVERIFY(recommended.grab().save(QString(keep) + "/search-xrlinear-recommended.png"));
    }
  }

  // A dataset that lists image files: the Search tab shows a dataset query's pictures under the query line and
  // each ranked label's beside its text.
  void theSearchTabShowsTheImagesADatasetLists() {
    QTemporaryDir dir;
    const std::filesystem::path data = dir.filePath("data").toStdString();
    write_keyword_dataset(data);
    std::filesystem::create_directories(data / "images" / "files");
    QString label_list, query_list;
    for (int l = 0; l < 8; ++l) {
      QImage picture(60, 40, QImage::Format_RGB32);
      picture.fill(QColor::fromHsv(l * 45, 200, 230));
      const QString name = QString("files/label%1.png").arg(l);
      QVERIFY(picture.save(QString::fromStdString((data / "images").string()) + "/" + name));
      label_list += name + "\n";
    }
    for (int i = 0; i < 160; ++i) query_list += QString("files/label%1.png\tfiles/label%2.png\n").arg(i % 8).arg((i / 8) % 8);
    std::ofstream(data / "images" / "lbl_files.txt") << label_list.toStdString();
    std::ofstream(data / "images" / "trn_files.txt") << query_list.toStdString();
    const QString db = dir.filePath("runs.sqlite");
    const QString train = QString(XMC_CLI_PATH) + " train --db " + db + " --set threads=1 --set epochs=3 --set tsne.every=0 --set dataset=" +
                          QString::fromStdString(data.string());
    QCOMPARE(QProcess::execute("sh", {"-c", train + " >/dev/null 2>&1"}), 0);
    xmc::gui::SearchPanel search;
    QSignalSpy loaded(&search, &xmc::gui::SearchPanel::run_loaded);
    search.open_run(db, 1);
    QVERIFY(loaded.wait(60000));
    QVERIFY(search_and_wait(&search, "key3 key2 filler4"));  // training row 19: labels 3 and 2
    const QString images = QString::fromStdString((data / "images" / "files").string());
    QCOMPARE(search.query_image_files(), (QStringList{images + "/label3.png", images + "/label2.png"}));
    QTableView* view = nullptr;  // the mode's table (the compared run's, empty here, is another)
    for (auto* table : search.findChildren<QTableView*>())
      if (table->model()->rowCount() > 0) view = table;
    QVERIFY(view);
    const QModelIndex first_label = view->model()->index(0, xmc::gui::SearchResultsModel::kLabel);
    const auto picture = view->model()->data(first_label, Qt::DecorationRole).value<QPixmap>();
    QVERIFY(!picture.isNull());
    QCOMPARE(picture.width(), xmc::gui::SearchResultsModel::kThumbnailSide);  // 60 x 40 scaled to fit 40 x 40
    // A typed text that is no dataset query has no images.
    QVERIFY(search_and_wait(&search, "key5 filler1 unseen"));
    QVERIFY(search.query_image_files().isEmpty());
    QVERIFY(search_and_wait(&search, "key3 key2 filler4"));
    if (const QByteArray keep = qgetenv("XMC_SCREENSHOT_DIR"); !keep.isEmpty()) {
      search.resize(1000, 600);
      QCoreApplication::processEvents();
      QVERIFY(search.grab().save(QString(keep) + "/search-images.png"));
    }
  }

  void buildsASyntheticDatasetFromTheDatasetsMenu() {
    // The dialog starts from the LF sets' shapes: LF-AmazonTitles-1.3M's counts (the XC repository's).
    xmc::gui::SyntheticDatasetDialog dialog;
    const int big = static_cast<int>(xmc::gui::SyntheticDatasetDialog::shape_names().indexOf("LF-AmazonTitles-1.3M"));
    QVERIFY(big >= 0);
    dialog.choose_shape(big);
    QCOMPARE(dialog.options().labels, std::int64_t{1305265});
    QCOMPARE(dialog.options().train, std::int64_t{2248619});
    QCOMPARE(dialog.options().test, std::int64_t{970237});
    if (const QByteArray keep = qgetenv("XMC_SCREENSHOT_DIR"); !keep.isEmpty()) QVERIFY(dialog.grab().save(QString(keep) + "/synthetic-dialog.png"));
    // A small set, built in the background into a folder the launch form then trains on.
    QTemporaryDir dir;
    xmc::app::WorkbenchOptions options;
    options.db = dir.filePath("runs.sqlite");
    xmc::app::MainWindow window(options);
    QSignalSpy ready(&window, &xmc::app::MainWindow::dataset_ready);
    xmc::SyntheticBuildOptions small;
    small.labels = 300;
    small.train = 500;
    small.test = 120;
    small.topics = 10;
    window.start_synthetic_build(dir.filePath("syn"), small);
    QVERIFY(ready.wait(60000));
    QCOMPARE(window.findChild<xmc::gui::LaunchForm*>()->dataset(), dir.filePath("syn"));
    const auto summary = xmc::Session::summarize_dataset_folder(dir.filePath("syn").toStdString());
    QCOMPARE(summary.num_train, std::int64_t{500});
    QCOMPARE(summary.num_labels, std::int64_t{300});
  }

  void buildsADatasetInTheBackground() {
    if (!QFileInfo::exists("/usr/share/wordnet/data.noun")) QSKIP("wordnet-base is not installed");
    QTemporaryDir dir;
    xmc::app::WorkbenchOptions options;
    options.db = dir.filePath("runs.sqlite");
    xmc::app::MainWindow window(options);
    QSignalSpy ready(&window, &xmc::app::MainWindow::dataset_ready);
    window.start_wordnet_build(dir.filePath("wn"), 300);
    QVERIFY(ready.wait(60000));
    QVERIFY(QFileInfo::exists(dir.filePath("wn/dataset.json")));
    QCOMPARE(window.findChild<xmc::gui::LaunchForm*>()->dataset(), dir.filePath("wn"));
    QCOMPARE(xmc::Session::summarize_dataset_folder(dir.filePath("wn").toStdString()).num_train, 210);
  }
};

QTEST_MAIN(WorkbenchTest)
#include "workbench_test.moc"
