#include "engine/index/index_kind.h"
#include "engine/index/hnsw_index.h"

#include <hnswlib/hnswlib.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <filesystem>
#include <fstream>
#include <limits>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "engine/core/error.h"

namespace xmc {
namespace {

// Runs body(i) for i in [begin, end) on up to `threads` threads, handing out rows in small batches;
// the first exception thrown by any row is rethrown here.
template <typename Body>
void parallel_rows(std::int64_t begin, std::int64_t end, int threads, Body&& body) {
  constexpr std::int64_t kBatch = 16;
  const std::int64_t n = end - begin;
  threads = static_cast<int>(std::min<std::int64_t>(threads, (n + kBatch - 1) / kBatch));
  if (threads <= 1) {
    for (std::int64_t i = begin; i < end; ++i) body(i);
    return;
  }
  std::atomic<std::int64_t> next{begin};
  std::exception_ptr error;
  std::mutex error_mutex;
  auto work = [&] {
    try {
      for (std::int64_t lo; (lo = next.fetch_add(kBatch)) < end;) {
        for (std::int64_t i = lo; i < std::min(lo + kBatch, end); ++i) body(i);
      }
    } catch (...) {
      std::lock_guard lock(error_mutex);
      if (!error) error = std::current_exception();
      next = end;
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (auto& thread : pool) thread.join();
  if (error) std::rethrow_exception(error);
}

// A file in the temporary folder, removed when this goes out of scope. hnswlib saves and loads graphs
// only through file paths, so the graph passes through one on its way into or out of an index file.
class ScratchFile {
 public:
  ScratchFile() {
    static std::atomic<std::uint64_t> counter{0};
    path_ = std::filesystem::temp_directory_path() /
            ("xmc-hnsw-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) + "-" + std::to_string(std::random_device{}()));
  }
  ~ScratchFile() {
    std::error_code ec;
    std::filesystem::remove(path_, ec);
  }
  ScratchFile(const ScratchFile&) = delete;
  ScratchFile& operator=(const ScratchFile&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

/// Copies `bytes` bytes (all of it when `bytes` is -1) from `in` to `out`; false if `in` ends first or `out` fails.
bool copy_bytes(std::istream& in, std::ostream& out, std::int64_t bytes) {
  std::vector<char> buffer(std::size_t{1} << 20);
  const auto chunk = static_cast<std::int64_t>(buffer.size());
  while (bytes != 0) {
    const auto want = static_cast<std::streamsize>(bytes < 0 ? chunk : std::min(bytes, chunk));
    in.read(buffer.data(), want);
    const std::streamsize got = in.gcount();
    out.write(buffer.data(), got);
    if (!out) return false;
    if (bytes > 0) bytes -= got;
    if (got < want) return bytes < 0;  // the end of `in`: fine only when copying all of it
  }
  return true;
}

}  // namespace

struct HnswIndex::Impl {
  HnswIndexOptions options;
  hnswlib::InnerProductSpace space;
  std::unique_ptr<hnswlib::HierarchicalNSW<float>> graph;  // null until the first add
  int threads = 1;

  Impl(std::int64_t dim, HnswIndexOptions o) : options(o), space(static_cast<std::size_t>(dim)) {
    threads = options.num_threads > 0 ? options.num_threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  }
};

HnswIndex::HnswIndex(std::int64_t dim, HnswIndexOptions options) : Index(dim) {
  if (dim <= 0) throw ConfigError("HnswIndex: dim must be > 0, got " + std::to_string(dim));
  if (options.M < 2 || options.ef_construction < 1 || options.ef_search < 1)
    throw ConfigError("HnswIndex: M must be >= 2 and ef_construction, ef_search >= 1");
  impl_ = std::make_unique<Impl>(dim, options);
}

HnswIndex::~HnswIndex() = default;

void HnswIndex::add(std::int64_t n, const float* x) {
  if (n < 0 || (n > 0 && x == nullptr)) throw ConfigError("HnswIndex::add: bad n or null x");
  if (n == 0) return;
  auto& graph = impl_->graph;
  const auto needed = static_cast<std::size_t>(ntotal_ + n);
  if (!graph) {
    graph = std::make_unique<hnswlib::HierarchicalNSW<float>>(
        &impl_->space, needed, static_cast<std::size_t>(impl_->options.M),
        static_cast<std::size_t>(impl_->options.ef_construction), static_cast<std::size_t>(impl_->options.seed));
    graph->setEf(static_cast<std::size_t>(impl_->options.ef_search));
  } else if (needed > graph->max_elements_) {
    graph->resizeIndex(std::max(needed, 2 * graph->max_elements_));
  }
  const std::int64_t first = ntotal_;
  auto add_row = [&](std::int64_t i) { graph->addPoint(x + i * dim_, static_cast<hnswlib::labeltype>(first + i)); };
  std::int64_t begin = 0;
  if (first == 0) add_row(begin++);  // the entry point goes in alone, as hnswlib's own bindings do
  parallel_rows(begin, n, impl_->threads, add_row);
  ntotal_ += n;
}

void HnswIndex::search(std::int64_t n, const float* x, std::int64_t k, float* scores, std::int64_t* labels) const {
  if (n < 0 || k < 0 || (n > 0 && x == nullptr)) throw ConfigError("HnswIndex::search: bad n, k or null x");
  if (n == 0 || k == 0) return;
  const auto& graph = impl_->graph;
  parallel_rows(0, n, impl_->threads, [&](std::int64_t i) {
    float* row_scores = scores + i * k;
    std::int64_t* row_labels = labels + i * k;
    std::int64_t found = 0;
    if (graph) {
      auto heap = graph->searchKnn(x + i * dim_, static_cast<std::size_t>(k));  // worst on top; distance = 1 - <x, y>
      found = static_cast<std::int64_t>(heap.size());
      for (std::int64_t r = found - 1; r >= 0; --r, heap.pop()) {
        row_scores[r] = 1.0f - heap.top().first;
        row_labels[r] = static_cast<std::int64_t>(heap.top().second);
      }
    }
    std::fill(row_scores + found, row_scores + k, -std::numeric_limits<float>::infinity());
    std::fill(row_labels + found, row_labels + k, std::int64_t{-1});
  });
}

void HnswIndex::reset() {
  impl_->graph.reset();
  ntotal_ = 0;
}

void HnswIndex::set_ef_search(std::int64_t ef) {
  if (ef < 1) throw ConfigError("HnswIndex: ef_search must be >= 1");
  impl_->options.ef_search = ef;
  if (impl_->graph) impl_->graph->setEf(static_cast<std::size_t>(ef));
}

void HnswIndex::write(std::ostream& out) const {
  if (!impl_->graph) return;  // nothing added: an empty payload
  ScratchFile scratch;
  impl_->graph->saveIndex(scratch.path().string());
  std::ifstream saved(scratch.path(), std::ios::binary);
  if (!saved || !copy_bytes(saved, out, -1)) throw Error("cannot pass the HNSW graph through " + scratch.path().string() + " (temporary folder full?)");
}

std::unique_ptr<HnswIndex> HnswIndex::read(std::istream& in, std::uint64_t bytes, std::int64_t dim, std::int64_t ntotal, HnswIndexOptions options) {
  auto index = std::make_unique<HnswIndex>(dim, options);
  if (bytes == 0) {
    if (ntotal != 0) throw Error("an empty HNSW payload for " + std::to_string(ntotal) + " vectors");
    return index;
  }
  ScratchFile scratch;
  {
    std::ofstream graph_file(scratch.path(), std::ios::binary);
    if (!graph_file || !copy_bytes(in, graph_file, static_cast<std::int64_t>(bytes)) || !graph_file.flush())
      throw Error("cannot pass the HNSW graph through " + scratch.path().string() + " (payload ends early or temporary folder full)");
  }
  auto& graph = index->impl_->graph;
  try {
    graph = std::make_unique<hnswlib::HierarchicalNSW<float>>(&index->impl_->space, scratch.path().string());
  } catch (const std::exception& e) {
    throw Error(std::string("not a readable HNSW graph: ") + e.what());
  }
  // hnswlib does not check the stored vectors' size against the space it is given.
  const auto stored_vector_bytes = graph->label_offset_ - graph->offsetData_;
  if (stored_vector_bytes != static_cast<std::size_t>(dim) * sizeof(float))
    throw Error("the HNSW graph stores vectors of " + std::to_string(stored_vector_bytes / sizeof(float)) + " floats, not " + std::to_string(dim));
  if (static_cast<std::int64_t>(graph->cur_element_count) != ntotal)
    throw Error("the HNSW graph holds " + std::to_string(graph->cur_element_count) + " vectors, not " + std::to_string(ntotal));
  graph->setEf(static_cast<std::size_t>(options.ef_search));
  index->ntotal_ = ntotal;
  return index;
}

IndexKind hnsw_index_kind() {
  return {.name = "hnsw",
          .syntax = "hnsw[:M=16,ef=128,efc=200]",
          .help = "HNSW graph (hnswlib), approximate; M links per node, ef/efc search/build list sizes",
          .parse = [](const std::string& spec, std::optional<std::string_view> parameters) -> IndexRecipe {
            HnswIndexOptions options;
            if (parameters) {
              parse_index_keys(spec, *parameters, [&](const std::string& key, std::int64_t value) {
                if (key == "M") {
                  if (value < 2) refuse_index_spec(spec, "has M=" + std::to_string(value) + "; an HNSW graph needs M >= 2");
                  options.M = value;
                } else if (key == "ef") {
                  options.ef_search = value;
                } else if (key == "efc") {
                  options.ef_construction = value;
                } else {
                  refuse_index_spec(spec, "has the unknown HNSW key \"" + key + "\" (M, ef, efc)");
                }
              });
            }
            return {.make = [options](std::int64_t dim) -> std::unique_ptr<Index> { return std::make_unique<HnswIndex>(dim, options); },
                    .made_by = [](const Index& index) { return dynamic_cast<const HnswIndex*>(&index) != nullptr; },
                    .read = [options](std::istream& payload, const IndexFileHeader& header) -> std::unique_ptr<Index> {
                      return HnswIndex::read(payload, header.payload_bytes, header.dim, header.ntotal, options);
                    }};
          }};
}

}  // namespace xmc
