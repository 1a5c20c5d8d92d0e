#pragma once
// What a component (a method, an encoder, a batch order, the optimiser) sees of its run: a small run context and
// the options of the components that make up the run, never the whole TrainConfig. A component's factory takes a
// ComponentConfig; reading the options of a component that is not part of the run (xrlinear reading UniDEC's,
// an encoder reading another encoder's) is refused, so each component's inputs are what its registration says.
#include <cstdint>
#include <filesystem>
#include <set>
#include <string>
#include <typeindex>
#include <typeinfo>

#include "engine/config/component_options.h"

namespace xmc {

struct TrainConfig;

/// What every component may know of its run besides its own options.
struct RunContext {
  std::string method;             ///< the run's method (a registered name)
  std::filesystem::path dataset;  ///< the dataset folder
  std::string device = "cpu";     ///< cpu | cuda | cuda:N
  std::int64_t threads = 0;       ///< CPU threads (0 = all cores)
  std::int64_t memory_mb = 0;     ///< the budget of large temporaries (0 = from the machine)
  std::uint64_t seed = 1;
  // The optimisation every trained component shares.
  std::int64_t epochs = 10;       ///< of the first stage
  std::int64_t batch_size = 256;
  double lr = 1e-3;               ///< the encoder's peak rate
  double head_lr_scale = 1.0;     ///< heads and classifiers learn at lr × this
  double weight_decay = 0.01;
};

class ComponentConfig {
 public:
  ComponentConfig(RunContext context, ComponentOptions options, std::set<std::type_index> part_of_run)
      : run(std::move(context)), options_(std::move(options)), part_of_run_(std::move(part_of_run)) {}

  RunContext run;

  /// The options of a component of this run (its defaults where the config set none). Throws Error naming the
  /// options when their component is not part of the run: its keys do not apply, so no value of theirs may shape it.
  template <class Options>
  const Options& get() const {
    if (part_of_run_.count(std::type_index(typeid(Options))) == 0) refuse(typeid(Options).name());
    return options_.get<Options>();
  }
  /// The same, or null when their component is not part of the run.
  template <class Options>
  const Options* find() const {
    return part_of_run_.count(std::type_index(typeid(Options))) == 0 ? nullptr : &options_.get<Options>();
  }

 private:
  [[noreturn]] void refuse(const char* options_type) const;

  ComponentOptions options_;
  std::set<std::type_index> part_of_run_;
};

/// `config`'s context, and the options of every option group with a key that applies to it (key_applies).
ComponentConfig component_config(const TrainConfig& config);

}  // namespace xmc
