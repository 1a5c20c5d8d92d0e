// The training progress header as a user reads it: which bar a task lands on, the counts and the ETA
// each bar shows, and the whole run's ETA from the pace of its epochs.
#include <QtTest>

#include "widgets/live/training_progress.h"

using xmc::gui::TrainingProgress;

class ProgressTest : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void eta_is_written_in_hours_minutes_and_seconds() {
    QCOMPARE(TrainingProgress::format_eta(12.4), QStringLiteral("ETA 12 s"));
    QCOMPARE(TrainingProgress::format_eta(75), QStringLiteral("ETA 1 min 15 s"));
    QCOMPARE(TrainingProgress::format_eta(3725), QStringLiteral("ETA 1 h 02 min"));
    QCOMPARE(TrainingProgress::format_eta(-1), QString());  // unknown
  }

  void steps_and_other_work_get_their_own_bars() {
    TrainingProgress progress;
    progress.begin_run(2);
    progress.on_task(QStringLiteral("epoch 1/2"), 5, 10, 12.3);
    QCOMPARE(progress.steps_text(), QStringLiteral("epoch 1/2 — 5/10"));
    QCOMPARE(progress.steps_eta(), QStringLiteral("ETA 12 s"));

    // Evaluation and index building go to the other bar and leave the epoch's steps as they were.
    progress.on_task(QStringLiteral("evaluation: ranking test queries"), 2048, 6000, 75);
    QCOMPARE(progress.work_text(), QStringLiteral("evaluation: ranking test queries — 2048/6000"));
    QCOMPARE(progress.work_eta(), QStringLiteral("ETA 1 min 15 s"));
    QCOMPARE(progress.steps_text(), QStringLiteral("epoch 1/2 — 5/10"));
    progress.on_task_finished(QStringLiteral("evaluation: ranking test queries"));
    QCOMPARE(progress.work_text(), QStringLiteral("done: evaluation: ranking test queries"));
    QCOMPARE(progress.work_eta(), QString());

    progress.on_task(QStringLiteral("hard-negative shortlists (exact top-100)"), 0, 500, -1);
    QCOMPARE(progress.work_text(), QStringLiteral("hard-negative shortlists (exact top-100) — 0/500"));
    QCOMPARE(progress.work_eta(), QString());  // not known before the first chunk
    progress.on_task(QStringLiteral("M4 epoch 1/3"), 7, 7, 0);
    QCOMPARE(progress.steps_text(), QStringLiteral("M4 epoch 1/3 — 7/7"));
  }

  void run_eta_follows_the_pace_since_the_first_step() {
    TrainingProgress progress;
    progress.begin_run(4);
    progress.on_epoch_position(0.5);
    QCOMPARE(progress.run_text(), QStringLiteral("epoch 0.50 of 4"));
    QCOMPARE(progress.run_eta(), QString());  // one point gives no pace yet
    QTest::qWait(1200);
    progress.on_epoch_position(1.0);
    // Half an epoch took at least 1.2 s, so the 3 epochs left take at least 7.2 s.
    const QString eta = progress.run_eta();
    QVERIFY2(eta.startsWith(QStringLiteral("ETA ")), qPrintable(eta));
    const QString seconds = eta.mid(4).chopped(2);
    bool ok = false;
    const int value = eta.contains(QStringLiteral("min")) ? 60 : seconds.toInt(&ok);
    QVERIFY2(eta.contains(QStringLiteral("min")) || ok, qPrintable(eta));
    QVERIFY2(value >= 7, qPrintable(eta));
    progress.end_run(QStringLiteral("stopped"));
    QCOMPARE(progress.run_text(), QStringLiteral("run stopped — epoch 1.00 of 4"));
    QCOMPARE(progress.run_eta(), QString());
  }

  void rapid_steps_redraw_a_few_times_a_second_and_end_on_the_last() {
    TrainingProgress progress;
    progress.begin_run(2);
    progress.on_epoch_position(0.01);
    for (int i = 2; i <= 100; ++i) progress.on_epoch_position(i / 100.0);  // microseconds apart
    QCOMPARE(progress.run_text(), QStringLiteral("epoch 0.01 of 2"));  // drawn again only after 250 ms
    progress.end_run(QStringLiteral("completed"));
    QCOMPARE(progress.run_text(), QStringLiteral("run completed — epoch 1.00 of 2"));
  }

  void a_paused_run_shows_no_eta_and_its_pause_is_left_out_of_the_pace() {
    TrainingProgress progress;
    progress.begin_run(4);
    progress.on_epoch_position(0.5);
    QTest::qWait(800);
    progress.on_epoch_position(1.0);
    progress.on_task(QStringLiteral("epoch 2/4"), 1, 10, 20);
    progress.set_paused(true);
    QCOMPARE(progress.run_text(), QStringLiteral("paused — epoch 1.00 of 4"));
    QCOMPARE(progress.run_eta(), QString());
    QCOMPARE(progress.steps_eta(), QString());
    progress.on_task(QStringLiteral("epoch 2/4"), 2, 10, 18);  // a step that ends as the pause begins
    QCOMPARE(progress.steps_eta(), QString());
    QTest::qWait(3000);  // paused far longer than training took
    progress.set_paused(false);
    QTest::qWait(400);
    progress.on_epoch_position(1.5);
    // One epoch in ~1.2 s of training: the 2.5 epochs left take ~3 s. Counting the 3 s pause would give ~9 s.
    const QString eta = progress.run_eta();
    QVERIFY2(eta.startsWith(QStringLiteral("ETA ")) && eta.endsWith(QStringLiteral(" s")) && !eta.contains(QStringLiteral("min")), qPrintable(eta));
    const int seconds = eta.mid(4).chopped(2).toInt();
    QVERIFY2(seconds >= 2 && seconds <= 6, qPrintable(eta));
    QCOMPARE(progress.run_text(), QStringLiteral("epoch 1.50 of 4"));
  }

  void a_stored_run_says_how_far_it_got_and_how_it_ended() {
    TrainingProgress progress;  // "no run" until something is shown
    QCOMPARE(progress.run_text(), QStringLiteral("no run"));
    progress.show_stored_run(8, 8, QStringLiteral("completed"));
    QCOMPARE(progress.run_text(), QStringLiteral("run completed — epoch 8.00 of 8"));
    progress.show_stored_run(10, 3.25, QStringLiteral("stopped"));
    QCOMPARE(progress.run_text(), QStringLiteral("run stopped — epoch 3.25 of 10"));
    QCOMPARE(progress.run_eta(), QString());
  }

  void a_method_that_fits_its_stages_is_counted_in_stages() {
    TrainingProgress progress;
    progress.set_unit(QStringLiteral("stage"));
    progress.begin_run(2);
    progress.on_epoch_position(1.5);
    QCOMPARE(progress.run_text(), QStringLiteral("stage 1.50 of 2"));
    progress.end_run(QStringLiteral("completed"));
    QCOMPARE(progress.run_text(), QStringLiteral("run completed — stage 1.50 of 2"));
  }
};

QTEST_MAIN(ProgressTest)
#include "progress_test.moc"
