#pragma once
// A Progress that records what a computation reports (its tasks, their totals, the updates) and checks that
// tasks open and close in turn; `cancel` makes it ask the computation to stop.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/progress.h"

namespace xmc::test {

class RecordingProgress : public Progress {
 public:
  void start(std::string_view task, std::int64_t total) override {
    EXPECT_FALSE(open);
    open = true;
    tasks.emplace_back(task);
    totals.push_back(total);
  }
  void update(std::int64_t done) override {
    EXPECT_TRUE(open);
    if (totals.back() > 0) {
      EXPECT_LE(done, totals.back());
    }
    ++updates;
  }
  void finish() override {
    EXPECT_TRUE(open);
    open = false;
  }
  bool cancelled() const override { return cancel; }
  std::vector<std::string> tasks;
  std::vector<std::int64_t> totals;
  int updates = 0;
  bool open = false;
  bool cancel = false;
};

}  // namespace xmc::test
