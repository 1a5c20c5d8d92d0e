// `xmc sweep`: a grid of config values, each point trained as a normal run; run it again to resume.
#include <atomic>
#include <cmath>
#include <csignal>
#include <cstdio>

#include "engine/cli/command_context.h"
#include "engine/core/error.h"
#include "engine/session/session.h"
#include "engine/session/sweep_runner.h"
#include "engine/session/default_store_path.h"
#include "engine/records/evaluation_modes.h"

namespace xmc::cli {
namespace {

std::atomic<SweepRunner*> g_sweep{nullptr};
std::atomic<bool> g_sweep_interrupted{false};

extern "C" void on_sweep_interrupt(int) {
  // First Ctrl-C: the running points stop with a checkpoint and no other starts. A second one kills.
  if (SweepRunner* sweep = g_sweep.load()) sweep->request_stop();
  g_sweep_interrupted.store(true);
  std::signal(SIGINT, SIG_DFL);
}

struct SweepArgs {
  std::string config;
  std::vector<std::string> sets;
  std::vector<std::string> grid;
  std::string name;
  std::string db = default_run_store_path().string();
  std::int64_t resume = 0;
  int parallel = 1;
  bool list = false;
  bool json = false;
};

std::string status_of(const Session& session, const SweepPoint& point) {
  if (point.run <= 0) return "not started";
  const auto run = session.find_run(point.run);
  return run ? to_string(run->status) : "run deleted";
}

void print_sweep(const Session& session, const SweepInfo& sweep) {
  std::printf("sweep %lld: %s (%zu points, created %s)\n", static_cast<long long>(sweep.id), sweep.name.c_str(), sweep.points.size(),
              sweep.created.substr(0, 19).c_str());
  for (const auto& p : sweep.points) {
    std::string values;
    for (const auto& a : p.assignments) values += (values.empty() ? "" : "  ") + a;
    const auto evaluations = p.run > 0 ? session.evaluations(p.run) : std::vector<EvalPoint>{};  // none for a deleted run
    const double p1 = final_value(evaluations, "P@1"), p5 = final_value(evaluations, "P@5");
    char metrics[64] = "";
    if (!std::isnan(p1)) std::snprintf(metrics, sizeof metrics, "  P@1 %.2f  P@5 %.2f", 100 * p1, 100 * p5);
    std::printf("  %3lld  run %-5s %-12s %s%s\n", static_cast<long long>(p.position), p.run > 0 ? std::to_string(p.run).c_str() : "-",
                status_of(session, p).c_str(), values.c_str(), metrics);
  }
}

}  // namespace

void add_sweep_command(CLI::App& app, CommandContext& context) {
  auto* cmd = app.add_subcommand("sweep", "Train a grid of config values, each point a normal run, grouped under a sweep id");
  auto args = std::make_shared<SweepArgs>();
  cmd->add_option("--config", args->config, "Base JSON config (see datasets/configs/)");
  cmd->add_option("--set", args->sets, "Override a key of the base config (repeatable)");
  cmd->add_option("--grid", args->grid, "A key and its values: --grid lr=0.001,0.003 (repeatable: every combination is trained)");
  cmd->add_option("--name", args->name, "Name of the sweep (its runs are named after it and their values)");
  cmd->add_option("--parallel", args->parallel, "Points trained at a time (they share the cores)")->check(CLI::Range(1, 64))->capture_default_str();
  cmd->add_option("--db", args->db, "Run store (SQLite)")->capture_default_str();
  cmd->add_option("--resume", args->resume, "Continue sweep ID: completed points are kept, stopped or failed ones resume, the rest start")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--list", args->list, "List the sweeps of the store with each point's run, status and final P@1/P@5");
  cmd->add_flag("--json", args->json, "Print the sweep (id, points with run ids and statuses) as one JSON line at the end");
  cmd->footer(
      "Examples:\n"
      "  xmc sweep --config datasets/configs/unidec-bow-bibtex.json --grid lr=0.001,0.003 --grid temperature=0.05,0.1 --db runs.sqlite\n"
      "  xmc sweep --resume 1 --db runs.sqlite\n"
      "  xmc sweep --list --db runs.sqlite\n"
      "Each point is a run tagged sweep-ID (xmc runs list, the workbench's Runs tab). Ctrl-C stops the running points with a\n"
      "checkpoint; --resume continues.");
  cmd->callback([args, &context] {
    if (args->list) {
      require_existing_run_store(args->db);
      const Session session(args->db);
      const auto sweeps = session.list_sweeps();
      if (sweeps.empty()) std::printf("no sweeps in %s\n", args->db.c_str());
      for (const auto& s : sweeps) print_sweep(session, s);
      return;
    }
    std::int64_t id = args->resume;
    if (id > 0) {
      if (!args->grid.empty() || !args->config.empty() || !args->sets.empty())
        throw ConfigError("--resume continues a sweep as it was created: give no --config, --set or --grid with it");
      require_existing_run_store(args->db);
    } else {
      if (args->grid.empty()) throw ConfigError("give --grid KEY=VALUE,VALUE (repeatable) and a --config, or --resume ID");
      ConfigReadNotes notes;
      TrainConfig base = args->config.empty() ? TrainConfig{} : load_train_config(args->config, &notes);
      apply_config_overrides(base, args->sets, &notes);
      for (const std::string& notice : notes.renamed) std::fprintf(stderr, "notice: %s\n", notice.c_str());
      for (const std::string& notice : refuse_inapplicable_keys(notes.keys, base)) std::fprintf(stderr, "notice: %s\n", notice.c_str());
      std::vector<SweepAxis> axes;
      for (const auto& g : args->grid) axes.push_back(parse_sweep_axis(g));
      id = Session(args->db).create_sweep(base, axes, args->name).id;
    }
    Session session(args->db);
    const SweepInfo sweep = session.get_sweep(id);
    std::fprintf(stderr, "sweep %lld: %s, %zu points, %d at a time, in %s\n", static_cast<long long>(id), sweep.name.c_str(),
                 sweep.points.size(), args->parallel, args->db.c_str());
    SweepRunner runner(args->db, id, args->parallel);
    runner.on_start([&sweep](std::int64_t position, std::int64_t run) {
      std::string values;
      for (const auto& a : sweep.points[static_cast<std::size_t>(position)].assignments) values += (values.empty() ? "" : " ") + a;
      std::fprintf(stderr, "point %lld (%s): run %lld\n", static_cast<long long>(position), values.c_str(), static_cast<long long>(run));
    });
    runner.on_event([](std::int64_t position, std::int64_t run, const TrainEvent& e) {
      if (e.kind != TrainEvent::Kind::Evaluation) return;
      double p1 = 0, p5 = 0;
      for (const auto& [name, value] : e.metrics) {
        if (name == "P@1") p1 = value;
        if (name == "P@5") p5 = value;
      }
      std::printf("point %lld run %lld epoch %.2f: P@1 %.2f P@5 %.2f\n", static_cast<long long>(position), static_cast<long long>(run),
                  e.epoch, 100 * p1, 100 * p5);
      std::fflush(stdout);
    });
    g_sweep_interrupted.store(false);
    g_sweep.store(&runner);
    std::signal(SIGINT, on_sweep_interrupt);
    SweepRunner::Outcome outcome;
    try {
      outcome = runner.run(context.progress);
    } catch (...) {
      g_sweep.store(nullptr);
      std::signal(SIGINT, SIG_DFL);
      throw;
    }
    g_sweep.store(nullptr);
    std::signal(SIGINT, SIG_DFL);
    for (const auto& e : outcome.errors) std::fprintf(stderr, "failed: %s\n", e.c_str());
    const SweepInfo done = session.get_sweep(id);
    if (args->json) {
      nlohmann::json j{{"sweep_id", id}, {"name", done.name}, {"completed", outcome.completed}, {"stopped", outcome.stopped},
                       {"failed", outcome.failed}, {"points", nlohmann::json::array()}};
      for (const auto& p : done.points)
        j["points"].push_back({{"position", p.position}, {"assignments", p.assignments}, {"run_id", p.run}, {"status", status_of(session, p)}});
      context.print_json(j);
    } else {
      print_sweep(session, done);
    }
    if (outcome.stopped > 0)
      std::fprintf(stderr, "sweep %lld stopped: continue with xmc sweep --resume %lld --db %s\n", static_cast<long long>(id),
                   static_cast<long long>(id), args->db.c_str());
    if (outcome.failed > 0) throw Error(std::to_string(outcome.failed) + " point(s) of sweep " + std::to_string(id) + " failed (see above)");
    if (g_sweep_interrupted.load()) throw Cancelled();  // the points are safe, but the sweep is not done (exit code 130)
  });
}

}  // namespace xmc::cli
