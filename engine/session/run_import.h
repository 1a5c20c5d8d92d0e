#pragma once
// Runs gathered from several machines (plain C++): `xmc runs import` and File › Import runs copy runs of another
// run store — with their scalars, evaluations, decile tables, t-SNE snapshots, log, tags, notes, added labels and
// artifact records — into the open one, under new ids; `xmc runs export` writes chosen runs into a new,
// self-contained store. A run keeps its identity (the store it was first recorded in and its id there), so
// importing it again, directly or through another store, adds nothing. The source's runs are only read (a source of
// an older schema is first brought to this one, as opening any store does). A run's files
// (its checkpoint) stay where it trained: an imported run is looked at, compared and reported here, and resumed
// there.
#include <cstdint>
#include <filesystem>
#include <vector>

namespace xmc {

struct ImportedRuns {
  std::vector<std::pair<std::int64_t, std::int64_t>> copied;  ///< (id in the source, new id here)
  std::vector<std::int64_t> already_here;                     ///< source ids whose runs this store has already
};

/// Copies runs `runs` of the store at `source` (every run when empty) into the store at `target`. Throws
/// InputError naming `source` when it is not a readable run store (a damaged one included), and ConfigError naming
/// a run id it does not have; nothing is copied then.
ImportedRuns import_runs(const std::filesystem::path& target, const std::filesystem::path& source, const std::vector<std::int64_t>& runs = {});

/// Writes runs `runs` of the store at `source` into a new store at `out` (refused when it exists).
ImportedRuns export_runs(const std::filesystem::path& source, const std::vector<std::int64_t>& runs, const std::filesystem::path& out);

}  // namespace xmc
