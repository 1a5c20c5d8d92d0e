#pragma once
// The optimiser's options (plain data, no torch): gradient clipping, the learning-rate schedule and how AdamW
// keeps the moments of large tables. The config keys of the "Optimiser" group (`optim.*`, optim_options.cpp)
// are bound to these fields; their former top-level names (grad_clip, warmup, ...) still load.
#include <cstdint>
#include <string>

namespace xmc {

struct OptionGroup;

struct OptimOptions {
  double grad_clip = 1.0;                       ///< max global gradient norm (0 = off)
  double warmup = 0.05;                         ///< fraction of a stage's steps spent warming the rate up
  std::string schedule = "linear";              ///< linear | cosine | constant decay after warm-up
  std::int64_t deferred_rows_from = 200000;     ///< AdamW defers untouched rows of parameters of at least this many rows (0 = never)
  std::int64_t deferred_sync_steps = 1024;      ///< deferred rows brought up to date every this many steps (0 = off)
  std::string table_second_moment = "row";      ///< tables with deferred rows: AdamW's second moment per row | element
  std::string table_first_moment = "bfloat16";  ///< tables with deferred rows: AdamW's first moment in bfloat16 | float32
  std::string decay = "weights";                ///< weight decay on weight matrices and tables only, or on every parameter (all)
};

/// optim.grad_clip, optim.warmup, optim.schedule and the deferred tables' keys.
OptionGroup optim_option_group();

}  // namespace xmc
