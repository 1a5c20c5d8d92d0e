#include "engine/method/xrlinear/settings_choice.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <thread>

#include "engine/core/error.h"
#include "engine/eval/held_out_weight_choice.h"
#include "engine/method/xrlinear/label_tree.h"
#include "engine/method/xrlinear/neighbour_votes.h"
#include "engine/method/xrlinear/ngram_restriction.h"
#include "engine/method/xrlinear/pifa.h"
#include "engine/method/xrlinear/score_fusion.h"
#include "engine/method/xrlinear/tree_rankers.h"

namespace xmc {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

std::string fits_text(double fits) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", fits);
  return text;
}

std::string seconds_text(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f s", seconds);
  return text;
}

/// One n-gram length's features and the trees fit on them so far.
struct NgramSide {
  int ngrams = 1;
  CsrMatrix features;   ///< the fitting rows'
  CsrMatrix held_out;   ///< the held-out rows'
  CsrMatrix label_vectors;  ///< PIFA, for every tree's 2-means
  std::vector<TreeModel> trees;
  double tree_seconds = 0;  ///< the last tree's fit
  std::unique_ptr<NeighbourVotes> neighbours;  ///< with knn weights
};

NgramSide make_side(const TfidfVectorizer& vectorizer, const ChoiceRows& rows, int ngrams, bool with_neighbours) {
  NgramSide side;
  side.ngrams = ngrams;
  const NgramRestriction restriction(vectorizer, ngrams);
  side.features = restriction.apply(rows.features);
  side.held_out = restriction.apply(rows.held_out_features);
  side.label_vectors = pifa_label_vectors(rows.labels, side.features);
  if (with_neighbours) side.neighbours = std::make_unique<NeighbourVotes>(side.features, rows.labels);
  return side;
}

/// Adds tree side.trees.size() (its seed: options.seed + that) to `side`, fit on its rows, and times it.
void add_tree(NgramSide& side, const CsrMatrix& labels, const ChoiceOptions& options, Progress& progress) {
  const Clock::time_point start = Clock::now();
  const std::uint64_t seed = options.seed + side.trees.size();
  TreeModel model;
  model.tree = build_label_tree(side.label_vectors, options.configured.tree(seed));
  model.rankers = empty_rankers(model.tree);
  const RankerTraining training(model.tree, side.features, labels);
  progress.start("choosing on held-out queries: " + std::to_string(side.ngrams) + "-grams, tree " + std::to_string(side.trees.size() + 1),
                 training.num_units());
  for (std::int64_t unit = 0; unit < training.num_units(); ++unit) {
    if (progress.cancelled()) throw Cancelled();
    training.train(unit, options.configured.rankers(seed), model.rankers);
    progress.update(unit + 1);
  }
  progress.finish();
  side.trees.push_back(std::move(model));
  side.tree_seconds = seconds_since(start);
}

/// Each held-out query's P@1 + P@3 + P@5 by each weight: [query][weight].
using QueryScores = std::vector<std::vector<double>>;

/// The held-out queries ranked by `side`'s trees (fused with the neighbours' votes by each weight, with knn
/// weights), each ranking's P@1 + P@3 + P@5 per query and weight, rows split across options.threads.
QueryScores held_out_scores(const NgramSide& side, const CsrMatrix& truth, const ChoiceOptions& options, const std::vector<double>& weights) {
  const XrlinearOptions& configured = options.configured;
  const bool fused = side.neighbours != nullptr;
  const TreeEnsembleSearch search(side.trees, configured.beam_search(), side.features.cols);
  const std::int64_t top = fused ? configured.fusion_tree_top : 5;
  const std::int64_t rows = side.held_out.rows;
  const auto threads = static_cast<std::int64_t>(std::clamp<std::int64_t>(options.threads, 1, std::max<std::int64_t>(rows, 1)));
  QueryScores out(static_cast<std::size_t>(rows), std::vector<double>(weights.size(), 0.0));
  auto score_rows = [&](std::int64_t part) {
    std::vector<std::int64_t> labels(static_cast<std::size_t>(top));
    std::vector<float> scores(static_cast<std::size_t>(top));
    std::vector<std::int64_t> ranked;
    NeighbourVotes::Scratch scratch;
    VotedCandidates candidates;
    std::vector<float> dense_buffer;
    for (std::int64_t row = rows * part / threads; row < rows * (part + 1) / threads; ++row) {
      search.rank(side.held_out, row, row + 1, top, labels.data(), scores.data());
      const auto row_truth = truth.row_indices(row);
      std::vector<double>& own = out[static_cast<std::size_t>(row)];
      if (!fused) {
        own[0] = precision_1_3_5(std::span(labels).first(std::min<std::size_t>(5, labels.size())), row_truth);
        continue;
      }
      voted_candidates(*side.neighbours, side.held_out, row, configured.knn, configured.knn_top, labels, scratch, candidates);
      const std::vector<float> path = search.path_scores(side.held_out, row, candidates.labels, &dense_buffer);
      for (std::size_t w = 0; w < weights.size(); ++w) {
        ranked.clear();
        for (const FusedLabel& label : fuse_with_shares(candidates.labels, path, candidates.shares, weights[w], 5)) ranked.push_back(label.label);
        own[w] = precision_1_3_5(ranked, row_truth);
      }
    }
  };
  std::vector<std::thread> workers;
  for (std::int64_t part = 1; part < threads; ++part) workers.emplace_back(score_rows, part);
  score_rows(0);
  for (std::thread& worker : workers) worker.join();
  return out;
}

/// Column `w` of `scores`.
std::vector<double> weight_column(const QueryScores& scores, std::size_t w) {
  std::vector<double> out;
  out.reserve(scores.size());
  for (const std::vector<double>& row : scores) out.push_back(row[w]);
  return out;
}

}  // namespace

std::string describe(const ChoiceCandidate& candidate) {
  char score[32];
  std::snprintf(score, sizeof score, "%.4f", candidate.score);
  std::string out = std::to_string(candidate.ngrams) + "-grams, " + std::to_string(candidate.trees) + (candidate.trees == 1 ? " tree" : " trees");
  if (candidate.knn_weight >= 0) {
    char weight[16];
    std::snprintf(weight, sizeof weight, "%.2f", candidate.knn_weight);
    out += ", knn weight " + std::string(weight);
  }
  return out + ": " + score;
}

SettingsChoice choose_settings(const TfidfVectorizer& vectorizer, const ChoiceRows& rows, const ChoiceOptions& options, Progress& progress,
                               const std::function<void(const std::string&)>& log) {
  if (rows.held_out_features.rows == 0 || rows.held_out_features.rows != rows.held_out_labels.rows)
    throw Error("xrlinear.choose: no held-out training queries to choose on (" + std::to_string(rows.held_out_features.rows) + " rows, " +
                std::to_string(rows.held_out_labels.rows) + " label rows)");
  std::vector<int> ngrams = options.ngrams;
  std::sort(ngrams.begin(), ngrams.end());
  ngrams.erase(std::unique(ngrams.begin(), ngrams.end()), ngrams.end());
  if (ngrams.empty() || ngrams.front() < 1 || ngrams.back() > vectorizer.ngrams())
    throw Error("xrlinear.choose: n-gram candidates outside the vectorizer's 1 .. " + std::to_string(vectorizer.ngrams()));
  const bool with_neighbours = !options.knn_weights.empty();
  const Clock::time_point start = Clock::now();
  SettingsChoice out;
  std::vector<NgramSide> sides;

  // The configured knn weight's place on the grid (the nearest weight tried).
  const std::vector<double> weights = with_neighbours ? options.knn_weights : std::vector<double>{1.0};
  std::size_t configured_weight = 0;
  for (std::size_t w = 1; w < weights.size(); ++w)
    if (std::abs(weights[w] - options.configured.knn_weight) < std::abs(weights[configured_weight] - options.configured.knn_weight)) configured_weight = w;
  auto score = [&](NgramSide& side) {
    const QueryScores scores = held_out_scores(side, rows.held_out_labels, options, weights);
    HeldOutWeightChoice choice(weights);
    for (const std::vector<double>& row : scores)
      for (std::size_t w = 0; w < weights.size(); ++w) choice.add_score(w, row[w]);
    choice.add_queries(static_cast<std::int64_t>(scores.size()));
    ChoiceCandidate candidate{.ngrams = side.ngrams, .trees = static_cast<std::int64_t>(side.trees.size()), .seconds = side.tree_seconds};
    std::size_t chosen_weight = 0;
    std::string kept;
    if (with_neighbours) {
      const double best = choice.best(options.configured.knn_weight);
      chosen_weight = static_cast<std::size_t>(std::find(weights.begin(), weights.end(), best) - weights.begin());
      // Another weight than the configured one only on evidence: more than one standard error above it.
      if (chosen_weight != configured_weight &&
          !beats_by_a_standard_error(weight_column(scores, chosen_weight), weight_column(scores, configured_weight))) {
        char text[96];
        std::snprintf(text, sizeof text, " (%.2f scored higher, by less than a standard error)", weights[chosen_weight]);
        kept = text;
        chosen_weight = configured_weight;
      }
      candidate.knn_weight = weights[chosen_weight];
    }
    candidate.score = choice.scores()[chosen_weight];
    out.candidates.push_back(candidate);
    log("xrlinear.choose: " + describe(candidate) + kept + " (fit in " + seconds_text(candidate.seconds) + ")" +
        (with_neighbours ? "; by the tree's weight against the neighbours' votes — " + choice.curve(2) : std::string()));
  };

  // The budget in tree fits, a tree's cost taken from its features' non-zeros against the first candidate's (the
  // rankers' work grows with them): the same candidates are fit on every machine and at every load, so a seed gives
  // one run. The first candidate is always fit.
  sides.push_back(make_side(vectorizer, rows, ngrams.front(), with_neighbours));
  add_tree(sides.front(), rows.labels, options, progress);
  out.budget_fits = options.budget * static_cast<double>(std::max<std::int64_t>(options.configured.trees, 1));
  double spent = 1;
  score(sides.front());
  const auto first_nonzeros = static_cast<double>(std::max<std::int64_t>(sides.front().features.nnz(), 1));
  auto tree_cost = [&](const NgramSide& side) { return static_cast<double>(std::max<std::int64_t>(side.features.nnz(), 1)) / first_nonzeros; };
  auto fits = [&](double cost, const std::string& what) {
    if (spent + cost <= out.budget_fits + 1e-9) {
      spent += cost;
      return true;
    }
    char text[96];
    std::snprintf(text, sizeof text, " (%.2f fits, %.2f of %.2f left)", cost, out.budget_fits - spent, out.budget_fits);
    out.left_out.push_back(what + text);
    return false;
  };
  // Longer n-grams, one tree each.
  for (std::size_t i = 1; i < ngrams.size(); ++i) {
    NgramSide side = make_side(vectorizer, rows, ngrams[i], with_neighbours);
    if (!fits(tree_cost(side), std::to_string(ngrams[i]) + "-grams")) continue;
    add_tree(side, rows.labels, options, progress);
    score(side);
    sides.push_back(std::move(side));
  }
  // More trees for the n-grams that scored best with one.
  std::size_t best_side = 0;
  for (std::size_t i = 1; i < sides.size(); ++i)
    if (out.candidates[i].score > out.candidates[best_side].score) best_side = i;
  NgramSide& grown = sides[best_side];
  for (std::int64_t trees = 2; trees <= options.max_trees; ++trees) {
    if (!fits(tree_cost(grown), std::to_string(grown.ngrams) + "-grams, " + std::to_string(trees) + " trees")) break;
    add_tree(grown, rows.labels, options, progress);
    score(grown);
  }
  out.fits = spent;
  // The best score; of equal ones, the first fit (the cheaper).
  const auto best = std::max_element(out.candidates.begin(), out.candidates.end(),
                                     [](const ChoiceCandidate& a, const ChoiceCandidate& b) { return a.score < b.score; });
  out.ngrams = best->ngrams;
  out.trees = best->trees;
  out.knn_weight = best->knn_weight;
  out.score = best->score;
  for (NgramSide& side : sides)
    if (side.ngrams == out.ngrams) {
      side.trees.resize(static_cast<std::size_t>(out.trees));
      out.trees_fit = std::move(side.trees);
    }
  out.seconds = seconds_since(start);
  for (const std::string& what : out.left_out) log("xrlinear.choose: left out by the budget: " + what);
  log("xrlinear.choose: chose " + describe(*best) + " of " + std::to_string(out.candidates.size()) + " candidates on " +
      std::to_string(rows.held_out_features.rows) + " held-out training queries, in " + seconds_text(out.seconds) + " (" + fits_text(out.fits) +
      " of " + fits_text(out.budget_fits) + " tree fits)");
  return out;
}

}  // namespace xmc
