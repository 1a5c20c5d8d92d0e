// Compiled with the facade's include folder alone (ctest facade_compiles): what widgets/ and app/ may use.
#include "engine/config/sweep_grid.h"
#include "engine/records/evaluation_modes.h"
#include "engine/records/train_events.h"
#include "engine/records/training_milestones.h"
#include "engine/session/default_store_path.h"
#include "engine/session/predictor.h"
#include "engine/session/session.h"

int main() { return 0; }
