// `xmc eval`: metrics of a score file against the truth.
#include <cstdio>
#include <iostream>

#include "engine/cli/command_context.h"
#include "engine/data/propensity.h"
#include "engine/eval/prediction_file_eval.h"

namespace xmc::cli {
namespace {

struct EvalArgs {
  std::string truth, pred, train, filter;
  double a = 0.55, b = 1.5;
  std::vector<int> ks{1, 3, 5};
  bool deciles = false;
  bool drop_empty = false;
  bool json = false;
};

nlohmann::json to_json(const EvalResult& r) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [name, value] : r.metrics) j[name] = value;
  j["rows"] = r.rows;
  if (!r.deciles.empty()) {
    j["deciles"] = nlohmann::json::object();
    for (const auto& [name, bars] : r.deciles) j["deciles"][name] = bars;
  }
  return j;
}

void print_table(const EvalResult& r, const std::vector<int>& ks) {
  std::printf("%lld rows; metrics in %%\n%-8s", static_cast<long long>(r.rows), "metric");
  for (int k : ks) std::printf(" %7s", ("@" + std::to_string(k)).c_str());
  std::printf("\n");
  for (std::size_t i = 0; i < r.metrics.size(); i += ks.size()) {
    const auto& name = r.metrics[i].first;
    std::printf("%-8s", name.substr(0, name.find('@')).c_str());
    for (std::size_t j = 0; j < ks.size(); ++j) std::printf(" %7.2f", 100 * r.metrics[i + j].second);
    std::printf("\n");
  }
  for (const auto& [name, bars] : r.deciles) {
    std::printf("decile-wise %s (bin 1 = head):", name.c_str());
    for (double v : bars) std::printf(" %.2f", 100 * v);
    std::printf("\n");
  }
}

}  // namespace

void add_eval_command(CLI::App& app, CommandContext& context) {
  auto* cmd = app.add_subcommand("eval", "Score predictions: P@k, nDCG@k, PSP@k, PSnDCG@k, R@k, decile-wise P@5");
  auto args = std::make_shared<EvalArgs>();
  cmd->add_option("--truth", args->truth, "Test labels (XC sparse file, e.g. tst_X_Y.txt)")->required();
  cmd->add_option("--pred", args->pred, "Predicted scores (XC sparse 'label:score' rows, header 'N L')")->required();
  cmd->add_option("--train", args->train, "Train labels (trn_X_Y.txt): propensities for PSP/PSnDCG and decile bins");
  cmd->add_option("--filter", args->filter, "Pairs 'row label' removed from predictions (filter_labels_test.txt)");
  cmd->add_option("--A", args->a, "Propensity parameter A (Amazon 0.6, Wikipedia 0.5)")->capture_default_str();
  cmd->add_option("--B", args->b, "Propensity parameter B (Amazon 2.6, Wikipedia 0.4)")->capture_default_str();
  cmd->add_option("--k", args->ks, "Cut-offs, comma separated")->delimiter(',')->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_flag("--deciles", args->deciles, "Also print decile-wise P@5 (needs --train)");
  cmd->add_flag("--drop-empty-rows", args->drop_empty, "Skip test rows without labels (default: they count as zero)");
  cmd->add_flag("--json", args->json, "Print one JSON object (fractions in [0,1]) as the last line of stdout");
  cmd->footer(
      "Example:\n  xmc eval --truth data/wordnet/tst_X_Y.txt --pred pred.txt --train data/wordnet/trn_X_Y.txt \\\n"
      "      --filter data/wordnet/filter_labels_test.txt --k 1,3,5,10 --deciles --json");
  cmd->callback([args, &context] {
    PredictionFileEval request;
    request.truth = args->truth;
    request.predictions = args->pred;
    if (!args->train.empty()) request.train = args->train;
    if (!args->filter.empty()) request.filter = args->filter;
    request.propensity = {args->a, args->b};
    check_propensity_params(request.propensity, "--A/--B");
    request.options.ks = args->ks;
    request.options.drop_empty_rows = args->drop_empty;
    if (args->deciles) request.options.decile_ks = {5};
    const EvalResult result = evaluate_prediction_file(request, context.progress);
    if (args->json) context.print_json(to_json(result));
    else print_table(result, args->ks);
  });
}

}  // namespace xmc::cli
