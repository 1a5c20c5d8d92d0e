// Compiled with the facade's include folder alone (ctest facade_blocks_internals): the trainer is behind the
// Session, so this must not compile.
#include "engine/session/session.h"
#include "engine/train/trainer.h"

int main() { return 0; }
