// Setting tensors aside in a file while an evaluation runs: their memory is freed, and they come back bit for bit
// where they were; a write that fails frees nothing, a read that fails says so.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/train/set_aside_tensors.h"
#include "tests/support/test_support.h"

namespace xmc {
namespace {

/// A float32 matrix, a bfloat16 one and an int32 one (a shortlist), with values that bit errors would change.
std::vector<torch::Tensor> state_like_tensors() {
  torch::manual_seed(3);
  return {torch::randn({300, 17}), torch::randn({40, 8}).to(torch::kBFloat16), torch::randint(-1, 1000, {250, 9}, torch::kInt32)};
}

std::vector<torch::Tensor> copies(const std::vector<torch::Tensor>& tensors) {
  std::vector<torch::Tensor> out;
  for (const torch::Tensor& t : tensors) out.push_back(t.clone());
  return out;
}

std::int64_t bytes_of(const std::vector<torch::Tensor>& tensors) {
  std::int64_t bytes = 0;
  for (const torch::Tensor& t : tensors) bytes += t.numel() * static_cast<std::int64_t>(t.element_size());
  return bytes;
}

}  // namespace

TEST(SetAsideTensors, TheCallersTensorsAreEmptiedAndComeBackBitForBit) {
  test::TempDir dir;
  const std::vector<torch::Tensor> tensors = state_like_tensors();
  const std::vector<torch::Tensor> expected = copies(tensors);
  const std::int64_t bytes = 300 * 17 * 4 + 40 * 8 * 2 + 250 * 9 * 4;
  ASSERT_EQ(SetAsideTensors::set_aside_bytes(tensors), bytes);
  {
    SetAsideTensors aside(tensors, dir / "aside.bin");
    EXPECT_EQ(aside.bytes(), bytes);
    EXPECT_EQ(static_cast<std::int64_t>(std::filesystem::file_size(dir / "aside.bin")), bytes);
    for (const torch::Tensor& t : tensors) {  // the caller's own handles: nothing left in them
      EXPECT_EQ(t.numel(), 0);
      EXPECT_EQ(t.storage().nbytes(), 0U);
    }
    aside.restore();
    EXPECT_FALSE(std::filesystem::exists(dir / "aside.bin"));
  }
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    EXPECT_EQ(tensors[i].sizes(), expected[i].sizes()) << i;
    EXPECT_EQ(tensors[i].scalar_type(), expected[i].scalar_type()) << i;
    EXPECT_TRUE(tensors[i].is_contiguous()) << i;
    EXPECT_TRUE(torch::equal(tensors[i], expected[i])) << i;
  }
  // Set aside twice over: the first time left nothing behind that the second would trip on.
  SetAsideTensors again(tensors, dir / "aside.bin");
  again.restore();
  for (std::size_t i = 0; i < tensors.size(); ++i) EXPECT_TRUE(torch::equal(tensors[i], expected[i])) << i;
}

TEST(SetAsideTensors, ViewsSharedStorageAndRepeatsAreLeftOrTakenOnce) {
  test::TempDir dir;
  const torch::Tensor base = torch::arange(1000, torch::kFloat32).view({100, 10});
  const torch::Tensor rows = base.narrow(0, 10, 20);          // a view: its storage is the base's
  const torch::Tensor columns = base.narrow(1, 0, 5);         // not contiguous either
  const torch::Tensor alone = torch::arange(64, torch::kInt64);
  const torch::Tensor undefined;
  // `base` has views alive, so it is not taken either: freeing it would free nothing, and reading it back into
  // storage of its own would part it from them.
  const std::vector<torch::Tensor> given{base, rows, columns, alone, alone, undefined, torch::empty({0})};
  ASSERT_EQ(SetAsideTensors::eligible(given).size(), 1U);
  EXPECT_EQ(SetAsideTensors::set_aside_bytes(given), 64 * 8);
  SetAsideTensors aside(given, dir / "aside.bin");
  EXPECT_EQ(aside.bytes(), 64 * 8);
  EXPECT_EQ(base.numel(), 1000);
  EXPECT_EQ(rows.sum().item<double>(), (100.0 + 299.0) * 200.0 / 2.0);  // 100 ... 299, untouched
  EXPECT_EQ(alone.numel(), 0);
  aside.restore();
  EXPECT_TRUE(torch::equal(alone, torch::arange(64, torch::kInt64)));
}

TEST(SetAsideTensors, AFailedWriteFreesNothingAndNamesTheFile) {
  test::TempDir dir;
  const std::vector<torch::Tensor> tensors = state_like_tensors();
  const std::vector<torch::Tensor> expected = copies(tensors);
  std::filesystem::create_directory(dir / "a folder");  // where the file should be: it cannot be opened for writing
  for (const std::filesystem::path& file : {dir / "missing" / "aside.bin", dir / "a folder"}) {
    try {
      SetAsideTensors aside(tensors, file);
      ADD_FAILURE() << file << ": no error";
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("could not set " + std::to_string(bytes_of(tensors)) + " bytes of training state aside in " + file.string()), std::string::npos)
          << what;
    }
    for (std::size_t i = 0; i < tensors.size(); ++i) EXPECT_TRUE(torch::equal(tensors[i], expected[i])) << file << " " << i;
  }
  EXPECT_TRUE(std::filesystem::is_directory(dir / "a folder"));
}

TEST(SetAsideTensors, AFileCutShortLongerOrGoneIsAnErrorNamingIt) {
  test::TempDir dir;
  const auto file = dir / "aside.bin";
  const auto expect_error = [&](const std::function<void()>& damage, const std::string& said) {
    const std::vector<torch::Tensor> tensors = state_like_tensors();
    SetAsideTensors aside(tensors, file);
    damage();
    try {
      aside.restore();
      ADD_FAILURE() << said << ": no error";
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("could not read the training state set aside during the evaluation back from " + file.string()), std::string::npos) << what;
      EXPECT_NE(what.find(said), std::string::npos) << what;
    }
    EXPECT_EQ(tensors.front().numel(), 0);  // nothing half-read passed off as the state
  };
  const std::int64_t bytes = bytes_of(state_like_tensors());
  expect_error([&] { std::filesystem::resize_file(file, 1000); }, "the file holds 1000 bytes, not the " + std::to_string(bytes) + " written");
  expect_error([&] { std::ofstream(file, std::ios::app) << "x"; }, "the file holds " + std::to_string(bytes + 1) + " bytes, not the " + std::to_string(bytes) + " written");
  expect_error([&] { std::filesystem::remove(file); }, "No such file or directory");
}

TEST(SetAsideTensors, NothingToSetAsideWritesNoFile) {
  test::TempDir dir;
  const torch::Tensor base = torch::ones({4, 4});
  const torch::Tensor view = base.t();
  SetAsideTensors aside({view, torch::Tensor()}, dir / "aside.bin");
  EXPECT_EQ(aside.bytes(), 0);
  EXPECT_FALSE(std::filesystem::exists(dir / "aside.bin"));
  aside.restore();
  EXPECT_EQ(base.sum().item<double>(), 16.0);
}

}  // namespace xmc
