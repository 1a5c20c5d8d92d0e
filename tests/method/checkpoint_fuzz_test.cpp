// The checkpoint loader fed damaged checkpoints whose damage the CRC-32 check cannot see: a real run's
// checkpoint, bytes of its entries changed (the pickled archive structure, the TorchScript code of its
// modules, constants, tensor data), each entry's CRC-32 set to match the changed bytes, then loaded as a resume
// and a prediction load it. The one outcome allowed besides loading is an xmc::Error naming the file; any other
// exception escaping or a crash is a finding. Mutation i draws from seed i (XMC_CHECKPOINT_FUZZ_VERBOSE=1 prints
// each before it is loaded); the checkpoint itself is a fresh run's, and LibTorch names some of its archive
// entries by addresses, so a finding is reproduced from the bytes it printed rather than from the seed alone.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "engine/core/crc32.h"
#include "engine/core/error.h"
#include "engine/method/checkpoint.h"
#include "engine/method/trained_run.h"
#include "engine/model/encoder_options.h"
#include "engine/store/run_files.h"
#include "engine/store/run_store.h"
#include "engine/train/training_run.h"
#include "tests/support/synthetic_dataset.h"
#include "tests/support/test_support.h"

namespace xmc {
namespace {

std::uint32_t le32(const std::string& b, std::size_t at) {
  return static_cast<std::uint32_t>(static_cast<unsigned char>(b[at])) | static_cast<std::uint32_t>(static_cast<unsigned char>(b[at + 1])) << 8 |
         static_cast<std::uint32_t>(static_cast<unsigned char>(b[at + 2])) << 16 |
         static_cast<std::uint32_t>(static_cast<unsigned char>(b[at + 3])) << 24;
}
std::uint16_t le16(const std::string& b, std::size_t at) {
  return static_cast<std::uint16_t>(static_cast<unsigned char>(b[at]) | static_cast<unsigned char>(b[at + 1]) << 8);
}
void put32(std::string& b, std::size_t at, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) b[at + static_cast<std::size_t>(i)] = static_cast<char>((v >> (8 * i)) & 0xFF);
}

/// A stored (uncompressed) entry of a zip archive: where its bytes and its two CRC-32 fields are.
struct ZipEntry {
  std::string name;
  std::size_t data = 0, size = 0;
  std::size_t local_crc = 0, central_crc = 0;
};

/// The stored entries of the archive `bytes`, read from its central directory (the layout LibTorch writes).
std::vector<ZipEntry> stored_entries(const std::string& bytes) {
  std::size_t end = bytes.rfind(std::string("PK\x05\x06", 4));
  if (end == std::string::npos) throw std::runtime_error("no end of central directory");
  const std::uint16_t count = le16(bytes, end + 10);
  std::size_t at = le32(bytes, end + 16);
  std::vector<ZipEntry> entries;
  for (std::uint16_t i = 0; i < count; ++i) {
    if (le32(bytes, at) != 0x02014b50) throw std::runtime_error("bad central directory record");
    const std::uint16_t method = le16(bytes, at + 10);
    const std::uint32_t size = le32(bytes, at + 20);
    const std::uint16_t name_length = le16(bytes, at + 28), extra_length = le16(bytes, at + 30), comment_length = le16(bytes, at + 32);
    const std::uint32_t local = le32(bytes, at + 42);
    ZipEntry e;
    e.name = bytes.substr(at + 46, name_length);
    e.central_crc = at + 16;
    e.local_crc = local + 14;
    e.data = local + 30 + le16(bytes, local + 26) + le16(bytes, local + 28);
    e.size = size;
    if (method == 0 && size != 0xFFFFFFFFu) entries.push_back(e);
    at += 46 + name_length + extra_length + comment_length;
  }
  return entries;
}

/// Changes 1 to 8 bytes (or copies a span over another) inside one entry, then makes its CRC-32s match.
std::string mutate(const std::string& original, const std::vector<ZipEntry>& entries, std::mt19937_64& rng, std::string& what) {
  std::string bytes = original;
  // Mostly the structure: the pickles and the TorchScript code; sometimes tensor data or the version record.
  std::vector<std::size_t> structural, other;
  for (std::size_t i = 0; i < entries.size(); ++i)
    (entries[i].name.find(".pkl") != std::string::npos || entries[i].name.find("code/") != std::string::npos ? structural : other).push_back(i);
  const auto& pool = (!structural.empty() && (other.empty() || rng() % 10 < 7)) ? structural : other;
  const ZipEntry& e = entries[pool[rng() % pool.size()]];
  if (e.size == 0) return bytes;
  static const char kInteresting[] = {'\0', '\xff', '\x80', '\x7f', '(', ')', '.', 'q', 'X', 'K', 'J', 'M', 'N', ']', '}', 't', 'R', 'b', '0', '9', '-', ' '};
  const std::uint64_t kind = rng() % 4;
  if (kind == 3 && e.size > 2) {  // a span copied over another span of the same entry
    const std::size_t length = 1 + rng() % std::min<std::size_t>(16, e.size - 1);
    const std::size_t from = rng() % (e.size - length + 1), to = rng() % (e.size - length + 1);
    std::memmove(&bytes[e.data + to], &original[e.data + from], length);
    what = e.name + ": " + std::to_string(length) + " bytes from " + std::to_string(from) + " copied to " + std::to_string(to);
  } else {
    const std::size_t changes = 1 + rng() % 8;
    what = e.name + ":";
    for (std::size_t c = 0; c < changes; ++c) {
      const std::size_t at = e.data + rng() % e.size;
      if (kind == 0) bytes[at] = static_cast<char>(bytes[at] ^ (1 << (rng() % 8)));
      else if (kind == 1) bytes[at] = static_cast<char>(rng() & 0xFF);
      else bytes[at] = kInteresting[rng() % sizeof kInteresting];
      what += " " + std::to_string(at - e.data);
    }
  }
  const std::uint32_t crc = crc32_update(0, bytes.data() + e.data, e.size);
  put32(bytes, e.local_crc, crc);
  put32(bytes, e.central_crc, crc);
  return bytes;
}

TEST(CheckpointFuzz, DamageTheChecksumsCannotSeeIsRefusedByNameNeverACrash) {
  test::TempDir dir;
  test::write_keyword_dataset(dir / "data", 6, 200, 40);
  TrainConfig config;
  config.dataset = dir / "data";
  config.edit<EncoderOptions>().dim = 16;
  config.batch_size = 32;
  config.epochs = 1;
  config.threads = 1;
  config.eval_every = 0;
  config.tsne_every = 0;
  const auto db = dir / "runs.sqlite";
  TrainingRun run(config, db);
  ASSERT_EQ(run.run().outcome, RunOutcome::Completed);
  const std::filesystem::path checkpoint = checkpoint_file(TrainingRun::run_directory(db, run.run_id()));
  std::string original;
  {
    std::ifstream in(checkpoint, std::ios::binary);
    original.assign(std::istreambuf_iterator<char>(in), {});
  }
  const std::vector<ZipEntry> entries = stored_entries(original);
  ASSERT_GE(entries.size(), 3u);
  TrainedRun trained = load_trained_run(db, run.run_id());
  const std::int64_t labels = static_cast<std::int64_t>(trained.label_texts.size());
  torch::optim::AdamW optimizer(trained.method->module().parameters());
  // As the suite runs: 400 mutations (~10 s); XMC_CHECKPOINT_FUZZ_RUNS=N for a longer search.
  const char* runs_text = std::getenv("XMC_CHECKPOINT_FUZZ_RUNS");
  const int runs = runs_text ? std::max(1, std::atoi(runs_text)) : 400;
  const bool verbose = std::getenv("XMC_CHECKPOINT_FUZZ_VERBOSE") != nullptr;
  int loaded = 0, refused = 0;
  for (int i = 0; i < runs; ++i) {
    std::mt19937_64 rng(static_cast<std::uint64_t>(i));
    std::string what;
    const std::string bytes = mutate(original, entries, rng, what);
    {
      std::ofstream out(checkpoint, std::ios::binary | std::ios::trunc);
      out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    }
    if (verbose) std::cerr << "mutation " << i << ": " << what << std::endl;
    try {
      (void)read_checkpoint_state(checkpoint);
      (void)load_checkpoint(checkpoint, *trained.method, labels);
      (void)load_optimizer_state(checkpoint, optimizer);
      ++loaded;
    } catch (const Error& e) {
      ++refused;
      EXPECT_NE(std::string(e.what()).find(checkpoint.string()), std::string::npos) << "mutation " << i << " (" << what << "): " << e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "mutation " << i << " (" << what << ") escaped as " << typeid(e).name() << ": " << e.what();
    }
  }
  // A storage read as more elements than its record holds: LibTorch would read past the record's bytes.
  {
    const auto pickle = std::find_if(entries.begin(), entries.end(), [](const ZipEntry& e) { return e.name.size() > 9 && e.name.ends_with("/data.pkl"); });
    ASSERT_NE(pickle, entries.end());
    std::string bytes = original;
    // The first storage's location "cpu", its memo put, then its count as one byte (BININT1).
    const std::size_t location = bytes.find(std::string("X\x03\x00\x00\x00" "cpu", 8), pickle->data);
    ASSERT_NE(location, std::string::npos);
    std::size_t count = location + 8;
    if (bytes[count] == 'q') count += 2;
    ASSERT_EQ(bytes[count], 'K');
    ASSERT_LT(count + 1, pickle->data + pickle->size);
    bytes[count + 1] = '\xff';  // 255 elements
    const std::uint32_t crc = crc32_update(0, bytes.data() + pickle->data, pickle->size);
    put32(bytes, pickle->local_crc, crc);
    put32(bytes, pickle->central_crc, crc);
    std::ofstream(checkpoint, std::ios::binary | std::ios::trunc) << bytes;
    try {
      (void)load_checkpoint(checkpoint, *trained.method, labels);
      ADD_FAILURE() << "a storage of 255 elements over a smaller record was loaded";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("elements, but its record holds"), std::string::npos) << e.what();
    }
  }
  // Most damage is seen; some (a changed tensor value, a comment in the code) is not damage a loader can know.
  EXPECT_GT(refused, runs / 4) << loaded << " loaded";
  std::cout << "checkpoint mutations: " << refused << " refused by name, " << loaded << " loaded, of " << runs << std::endl;
}

}  // namespace
}  // namespace xmc
