#include "engine/data/synthetic_builder.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/core/splitmix64.h"

namespace xmc {
namespace {

/// splitmix64 as a sequential generator: the same numbers on every platform.
class Generator {
 public:
  explicit Generator(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() { return splitmix64_mix(state_ += kSplitmix64Increment); }
  /// Uniform in [0, 1).
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  /// Uniform in [0, n).
  std::int64_t below(std::int64_t n) { return static_cast<std::int64_t>(uniform() * static_cast<double>(n)); }

 private:
  std::uint64_t state_;
};

/// Draws ids in [0, n) with probability ∝ 1/(rank+1)^exponent, where rank is ids' position in `order`
/// (identity when empty): a table of cumulative weights and a binary search.
class ZipfDraw {
 public:
  ZipfDraw(std::int64_t n, double exponent, std::vector<std::int64_t> order = {}) : order_(std::move(order)) {
    cumulative_.resize(static_cast<std::size_t>(n));
    double total = 0;
    for (std::int64_t r = 0; r < n; ++r) cumulative_[static_cast<std::size_t>(r)] = total += std::pow(static_cast<double>(r + 1), -exponent);
    for (double& c : cumulative_) c /= total;
  }
  std::int64_t operator()(Generator& g) const {
    const auto at = std::upper_bound(cumulative_.begin(), cumulative_.end(), g.uniform());
    const auto rank = std::min<std::int64_t>(static_cast<std::int64_t>(at - cumulative_.begin()), static_cast<std::int64_t>(cumulative_.size()) - 1);
    return order_.empty() ? rank : order_[static_cast<std::size_t>(rank)];
  }

 private:
  std::vector<double> cumulative_;
  std::vector<std::int64_t> order_;
};

/// A made-up, pronounceable word for id `w`: consonant-vowel syllables of its base-75 digits ("dakoru").
std::string made_up_word(std::int64_t w) {
  static constexpr const char* kConsonants = "bdfghklmnprstvz";  // 15
  static constexpr const char* kVowels = "aeiou";                 // 5: 75 syllables
  std::string out;
  std::int64_t rest = w;
  do {
    const std::int64_t syllable = rest % 75;
    out += kConsonants[syllable / 5];
    out += kVowels[syllable % 5];
    rest /= 75;
  } while (rest > 0);
  if (out.size() < 4) out += kConsonants[(w * 7) % 15], out += kVowels[(w * 3) % 5];  // no two-letter words
  return out;
}

void check(bool ok, const std::string& what) {
  if (!ok) throw ConfigError(what);
}

/// Fisher-Yates with the generator above (std::shuffle's order differs between standard libraries).
template <typename T>
void shuffle(std::vector<T>& v, Generator& g) {
  for (std::int64_t i = static_cast<std::int64_t>(v.size()) - 1; i > 0; --i)
    std::swap(v[static_cast<std::size_t>(i)], v[static_cast<std::size_t>(g.below(i + 1))]);
}

std::vector<std::int64_t> shuffled(std::int64_t n, Generator& g) {
  std::vector<std::int64_t> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = i;
  shuffle(v, g);
  return v;
}

/// The words of `ids`, separated by single spaces.
std::string joined(const std::vector<std::int32_t>& ids, const std::vector<std::string>& words) {
  std::string text;
  for (const std::int32_t w : ids) text += (text.empty() ? "" : " ") + words[static_cast<std::size_t>(w)];
  return text;
}

/// The second view: each item's looks as a tf-idf vector, randomly projected to m numbers (see the header).
class LookProjection {
 public:
  static constexpr std::int64_t kNoiseLooks = 10;
  LookProjection(std::int64_t labels, std::int64_t dim, std::uint64_t seed) : labels_(labels), dim_(dim), seed_(seed) {}

  /// Counts the items each look appears in (call for every item before vectors are made).
  void count(const std::vector<std::int64_t>& looks) {
    for (const std::int64_t w : looks) ++document_frequency_[w];
  }
  void finish_counting(std::int64_t items) { items_ = items; }

  /// `looks` (ids: labels' own 0..labels−1, noise labels..labels+99) -> m numbers, L2-normalised.
  void embed(const std::vector<std::int64_t>& looks, float* out) const {
    std::vector<double> v(static_cast<std::size_t>(dim_), 0.0);
    for (const std::int64_t w : looks) {
      const auto df = document_frequency_.find(w);
      const double idf = std::log(static_cast<double>(items_ + 1) / static_cast<double>((df == document_frequency_.end() ? 0 : df->second) + 1)) + 1.0;
      Generator column(splitmix64_mix(seed_ ^ (static_cast<std::uint64_t>(w) * 0x9E3779B97F4A7C15ULL)));
      for (std::int64_t i = 0; i < dim_; i += 2) {  // Box-Muller: two Gaussians per pair of uniforms
        const double radius = std::sqrt(-2.0 * std::log(1.0 - column.uniform()));
        const double angle = 6.283185307179586 * column.uniform();
        v[static_cast<std::size_t>(i)] += idf * radius * std::cos(angle);
        if (i + 1 < dim_) v[static_cast<std::size_t>(i + 1)] += idf * radius * std::sin(angle);
      }
    }
    double norm = 0;
    for (const double x : v) norm += x * x;
    norm = std::sqrt(norm) + 1e-12;
    for (std::int64_t i = 0; i < dim_; ++i) out[i] = static_cast<float>(v[static_cast<std::size_t>(i)] / norm);
  }
  std::int64_t noise_look(Generator& g) const { return labels_ + g.below(kNoiseLooks); }

 private:
  std::int64_t labels_, dim_;
  std::uint64_t seed_;
  std::int64_t items_ = 0;
  std::map<std::int64_t, std::int64_t> document_frequency_;
};

}  // namespace

Dataset build_synthetic_dataset(const SyntheticBuildOptions& o, Progress& progress) {
  constexpr std::int64_t kMaxRows = std::int64_t{1} << 31;
  check(o.labels >= 2 && o.labels < kMaxRows, "--labels: got " + std::to_string(o.labels) + ", expected 2 to 2^31 - 1");
  check(o.train >= 1 && o.train < kMaxRows, "--train: got " + std::to_string(o.train) + ", expected 1 to 2^31 - 1");
  check(o.test >= 1 && o.test < kMaxRows, "--test: got " + std::to_string(o.test) + ", expected 1 to 2^31 - 1");
  check(std::isfinite(o.labels_per_query) && o.labels_per_query >= 1 && o.labels_per_query <= 1000,
        "--labels-per-query: got " + std::to_string(o.labels_per_query) + ", expected 1 to 1000");
  check(o.label_words >= 2 && o.label_words <= 100, "--label-words: got " + std::to_string(o.label_words) + ", expected 2 to 100");
  check(o.query_words >= 1 && o.query_words <= 1000, "--query-words: got " + std::to_string(o.query_words) + ", expected 1 to 1000");
  check(o.vocabulary == 0 || (o.vocabulary >= 100 && o.vocabulary < kMaxRows),
        "--vocabulary: got " + std::to_string(o.vocabulary) + ", expected 0 (automatic) or 100 to 2^31 - 1");
  check(std::isfinite(o.zipf) && o.zipf >= 0 && o.zipf <= 4, "--zipf: got " + std::to_string(o.zipf) + ", expected 0 to 4");
  check(o.image_dim >= 0 && o.image_dim <= 4096, "--image-dim: got " + std::to_string(o.image_dim) + ", expected 0 (no images) to 4096");
  check(o.topics >= 0 && o.topics <= o.labels, "--topics: got " + std::to_string(o.topics) + ", expected 0 (none) to the label count");
  check(o.topics == 0 || o.image_dim == 0, "--topics: got " + std::to_string(o.topics) + " with --image-dim; the two-view set has no topics");
  check(o.topics == 0 || o.label_words >= 3,
        "--topics: got " + std::to_string(o.topics) + " with --label-words " + std::to_string(o.label_words) + "; a label then needs 3 words or more");
  const bool images = o.image_dim > 0;
  const std::int64_t vocabulary = o.vocabulary > 0 ? o.vocabulary : std::max<std::int64_t>(2000, 2 * o.labels);

  Generator g(splitmix64_mix(o.seed ^ 0x5EED5EEDULL));
  std::vector<std::string> words(static_cast<std::size_t>(vocabulary));
  for (std::int64_t w = 0; w < vocabulary; ++w) words[static_cast<std::size_t>(w)] = made_up_word(w);
  const ZipfDraw common_word(vocabulary, 1.1);

  // Labels: a topic word from the rarer half of the vocabulary, then common words.
  Dataset d;
  std::vector<std::vector<std::int32_t>> label_words(static_cast<std::size_t>(o.labels));
  d.label_text.reserve(static_cast<std::size_t>(o.labels));
  const std::int64_t topic_start = vocabulary / 2;
  // Topics draw from a generator of their own, so that a set without them stays as it was.
  constexpr std::int64_t kTopicWords = 4;
  Generator topic_draw(splitmix64_mix(o.seed ^ 0x70731C5ULL));
  std::vector<std::int32_t> topic_of(static_cast<std::size_t>(o.topics > 0 ? o.labels : 0));
  std::vector<std::vector<std::int32_t>> topic_labels(static_cast<std::size_t>(o.topics));
  const auto topic_word = [&](std::int64_t topic, std::int64_t j) {
    const std::int64_t band = vocabulary / 4;  // topic words: the third quarter of the vocabulary, by Zipf rank
    return static_cast<std::int32_t>(band + (topic * kTopicWords + j) % band);
  };
  for (std::int64_t l = 0; l < o.labels; ++l) {
    auto& mine = label_words[static_cast<std::size_t>(l)];
    mine.push_back(static_cast<std::int32_t>(topic_start + g.below(vocabulary - topic_start)));
    if (images && l % 2 == 1) mine[0] = label_words[static_cast<std::size_t>(l - 1)][0];  // twins share their topic
    if (o.topics > 0) {
      const std::int64_t topic = topic_draw.below(o.topics);
      topic_of[static_cast<std::size_t>(l)] = static_cast<std::int32_t>(topic);
      topic_labels[static_cast<std::size_t>(topic)].push_back(static_cast<std::int32_t>(l));
      const std::int64_t first = topic_draw.below(kTopicWords), second = (first + 1 + topic_draw.below(kTopicWords - 1)) % kTopicWords;
      mine.push_back(topic_word(topic, first));
      mine.push_back(topic_word(topic, second));
    }
    while (static_cast<std::int64_t>(mine.size()) < o.label_words) mine.push_back(static_cast<std::int32_t>(common_word(g)));
    d.label_text.push_back(joined(mine, words));
    if ((l & 0xFFFF) == 0 && progress.cancelled()) throw Cancelled();
  }

  const ZipfDraw popular_label(o.labels, o.zipf, shuffled(o.labels, g));
  // 1 + geometric(p) labels with mean labels_per_query: p = 1 / labels_per_query (capped at the label count).
  const double more = 1.0 - 1.0 / o.labels_per_query;
  // The second view's looks of every item, drawn from a generator of their own (the texts stay as without images).
  Generator look_draw(splitmix64_mix(o.seed ^ 0x1AA6E5ULL));
  LookProjection projection(o.labels, o.image_dim, o.seed);
  std::vector<std::vector<std::int64_t>> train_looks, test_looks, label_looks;
  auto make_rows = [&](std::int64_t rows, std::vector<std::string>& texts, CsrMatrix& matrix, const std::string& task,
                       std::vector<std::vector<std::int64_t>>& looks) {
    matrix = CsrMatrix{};
    matrix.cols = o.labels;
    texts.reserve(static_cast<std::size_t>(rows));
    progress.start(task, rows);
    std::vector<std::int32_t> mine, text_words;
    const std::vector<float> ones(1024, 1.0f);
    for (std::int64_t r = 0; r < rows; ++r) {
      mine.clear();
      std::int64_t count = 1;
      while (count < std::min<std::int64_t>(o.labels, 1000) && g.uniform() < more) ++count;
      for (int tries = 0; static_cast<std::int64_t>(mine.size()) < count && tries < 50 * count; ++tries) {
        auto l = static_cast<std::int32_t>(popular_label(g));
        if (o.topics > 0 && !mine.empty() && topic_draw.uniform() < 0.5) {  // a label related to the query's first
          const auto& kin = topic_labels[static_cast<std::size_t>(topic_of[static_cast<std::size_t>(mine[0])])];
          l = kin[static_cast<std::size_t>(topic_draw.below(static_cast<std::int64_t>(kin.size())))];
        }
        if (std::find(mine.begin(), mine.end(), l) == mine.end()) mine.push_back(l);
      }
      std::sort(mine.begin(), mine.end());
      text_words.clear();
      for (const std::int32_t l : mine) {
        const auto& lw = label_words[static_cast<std::size_t>(l)];
        text_words.push_back(lw[0]);
        const auto other = lw[static_cast<std::size_t>(1 + g.below(static_cast<std::int64_t>(lw.size()) - 1))];
        if (!images) text_words.push_back(other);  // with images the text names the topic only: twins look alike in it
      }
      if (images) {
        looks.emplace_back(mine.begin(), mine.end());
        looks.back().push_back(projection.noise_look(look_draw));
        projection.count(looks.back());
      }
      while (static_cast<std::int64_t>(text_words.size()) < o.query_words) text_words.push_back(static_cast<std::int32_t>(common_word(g)));
      shuffle(text_words, g);
      texts.push_back(joined(text_words, words));
      matrix.append_row(mine, std::span<const float>(ones.data(), mine.size()));
      if ((r & 0x3FFF) == 0) {
        if (progress.cancelled()) throw Cancelled();
        progress.update(r);
      }
    }
    progress.update(rows);
    progress.finish();
  };
  make_rows(o.train, d.train_text, d.train_labels, "training queries", train_looks);
  make_rows(o.test, d.test_text, d.test_labels, "test queries", test_looks);
  if (images) {
    for (std::int64_t l = 0; l < o.labels; ++l) {
      label_looks.push_back({l, projection.noise_look(look_draw)});
      projection.count(label_looks.back());
    }
    projection.finish_counting(o.train + o.test + o.labels);
    auto bank = [&](const std::vector<std::vector<std::int64_t>>& looks) {
      std::vector<float> values(looks.size() * static_cast<std::size_t>(o.image_dim));
      for (std::size_t i = 0; i < looks.size(); ++i) projection.embed(looks[i], values.data() + i * static_cast<std::size_t>(o.image_dim));
      return std::make_shared<const ImageBank>(ImageBank::from_values(static_cast<std::int64_t>(looks.size()), 1, o.image_dim, std::move(values)));
    };
    d.train_images = bank(train_looks);
    d.test_images = bank(test_looks);
    d.label_images = bank(label_looks);
  }
  d.meta.name = "synthetic-" + std::to_string(o.labels);
  d.meta.source = "xmc dataset build synthetic: " + std::to_string(o.labels) + " labels, " + std::to_string(o.train) + " training and " +
                  std::to_string(o.test) + " test queries, " + std::to_string(o.labels_per_query) + " labels a query, zipf " + std::to_string(o.zipf) +
                  ", seed " + std::to_string(o.seed) +
                  (images ? ", images: m = " + std::to_string(o.image_dim) + " (twin labels told apart by their looks only)" : "");
  d.meta.propensity = PropensityParams{0.6, 2.6};  // the XC repository's values for Amazon-derived sets
  return d;
}

}  // namespace xmc
