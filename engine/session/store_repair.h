#pragma once
// `xmc runs repair`: what can still be read of a damaged run store, copied into a new one (plain C++). The
// damaged file is only read, never written: opening a damaged store is refused (store_schema.h), and repair
// is the explicit way on.
//   - a new store is created at the current schema version;
//   - the old store's identity (store_meta) is kept, so its run folders and checkpoints stay this store's;
//   - every table the two stores share is copied, the columns they share, a range of rows at a time: a range
//     that cannot be read is split until the single unreadable rows are found and left out;
//   - runs that lost their `runs` row but left rows elsewhere get one back ("recovered run N", failed);
//   - run folders are hard-linked into the new store's (copied across file systems): nothing written later
//     into the new store can change the old one's files, since every write goes through a new file.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace xmc {

struct RepairedTable {
  std::string name;
  std::int64_t copied = 0;
  std::int64_t lost = 0;     ///< rows that could not be read (−1: an unknown number; the table's structure is damaged)
  bool missing = false;      ///< the damaged store had no such table
};

struct RepairReport {
  std::vector<RepairedTable> tables;
  std::vector<std::int64_t> recovered_runs;  ///< runs whose `runs` row was rebuilt
  std::int64_t run_folders = 0;              ///< run folders carried over
};

/// Copies what is readable of the store at `damaged` into a new store at `out` (refused if it exists) with
/// its run folders. Throws InputError naming the file when `damaged` is not an SQLite file at all.
RepairReport repair_run_store(const std::filesystem::path& damaged, const std::filesystem::path& out);

}  // namespace xmc
