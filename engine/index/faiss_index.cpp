#include "engine/index/faiss_index.h"

#include <faiss/IVFlib.h>
#include <faiss/IndexIVF.h>
#include <faiss/IndexIVFPQ.h>
#include <faiss/IndexPQ.h>
#include <faiss/IndexPreTransform.h>
#include <faiss/impl/FaissException.h>
#include <faiss/impl/io.h>
#include <faiss/index_factory.h>
#include <faiss/index_io.h>

#include <algorithm>
#include <cctype>
#include <istream>
#include <limits>
#include <ostream>

#include "engine/core/error.h"

namespace xmc {
namespace {

// faiss::write_index/read_index speak IOWriter/IOReader; these pass the bytes to and from std streams
// (no copy of the whole index in memory).
struct OstreamWriter final : faiss::IOWriter {
  explicit OstreamWriter(std::ostream& out) : out_(out) { name = "xmc index file"; }
  size_t operator()(const void* ptr, size_t size, size_t nitems) override {
    out_.write(static_cast<const char*>(ptr), static_cast<std::streamsize>(size * nitems));
    return out_ ? nitems : 0;
  }
  std::ostream& out_;
};

struct IstreamReader final : faiss::IOReader {
  IstreamReader(std::istream& in, std::uint64_t bytes) : in_(in), left_(bytes) { name = "xmc index file"; }
  size_t operator()(void* ptr, size_t size, size_t nitems) override {
    if (size == 0) return 0;
    nitems = std::min<std::uint64_t>(nitems, left_ / size);  // never past the payload
    in_.read(static_cast<char*>(ptr), static_cast<std::streamsize>(size * nitems));
    const auto got = static_cast<std::uint64_t>(in_.gcount());
    left_ -= got;
    return static_cast<size_t>(got / size);
  }
  std::istream& in_;
  std::uint64_t left_;
};

/// What FAISS's exceptions say, without their "Error in FUNCTION at FILE:LINE: " prefix.
std::string reason_of(const faiss::FaissException& e) {
  std::string reason = e.msg;
  if (const auto at = reason.find(" at "); reason.starts_with("Error in ") && at != std::string::npos)
    if (const auto colon = reason.find(": ", at); colon != std::string::npos) reason.erase(0, colon + 2);
  while (!reason.empty() && std::isspace(static_cast<unsigned char>(reason.back()))) reason.pop_back();
  return reason;
}

/// The k-means each part of `index` trains: one centroid per inverted list, and per PQ sub-quantizer one per
/// code (2^bits). FAISS refuses fewer training vectors than centroids.
struct TrainingNeeds {
  std::int64_t lists = 0;
  std::int64_t codes = 0;
  std::int64_t least() const { return std::max<std::int64_t>({lists, codes, 1}); }
};

// The IVF-PQ or PQ index inside `index`, through pre-transforms such as OPQ or PCA; null if none.
faiss::IndexIVFPQ* ivfpq_in(faiss::Index* index) { return dynamic_cast<faiss::IndexIVFPQ*>(faiss::ivflib::try_extract_index_ivf(index)); }
faiss::IndexPQ* pq_in(faiss::Index* index) {
  while (auto* pre = dynamic_cast<faiss::IndexPreTransform*>(index)) index = pre->index;
  return dynamic_cast<faiss::IndexPQ*>(index);
}

TrainingNeeds training_needs(faiss::Index* index) {
  TrainingNeeds needs;
  if (const faiss::IndexIVF* ivf = faiss::ivflib::try_extract_index_ivf(index)) needs.lists = static_cast<std::int64_t>(ivf->nlist);
  if (const faiss::IndexIVFPQ* ivfpq = ivfpq_in(index)) needs.codes = static_cast<std::int64_t>(ivfpq->pq.ksub);
  if (const faiss::IndexPQ* pq = pq_in(index)) needs.codes = static_cast<std::int64_t>(pq->pq.ksub);
  return needs;
}

/// What to use instead when `n` vectors are too few to train `index`.
std::string training_advice(faiss::Index* index, std::int64_t n) {
  const TrainingNeeds needs = training_needs(index);
  std::string advice;
  if (needs.lists > n && n / 39 >= 2)  // FAISS wants ~39 training vectors per list
    advice += "use fewer inverted lists, at most IVF" + std::to_string(n / 39) + " for " + std::to_string(n) + " vectors (about 39 per list), ";
  if (needs.codes > n) advice += "use smaller PQ codebooks (PQ<m>x4: 16 codes each), ";
  return advice + "or faiss:Flat, exact or hnsw, which need no training";
}

}  // namespace

FaissIndex::FaissIndex(std::int64_t dim, const std::string& factory, FaissIndexOptions options) : Index(dim), factory_(factory), options_(options) {
  if (dim <= 0 || dim > std::numeric_limits<int>::max()) throw ConfigError("faiss:" + factory + ": dimension must be > 0, got " + std::to_string(dim));
  try {
    index_.reset(faiss::index_factory(static_cast<int>(dim), factory.c_str(), faiss::METRIC_INNER_PRODUCT));
  } catch (const faiss::FaissException& e) {
    throw ConfigError("index: FAISS does not accept the factory string \"" + factory + "\" for dimension " + std::to_string(dim) + " (" + reason_of(e) +
                      "); e.g. faiss:Flat, faiss:IVF256,Flat, faiss:IVF256,PQ16 (PQ<m>: m must divide the dimension)");
  }
  set_nprobe(options_.nprobe);
}

FaissIndex::FaissIndex(std::string factory, std::unique_ptr<faiss::Index> index, FaissIndexOptions options)
    : Index(index->d), factory_(std::move(factory)), index_(std::move(index)), options_(options) {
  ntotal_ = index_->ntotal;
  set_nprobe(options_.nprobe);
}

FaissIndex::~FaissIndex() = default;

void FaissIndex::set_nprobe(std::int64_t nprobe) {
  if (nprobe < 1) throw ConfigError("faiss:" + factory_ + ": nprobe must be >= 1, got " + std::to_string(nprobe));
  options_.nprobe = nprobe;
  if (faiss::IndexIVF* ivf = faiss::ivflib::try_extract_index_ivf(index_.get())) ivf->nprobe = static_cast<std::size_t>(nprobe);
}

bool FaissIndex::is_trained() const { return index_->is_trained; }

void FaissIndex::train(std::int64_t n, const float* x) {
  if (n < 0 || (n > 0 && x == nullptr)) throw ConfigError("FaissIndex::train: bad n or null x");
  if (index_->is_trained) return;
  if (const std::int64_t least = training_needs(index_.get()).least(); n < least)
    throw ConfigError("index: faiss:" + factory_ + " needs at least " + std::to_string(least) + " vectors to train on, got " + std::to_string(n) +
                      " vectors; " + training_advice(index_.get(), n));
  // FAISS's factory asks PQ indexes for polysemous training (reordering codes so that Hamming distances
  // mean something). Only polysemous search (polysemous_ht > 0) uses it, which this class never asks
  // for, and it takes seconds per sub-quantizer: 50 s of the 51 s an IVF64,PQ8 over 5000 vectors took.
  if (faiss::IndexIVFPQ* ivfpq = ivfpq_in(index_.get())) ivfpq->do_polysemous_training = false;
  if (faiss::IndexPQ* pq = pq_in(index_.get())) pq->do_polysemous_training = false;
  try {
    index_->train(n, x);
  } catch (const faiss::FaissException& e) {
    throw ConfigError("index: faiss:" + factory_ + " cannot be trained on " + std::to_string(n) + " vectors (" + reason_of(e) + "); " +
                      training_advice(index_.get(), n));
  }
}

void FaissIndex::add(std::int64_t n, const float* x) {
  if (n < 0 || (n > 0 && x == nullptr)) throw ConfigError("FaissIndex::add: bad n or null x");
  if (n == 0) return;
  train(n, x);
  try {
    index_->add(n, x);
  } catch (const faiss::FaissException& e) {
    throw Error("faiss:" + factory_ + ": adding " + std::to_string(n) + " vectors failed: " + reason_of(e));
  }
  ntotal_ = index_->ntotal;
}

void FaissIndex::search(std::int64_t n, const float* x, std::int64_t k, float* scores, std::int64_t* labels) const {
  if (n < 0 || k < 0 || (n > 0 && x == nullptr)) throw ConfigError("FaissIndex::search: bad n, k or null x");
  if (n == 0 || k == 0) return;
  if (ntotal_ == 0) {  // an untrained index cannot even be asked
    std::fill(scores, scores + n * k, -std::numeric_limits<float>::infinity());
    std::fill(labels, labels + n * k, std::int64_t{-1});
    return;
  }
  static_assert(sizeof(faiss::Index::idx_t) == sizeof(std::int64_t));
  try {
    index_->search(n, x, k, scores, reinterpret_cast<faiss::Index::idx_t*>(labels));
  } catch (const faiss::FaissException& e) {
    throw Error("faiss:" + factory_ + ": search failed: " + reason_of(e));
  }
  // FAISS marks missing results with label -1, but leaves their scores at -FLT_MAX or worse.
  for (std::int64_t i = 0; i < n * k; ++i)
    if (labels[i] < 0) scores[i] = -std::numeric_limits<float>::infinity();
}

void FaissIndex::reset() {
  index_->reset();
  ntotal_ = 0;
}

void FaissIndex::write(std::ostream& out) const {
  OstreamWriter writer(out);
  try {
    faiss::write_index(index_.get(), &writer);
  } catch (const faiss::FaissException& e) {
    throw Error("faiss:" + factory_ + ": cannot write the index: " + reason_of(e));
  }
}

std::unique_ptr<FaissIndex> FaissIndex::read(std::istream& in, std::uint64_t bytes, const std::string& factory, FaissIndexOptions options) {
  IstreamReader reader(in, bytes);
  std::unique_ptr<faiss::Index> index;
  try {
    index.reset(faiss::read_index(&reader));
  } catch (const faiss::FaissException& e) {
    throw Error("not a readable FAISS index: " + reason_of(e));
  }
  if (index->metric_type != faiss::METRIC_INNER_PRODUCT) throw Error("the FAISS index does not rank by inner product");
  return std::unique_ptr<FaissIndex>(new FaissIndex(factory, std::move(index), options));
}

}  // namespace xmc
