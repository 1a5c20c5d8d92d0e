// `xmc runs list|show|rename|delete`: the run store from the command line.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <string>

#include "engine/store/evaluation_modes.h"
#include "engine/cli/command_context.h"
#include "engine/core/error.h"
#include "engine/store/default_store_path.h"
#include "engine/session/session.h"

namespace xmc::cli {
namespace {

nlohmann::json run_json(const RunInfo& r) {
  return {{"id", r.id},         {"name", r.name},     {"status", to_string(r.status)}, {"created", r.created},
          {"updated", r.updated}, {"dataset", r.dataset_path}, {"dataset_fingerprint", r.dataset_fingerprint},
          {"code_version", r.code_version}, {"host", r.host}, {"device", r.device}, {"last_error", r.last_error}};
}

}  // namespace

void add_runs_commands(CLI::App& app, CommandContext& context) {
  auto* runs = app.add_subcommand("runs", "List, inspect, rename and delete stored runs");
  runs->footer("Examples:\n  xmc runs --db runs.sqlite list\n  xmc runs --db runs.sqlite show 3 --json\n"
               "  xmc runs --db runs.sqlite rename 3 \"dexml bow, tau 0.05\"\n  xmc runs --db runs.sqlite delete 3 --yes");
  runs->require_subcommand(1);
  auto db = std::make_shared<std::string>(default_run_store_path().string());
  runs->add_option("--db", *db, "Run store (SQLite); default $XMC_DB or ~/.local/share/xmc-workbench/runs.sqlite")
      ->capture_default_str();

  {
    auto* cmd = runs->add_subcommand("list", "List runs, newest first");
    auto json = std::make_shared<bool>(false);
    cmd->add_flag("--json", *json, "Print one JSON array as the last line");
    cmd->footer("Example:\n  xmc runs --db runs.sqlite list");
    cmd->callback([db, json, &context] {
      require_existing_run_store(*db);
      Session session(*db);
      session.reap_orphaned_runs();
      const auto all = session.list_runs();
      if (*json) {
        nlohmann::json array = nlohmann::json::array();
        for (const auto& r : all) array.push_back(run_json(r));
        context.print_json(array);
        return;
      }
      // The name column fits the longest name up to kNameWidth; longer names are cut with "...".
      constexpr std::size_t kNameWidth = 48;
      std::size_t width = 4;
      for (const auto& r : all) width = std::max(width, std::min(kNameWidth, r.name.size()));
      const auto fitted = [&](std::string name) {
        if (name.size() <= width) return name;
        std::size_t cut = width - 3;
        while (cut > 0 && (static_cast<unsigned char>(name[cut]) & 0xC0) == 0x80) --cut;  // not inside a UTF-8 character
        return name.substr(0, cut) + "...";
      };
      const int w = static_cast<int>(width);
      std::printf("%5s  %-10s  %-20s  %-*s  %s\n", "id", "status", "created", w, "name", "last error");
      for (const auto& r : all)
        std::printf("%5lld  %-10s  %-20s  %-*s  %s\n", static_cast<long long>(r.id), to_string(r.status).c_str(),
                    r.created.substr(0, 19).c_str(), w, fitted(r.name).c_str(), r.last_error.c_str());
    });
  }
  {
    auto* cmd = runs->add_subcommand("show", "Show a run: config, status, latest metrics");
    auto id = std::make_shared<std::int64_t>(0);
    auto json = std::make_shared<bool>(false);
    cmd->add_option("ID", *id, "Run id")->required();
    cmd->add_flag("--json", *json, "Print one JSON object as the last line");
    cmd->footer("Example:\n  xmc runs show 3 --json");
    cmd->callback([db, id, json, &context] {
      require_existing_run_store(*db);
      const Session session(*db);
      const RunInfo r = session.get_run(*id);
      nlohmann::json j = run_json(r);
      j["config"] = nlohmann::json::parse(r.config_json);
      nlohmann::json metrics = nlohmann::json::object();
      double last_epoch = -1;
      const auto evaluations = without_primary_copies(session.evaluations(*id));
      for (const auto& e : evaluations) last_epoch = std::max(last_epoch, e.epoch);
      for (const auto& e : evaluations)
        if (e.epoch == last_epoch) metrics[e.metric] = e.value;
      j["final_metrics"] = metrics;
      if (*json) {
        context.print_json(j);
      } else {
        std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
      }
    });
  }
  {
    auto* cmd = runs->add_subcommand("rename", "Rename a run");
    auto id = std::make_shared<std::int64_t>(0);
    auto name = std::make_shared<std::string>();
    cmd->add_option("ID", *id, "Run id")->required();
    cmd->add_option("NAME", *name, "New name")->required();
    cmd->footer("Example:\n  xmc runs rename 3 \"dexml bow, tau 0.05\"");
    cmd->callback([db, id, name] {
      require_existing_run_store(*db);
      Session(*db).rename_run(*id, *name);
    });
  }
  {
    auto* cmd = runs->add_subcommand("delete", "Delete a run and everything recorded for it");
    auto id = std::make_shared<std::int64_t>(0);
    auto yes = std::make_shared<bool>(false);
    cmd->add_option("ID", *id, "Run id")->required();
    auto force = std::make_shared<bool>(false);
    cmd->add_flag("--yes", *yes, "Confirm the deletion (required: it cannot be undone)");
    cmd->add_flag("--force", *force, "Also delete a run that is still training (its trainer then fails)");
    cmd->footer("Example:\n  xmc runs delete 3 --yes");
    cmd->callback([db, id, yes, force] {
      require_existing_run_store(*db);
      Session session(*db);
      session.reap_orphaned_runs();  // a run whose trainer died is not "running" any more
      const RunInfo r = session.get_run(*id);
      if (!*yes) throw ConfigError("refusing to delete run " + std::to_string(*id) + " ('" + r.name + "') without --yes");
      if ((r.status == RunStatus::Running || r.status == RunStatus::Paused) && !*force)
        throw ConfigError("run " + std::to_string(*id) + " ('" + r.name + "') is still " + to_string(r.status) + " (pid " +
                          std::to_string(r.pid) + " on " + r.host + "); stop it first, or pass --force");
      session.delete_run(*id);
      std::printf("deleted run %lld ('%s') and its files\n", static_cast<long long>(*id), r.name.c_str());
    });
  }
}

}  // namespace xmc::cli
