// The command line's progress lines, as a user reads them in a log: counts, rates and durations.
#include "engine/cli/terminal_progress.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <thread>

namespace xmc::cli {
namespace {

TEST(TerminalProgress, RatesBelowOneASecondSayHowLongEachTakes) {
  EXPECT_EQ(compact_rate(0.4), "1 per 2.5 s");  // a 2.5 s training step (it read "0/s")
  EXPECT_EQ(compact_rate(0.1), "1 per 10.0 s");
  EXPECT_EQ(compact_rate(2.5), "2.5/s");
  EXPECT_EQ(compact_rate(59), "59/s");
  EXPECT_EQ(compact_rate(12345), "12.3k/s");
  EXPECT_EQ(compact_rate(0), "");  // nothing done yet: no rate
}

TEST(TerminalProgress, ALogLineOfSlowStepsGivesTheTimeOfAStep) {
  std::FILE* out = std::tmpfile();
  ASSERT_NE(out, nullptr);
  {
    TerminalProgress progress(out);  // not a terminal: plain lines
    progress.start("epoch 3/3", 76);
    std::this_thread::sleep_for(std::chrono::milliseconds(1200));
    progress.update(1);
    progress.finish();
  }
  std::rewind(out);
  std::string text(4096, '\0');
  text.resize(std::fread(text.data(), 1, text.size(), out));
  std::fclose(out);
  EXPECT_NE(text.find("epoch 3/3 ...\n"), std::string::npos) << text;
  EXPECT_NE(text.find("1/76, 1 per 1."), std::string::npos) << text;  // about 1.2 s a step
  EXPECT_EQ(text.find("0/s"), std::string::npos) << text;
}

}  // namespace
}  // namespace xmc::cli
