// When a run writes checkpoints besides the ones every run writes: by epochs, steps and minutes, and a
// time-placed one waiting for a step at which deferred table rows are brought up to date anyway.
#include "engine/method/checkpoint_policy.h"

#include <gtest/gtest.h>

namespace xmc {
namespace {

using Clock = CheckpointPolicy::Clock;
using std::chrono::minutes;
using std::chrono::seconds;

TEST(CheckpointPolicy, EveryStepsCountsFromTheLastCheckpoint) {
  CheckpointPolicy policy({.every_epochs = 0, .every_steps = 3, .every_minutes = 0});
  const Clock::time_point start{};
  policy.written_at(10, start);
  EXPECT_FALSE(policy.due_within_epoch(10, false, false, start));  // just written
  EXPECT_FALSE(policy.due_within_epoch(12, false, false, start));
  EXPECT_TRUE(policy.due_within_epoch(13, false, false, start));
  policy.written_at(13, start);
  EXPECT_FALSE(policy.due_within_epoch(15, false, false, start));
  EXPECT_TRUE(policy.due_within_epoch(16, false, false, start));
}

TEST(CheckpointPolicy, EveryMinutesWaitsForARowSyncWhenRowsAreDeferred) {
  CheckpointPolicy policy({.every_epochs = 0, .every_steps = 0, .every_minutes = 5});
  const Clock::time_point start{};
  policy.written_at(0, start);
  EXPECT_FALSE(policy.due_within_epoch(4, false, false, start + minutes(4)));
  EXPECT_TRUE(policy.due_within_epoch(4, false, false, start + minutes(5)));
  // Deferred rows: five minutes have passed, but only a step that syncs the rows takes the checkpoint.
  EXPECT_FALSE(policy.due_within_epoch(4, true, false, start + minutes(6)));
  EXPECT_TRUE(policy.due_within_epoch(8, true, true, start + minutes(6)));
  // A step-placed checkpoint never waits.
  CheckpointPolicy by_steps({.every_epochs = 0, .every_steps = 2, .every_minutes = 5});
  by_steps.written_at(0, start);
  EXPECT_TRUE(by_steps.due_within_epoch(2, true, false, start + seconds(1)));
}

TEST(CheckpointPolicy, EveryEpochsSkipsAStagesLastEpoch) {
  CheckpointPolicy policy({.every_epochs = 2, .every_steps = 0, .every_minutes = 0});
  EXPECT_FALSE(policy.due_after_epoch(1, false));
  EXPECT_TRUE(policy.due_after_epoch(2, false));
  EXPECT_FALSE(policy.due_after_epoch(4, true));  // the stage's end writes one anyway
  CheckpointPolicy only_at_end({.every_epochs = 0, .every_steps = 0, .every_minutes = 0});
  EXPECT_FALSE(only_at_end.due_after_epoch(1, false));
  EXPECT_FALSE(only_at_end.due_within_epoch(100, false, false, Clock::time_point{} + minutes(600)));
}

}  // namespace
}  // namespace xmc
