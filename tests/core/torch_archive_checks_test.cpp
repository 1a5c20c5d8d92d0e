// What a LibTorch archive must look like before LibTorch parses it: every entry's bytes against its CRC-32, the
// deflated ones inflated first; its module code declarations only; its pickles of a sound stack shape. Inputs
// written by hand after what LibTorch 1.13 writes (and the damage that crashed it when it was not checked).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "engine/core/archive_module_code.h"
#include "engine/core/error.h"
#include "engine/core/pickle_shape.h"
#include "engine/core/zip_integrity.h"
#include "tests/support/test_support.h"

namespace xmc {
namespace {

using Code = std::vector<std::pair<std::string, std::string>>;

const Code kWritten = {
    {"archive/code/__torch__.py",
     "class Module(Module):\n  __parameters__ = [\"step\", ]\n  __buffers__ = []\n  step : Tensor\n  model : __torch__.___torch_mangle_0.Module\n"
     "  optimizer : __torch__.___torch_mangle_1.Module\n"},
    {"archive/code/__torch__/___torch_mangle_0.py",
     "class Module(Module):\n  __parameters__ = []\n  __buffers__ = [\"idf\", ]\n  idf : Tensor\n  pytorch_version : str\n  step : int\n"
     "  betas : Tuple[float, float]\n  maybe : Optional[Tensor]\n"},
    {"archive/code/__torch__/___torch_mangle_1.py",
     "class Module(Module):\n  __parameters__ = []\n  __buffers__ = []\n  __annotations__ = []\n"
     "  __annotations__[\"0x5616d5878690\"] = __torch__.___torch_mangle_0.Module\n"},
};

std::string refusal(const Code& code) {
  try {
    check_archive_module_code("ckpt.pt", code);
  } catch (const InputError& e) {
    return e.what();
  }
  return {};
}

Code with_line(std::size_t entry, const std::string& from, const std::string& to) {
  Code code = kWritten;
  const auto at = code[entry].second.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  code[entry].second.replace(at, from.size(), to);
  return code;
}

TEST(ArchiveModuleCode, DeclarationsAsLibTorchWritesThemPass) {
  EXPECT_EQ(refusal(kWritten), "");
  EXPECT_TRUE(is_archive_module_code("archive/code/__torch__/___torch_mangle_3.py"));
  EXPECT_FALSE(is_archive_module_code("archive/code/__torch__/___torch_mangle_3.py.debug_pkl"));
  EXPECT_FALSE(is_archive_module_code("archive/data.pkl"));
}

TEST(ArchiveModuleCode, DamageIsRefusedByEntryAndLine) {
  // The line that crashed LibTorch 1.13's importer: a misspelt __buffers__.
  const std::string misspelt = refusal(with_line(1, "__buffers__ = [", "__b5ffers__ = ["));
  EXPECT_NE(misspelt.find("ckpt.pt: is damaged: its module code archive/code/__torch__/___torch_mangle_0.py line 3: not a `name : Type` declaration"),
            std::string::npos) << misspelt;
  EXPECT_NE(refusal(with_line(1, "[\"idf\", ]", "[\"idx\", ]")).find("\"idx\" is listed but not declared as a tensor"), std::string::npos);
  EXPECT_NE(refusal(with_line(0, "[\"step\", ]", "[\"model\", ]")).find("\"model\" is listed but not declared as a tensor"), std::string::npos);
  EXPECT_NE(refusal(with_line(0, "___torch_mangle_1.Module\n", "___torch_mangle_7.Module\n")).find("names class __torch__.___torch_mangle_7.Module, which no code entry defines"),
            std::string::npos);
  EXPECT_NE(refusal(with_line(1, "  step : int\n", "  def forward(self, x):\n    return x\n")).find("line 6: not a `name : Type` declaration"), std::string::npos);
  EXPECT_NE(refusal(with_line(1, "Tuple[float, float]", "Tuple[float, float")).find("is not a type such an archive declares"), std::string::npos);
  EXPECT_NE(refusal(with_line(1, "  idf : Tensor", "\tidf : Tensor")).find("line 4: a line outside a class or not indented by two spaces"), std::string::npos);
  EXPECT_NE(refusal(with_line(1, "  __buffers__ = [\"idf\", ]\n", "")).find("line 1: a class without its __parameters__ or __buffers__ list"), std::string::npos);
  EXPECT_NE(refusal(with_line(1, "  step : int\n", "  step : int\n  step : int\n")).find("\"step\" is declared twice"), std::string::npos);
  EXPECT_NE(refusal(with_line(0, "class Module(Module):", "class Module(object):")).find("line 1: not a `class Name(Module):` line"), std::string::npos);
}

std::string pickle_refusal(const std::string& bytes) {
  try {
    check_pickle_shape("ckpt.pt", "archive/data.pkl", bytes);
  } catch (const InputError& e) {
    return e.what();
  }
  return {};
}

TEST(PickleShape, PicklesAsLibTorchWritesThemPass) {
  EXPECT_EQ(pickle_refusal(std::string("\x80\x02).", 4)), "");  // constants.pkl: an empty tuple
  // {"a": 1, "b": (2, True)} with a memo put and get: PROTO 2, EMPTY_DICT, BINPUT 0, MARK, "a", 1, "b", MARK, 2, TRUE,
  // TUPLE, SETITEMS, BINGET 0 ... as a tuple of the dict twice.
  const std::string dict = std::string("\x80\x02}q\x00(X\x01\x00\x00\x00" "aK\x01X\x01\x00\x00\x00" "b(K\x02\x88tuh\x00\x86.", 30);
  EXPECT_EQ(pickle_refusal(dict), "");
}

TEST(PickleShape, ABrokenStackIsRefusedWhereItBreaks) {
  // The constants.pkl that crashed LibTorch 1.13's unpickler: REDUCE on an empty stack.
  EXPECT_EQ(pickle_refusal(std::string("\x80\x02RK", 4)), "ckpt.pt: is damaged: its pickle archive/data.pkl at byte 2: REDUCE pops more than the stack holds");
  EXPECT_NE(pickle_refusal(std::string("\x80\x02h\x05.", 5)).find("BINGET of nothing stored"), std::string::npos);
  EXPECT_NE(pickle_refusal(std::string("\x80\x02).)", 5)).find("bytes after STOP"), std::string::npos);
  EXPECT_NE(pickle_refusal(std::string("\x80\x02)", 3)).find("no STOP"), std::string::npos);
  EXPECT_NE(pickle_refusal(std::string("\x80\x02))..", 6)).find("STOP with other than one value"), std::string::npos);
  EXPECT_NE(pickle_refusal(std::string("\x80\x02i.", 4)).find("opcode 0x69 is not one LibTorch writes"), std::string::npos);
  EXPECT_NE(pickle_refusal(std::string("\x80\x02X\xff\x00\x00\x00" "ab.", 10)).find("an argument runs past the end"), std::string::npos);
  EXPECT_NE(pickle_refusal(std::string("\x80\x02(t\x86.", 6)).find("TUPLE2 pops more than the stack holds"), std::string::npos);
  EXPECT_NE(pickle_refusal(std::string("\x80\x02)(b.", 6)).find("BUILD pops a mark"), std::string::npos);
  EXPECT_NE(pickle_refusal(std::string("\x80\x02}(K\x01u.", 8)).find("SETITEMS of an odd number of items"), std::string::npos);
  EXPECT_NE(pickle_refusal("3\n").find("no PROTO opcode first"), std::string::npos);
}

TEST(PickleShape, StorageRecordsAreReportedAndMemoIdsKeepTheirOrder) {
  // A tensor's persistent id as LibTorch pickles it: ("storage", torch.FloatStorage, "0", "cpu", 16).
  const std::string storage = std::string("\x80\x02(X\x07\x00\x00\x00storagectorch\nFloatStorage\nX\x01\x00\x00\x00" "0X\x03\x00\x00\x00" "cpuK\x10tQ.", 54);
  const std::vector<PickledStorage> storages = check_pickle_shape("ckpt.pt", "archive/data.pkl", storage);
  ASSERT_EQ(storages.size(), 1u);
  EXPECT_EQ(storages[0].key, "0");
  EXPECT_EQ(storages[0].type, "FloatStorage");
  EXPECT_EQ(storages[0].numel, 16u);
  EXPECT_EQ(storages[0].element_bytes(), 4u);
  // The same with its key a path, its count negative, or not a storage record at all.
  std::string up = storage;
  up.replace(up.find("X\x01\x00\x00\x00" "0"), 6, std::string("X\x02\x00\x00\x00..", 7));
  EXPECT_NE(pickle_refusal(up).find("a storage key \"..\" that is not a record name"), std::string::npos) << pickle_refusal(up);
  std::string negative = storage;
  negative.replace(negative.find("K\x10"), 2, std::string("J\xff\xff\xff\xff", 5));
  EXPECT_NE(pickle_refusal(negative).find("a storage of -1 elements"), std::string::npos) << pickle_refusal(negative);
  EXPECT_NE(pickle_refusal(std::string("\x80\x02K\x01Q.", 6)).find("a persistent id that is not a storage record"), std::string::npos);
  // A memo id LibTorch never writes (it numbers from 0): its reader would size a table of 2^32 values.
  EXPECT_NE(pickle_refusal(std::string("\x80\x02)r\xff\xff\xff\xff.", 9)).find("LONG_BINPUT of memo id 4294967295 past the 0 stored"), std::string::npos);
  EXPECT_EQ(pickle_refusal(std::string("\x80\x02)q\x00q\x00.", 8)), "");  // stored again under its own id
}

TEST(ZipEntries, DeflatedEntriesAreInflatedAndChecked) {
  const auto fixture = std::filesystem::path(XMC_TEST_FIXTURES) / "zip" / "deflated.zip";  // a stored and a deflated entry
  std::vector<std::pair<std::string, std::string>> kept;
  EXPECT_EQ(verify_zip_entries(fixture, is_archive_module_code, kept), 2);
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(kept[0].first, "archive/code/__torch__.py");
  EXPECT_EQ(kept[0].second.size(), 8u * 91u);  // the text, inflated: 8 copies of a 91-byte class
  EXPECT_EQ(kept[0].second.substr(0, 22), "class Module(Module):\n");
  // A byte changed in the deflated data: it no longer inflates to the bytes its CRC-32 was taken of.
  std::string bytes;
  {
    std::ifstream in(fixture, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  const std::size_t name = bytes.find("archive/code/__torch__.py");
  ASSERT_NE(name, std::string::npos);
  const std::size_t header = name - 30;
  const std::size_t data = header + 30 + static_cast<unsigned char>(bytes[header + 26]) + static_cast<unsigned char>(bytes[header + 28]);
  test::TempDir dir;
  for (const std::size_t offset : {std::size_t{0}, std::size_t{7}, std::size_t{20}}) {
    std::string damaged = bytes;
    damaged[data + offset] = static_cast<char>(damaged[data + offset] ^ 0x10);
    const auto path = dir / "damaged.zip";
    std::ofstream(path, std::ios::binary | std::ios::trunc) << damaged;
    try {
      verify_zip_entries(path);
      ADD_FAILURE() << "a changed deflated byte at " << offset << " was accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("is damaged: entry archive/code/__torch__.py"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace xmc
