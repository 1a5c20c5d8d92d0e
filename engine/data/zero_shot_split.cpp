#include "engine/data/zero_shot_split.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <random>
#include <string>

#include "engine/core/atomic_file.h"
#include "engine/core/error.h"
#include "engine/core/line_reader.h"
#include "engine/data/dataset.h"
#include "engine/data/text_lines.h"
#include "engine/data/xc_sparse_file.h"

namespace xmc {
namespace {

namespace fs = std::filesystem;
using namespace zero_shot_files;

/// `count` labels drawn uniformly without replacement from `pool`, ascending.
std::vector<std::int32_t> draw(std::vector<std::int32_t> pool, std::int64_t count, std::mt19937_64& rng) {
  std::shuffle(pool.begin(), pool.end(), rng);
  pool.resize(static_cast<std::size_t>(count));
  std::sort(pool.begin(), pool.end());
  return pool;
}

/// The rows of `m` with only the columns `keep` says yes to.
CsrMatrix keep_columns(const CsrMatrix& m, const std::vector<bool>& keep) {
  CsrMatrix out;
  out.cols = m.cols;
  std::vector<std::int32_t> cols;
  std::vector<float> vals;
  for (std::int64_t r = 0; r < m.rows; ++r) {
    cols.clear();
    vals.clear();
    const auto idx = m.row_indices(r);
    const auto val = m.row_values(r);
    for (std::size_t k = 0; k < idx.size(); ++k)
      if (keep[static_cast<std::size_t>(idx[k])]) {
        cols.push_back(idx[k]);
        vals.push_back(val[k]);
      }
    out.append_row(cols, vals);
  }
  return out;
}

void write_ids(const fs::path& path, const std::vector<std::int32_t>& ids) {
  AtomicFileWriter out(path);
  for (const auto id : ids) out.stream() << id << '\n';
  out.commit();
}

void write_rows(const fs::path& path, const std::vector<std::int64_t>& rows) {
  AtomicFileWriter out(path);
  for (const auto row : rows) out.stream() << row << '\n';
  out.commit();
}

/// One integer in [0, limit) per line, strictly ascending; errors name the file and line.
template <typename Int>
std::vector<Int> read_ids(const fs::path& path, std::int64_t limit, const std::string& what) {
  if (!fs::exists(path)) throw InputError(path.string(), "no such file: the zero-shot split is incomplete");
  LineReader reader(path);
  std::vector<Int> ids;
  std::string_view line;
  while (reader.next(line)) {
    std::int64_t id = -1;
    const auto [end, ec] = std::from_chars(line.data(), line.data() + line.size(), id);
    if (ec != std::errc{} || end != line.data() + line.size() || id < 0 || id >= limit)
      throw InputError(path.string(), reader.line_number(),
                       "expected a " + what + " in [0, " + std::to_string(limit) + "), got \"" + std::string(line.substr(0, 40)) + "\"");
    if (!ids.empty() && id <= static_cast<std::int64_t>(ids.back()))
      throw InputError(path.string(), reader.line_number(), what + "s must be strictly ascending (" + std::to_string(id) + " after " +
                                                                std::to_string(ids.back()) + ")");
    ids.push_back(static_cast<Int>(id));
  }
  return ids;
}

}  // namespace

ZeroShotSplitSummary split_zero_shot(const ZeroShotSplitOptions& options, Progress& progress) {
  if (!(options.novel_frac > 0 && options.novel_frac < 1))
    throw ConfigError("--novel-frac: got " + std::to_string(options.novel_frac) + ", expected a fraction in (0, 1)");
  if (!(options.val_frac >= 0 && options.novel_frac + options.val_frac < 1))
    throw ConfigError("--val-frac: got " + std::to_string(options.val_frac) + ", expected a fraction in [0, 1 - novel-frac)");
  if (fs::exists(options.out / dataset_files::kMeta)) throw ConfigError("--out: " + options.out.string() + " already holds a dataset");
  Dataset d = load_dataset(options.in, {}, progress);
  const std::int64_t labels = d.num_labels();
  ZeroShotSplitSummary summary;
  summary.labels = labels;

  std::mt19937_64 rng(options.seed);
  const auto test_counts = d.test_labels.column_counts();
  const auto train_counts = d.train_labels.column_counts();
  std::vector<std::int32_t> with_test;
  for (std::int32_t l = 0; l < labels; ++l)
    if (test_counts[static_cast<std::size_t>(l)] > 0) with_test.push_back(l);
  const auto novel_count = static_cast<std::int64_t>(std::llround(options.novel_frac * static_cast<double>(labels)));
  if (novel_count < 1 || novel_count > static_cast<std::int64_t>(with_test.size()))
    throw ConfigError("--novel-frac " + std::to_string(options.novel_frac) + " asks for " + std::to_string(novel_count) + " novel labels, but " +
                      std::to_string(with_test.size()) + " of the " + std::to_string(labels) + " labels have a test positive");
  const std::vector<std::int32_t> novel = draw(with_test, novel_count, rng);

  std::vector<bool> is_novel(static_cast<std::size_t>(labels), false);
  for (const auto l : novel) is_novel[static_cast<std::size_t>(l)] = true;
  std::vector<std::int32_t> observed_with_train;
  for (std::int32_t l = 0; l < labels; ++l)
    if (!is_novel[static_cast<std::size_t>(l)] && train_counts[static_cast<std::size_t>(l)] > 0) observed_with_train.push_back(l);
  const auto pseudo_count = static_cast<std::int64_t>(std::llround(options.val_frac * static_cast<double>(labels)));
  if (pseudo_count > static_cast<std::int64_t>(observed_with_train.size()))
    throw ConfigError("--val-frac " + std::to_string(options.val_frac) + " asks for " + std::to_string(pseudo_count) +
                      " pseudo-novel labels, but only " + std::to_string(observed_with_train.size()) + " observed labels have a train positive");
  const std::vector<std::int32_t> pseudo = options.val_frac > 0 ? draw(observed_with_train, pseudo_count, rng) : std::vector<std::int32_t>{};
  summary.novel = novel_count;
  summary.pseudo_novel = static_cast<std::int64_t>(pseudo.size());

  std::vector<bool> observed(static_cast<std::size_t>(labels), true), base(static_cast<std::size_t>(labels), true);
  for (const auto l : novel) observed[static_cast<std::size_t>(l)] = base[static_cast<std::size_t>(l)] = false;
  for (const auto l : pseudo) base[static_cast<std::size_t>(l)] = false;

  const CsrMatrix train_observed = keep_columns(d.train_labels, observed);
  CsrMatrix zero = keep_columns(d.test_labels, is_novel);
  std::vector<std::int64_t> zero_rows;
  CsrMatrix test_zero;
  test_zero.cols = labels;
  std::vector<std::string> zero_text;
  for (std::int64_t r = 0; r < zero.rows; ++r)
    if (zero.row_size(r) > 0) {
      zero_rows.push_back(r);
      test_zero.append_row(zero.row_indices(r), zero.row_values(r));
      zero_text.push_back(d.test_text[static_cast<std::size_t>(r)]);
    }
  summary.zero_shot_test_rows = static_cast<std::int64_t>(zero_rows.size());
  std::vector<FilterPair> zero_pairs;
  for (std::size_t z = 0; z < zero_rows.size(); ++z)
    for (const auto l : d.test_filter.labels_of(zero_rows[z])) zero_pairs.push_back({static_cast<std::int64_t>(z), l});

  const FilterPairs full_filter = d.test_filter;
  const CsrMatrix full_test = d.test_labels;
  d.train_labels = keep_columns(d.train_labels, base);
  for (std::int64_t r = 0; r < d.train_labels.rows; ++r) summary.train_rows_without_labels += d.train_labels.row_size(r) == 0;
  d.meta.name += "-zeroshot";
  d.meta.source = "zero-shot split of " + fs::absolute(options.in).string() + " (novel " + std::to_string(options.novel_frac) + ", pseudo-novel " +
                  std::to_string(options.val_frac) + ", seed " + std::to_string(options.seed) + ")";

  // The split's own files first: dataset.json, written last by save_dataset, marks a complete folder.
  fs::create_directories(options.out);
  write_ids(options.out / kNovelLabels, novel);
  write_ids(options.out / kPseudoNovelLabels, pseudo);
  write_xc_sparse(options.out / kTrainObservedLabels, train_observed);
  write_xc_sparse(options.out / kTestFullLabels, full_test);
  write_xc_sparse(options.out / kTestZeroLabels, test_zero);
  write_text_lines(options.out / kTestZeroText, zero_text);
  write_rows(options.out / kTestZeroRows, zero_rows);
  if (!full_filter.empty()) {
    write_filter_pairs(options.out / kFilterFull, full_filter);
    write_filter_pairs(options.out / kFilterZero, FilterPairs(std::move(zero_pairs)));
  }
  save_dataset(d, options.out);
  return summary;
}

bool is_zero_shot_split(const fs::path& dir) { return fs::exists(dir / kNovelLabels); }

ZeroShotSplit read_zero_shot_split(const fs::path& dir, std::int64_t num_train, std::int64_t num_test, std::int64_t num_labels) {
  ZeroShotSplit s;
  s.novel = read_ids<std::int32_t>(dir / kNovelLabels, num_labels, "label id");
  s.pseudo_novel = read_ids<std::int32_t>(dir / kPseudoNovelLabels, num_labels, "label id");
  for (const auto l : s.pseudo_novel)
    if (std::binary_search(s.novel.begin(), s.novel.end(), l))
      throw InputError((dir / kPseudoNovelLabels).string(), "label " + std::to_string(l) + " is also in " + kNovelLabels);
  auto read_matrix = [&](const char* name, std::int64_t rows) {
    CsrMatrix m = read_xc_sparse(dir / name);
    if (m.rows != rows || m.cols != num_labels)
      throw InputError((dir / name).string(), "is " + std::to_string(m.rows) + " x " + std::to_string(m.cols) + ", expected " + std::to_string(rows) +
                                                  " x " + std::to_string(num_labels));
    return m;
  };
  s.train_observed = read_matrix(kTrainObservedLabels, num_train);
  s.test_full = read_matrix(kTestFullLabels, num_test);
  s.test_zero_rows = read_ids<std::int64_t>(dir / kTestZeroRows, num_test, "test row");
  s.test_zero = read_matrix(kTestZeroLabels, static_cast<std::int64_t>(s.test_zero_rows.size()));
  for (std::int64_t r = 0; r < s.test_zero.rows; ++r)
    for (const auto l : s.test_zero.row_indices(r))
      if (!std::binary_search(s.novel.begin(), s.novel.end(), l))
        throw InputError((dir / kTestZeroLabels).string(), static_cast<std::size_t>(r + 2),
                         "label " + std::to_string(l) + " is not a novel label (" + kNovelLabels + ")");
  const auto observed_counts = s.train_observed.column_counts();
  for (const auto l : s.novel)
    if (observed_counts[static_cast<std::size_t>(l)] > 0)
      throw InputError((dir / kTrainObservedLabels).string(), "novel label " + std::to_string(l) + " has training positives");
  if (fs::exists(dir / kFilterFull)) s.filter_full = read_filter_pairs(dir / kFilterFull, num_test, num_labels);
  if (fs::exists(dir / kFilterZero)) s.filter_zero = read_filter_pairs(dir / kFilterZero, s.test_zero.rows, num_labels);
  return s;
}

}  // namespace xmc
