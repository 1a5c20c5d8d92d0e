#pragma once
// The epochs at which a run's training schedule changes, read from its config: NGAME's switch from the
// encoder (M1) to the classifiers (M4), the first clustered epoch and each doubling of the cluster size,
// and shortlist refreshes when they are not every epoch. The Live view marks them on its metric plot, so a
// jump in a curve can be told from a change of what is trained.
#include <string>
#include <vector>

#include "engine/config/train_config.h"

namespace xmc {

struct TrainingMilestone {
  double epoch = 0;   ///< the epoch it takes effect at the start of (the metric plot's x axis)
  std::string label;  ///< short: "M4", "clusters", "C = 32", "shortlists"
};

/// In epoch order; refresh marks only where they are at most every other epoch and at most 20 of them.
std::vector<TrainingMilestone> training_milestones(const TrainConfig& config);

/// Whether a run of `config` takes t-SNE snapshots of a query's negatives: tsne.every > 0 and a method that
/// trains its own encoder on query batches (IRENE, building on a finished run, and xrlinear take none).
bool takes_tsne_snapshots(const TrainConfig& config);

}  // namespace xmc
