// Adding labels at run time: encode a new label's text, select its K neighbours, synthesize its classifier
// (IRENE) and insert it into every mode's index and the run store, one label at a time (latency, median of
// --single additions) and in one batch (labels per second). Works on a copy of the store and its run folders,
// so the measured run is left as it was. Give an IRENE run for its synthesis, or any other run for plain
// zero-shot embeddings (the baseline).
// Usage: bench_label_synthesis DB RUN [single=200] [batch=10000]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <unistd.h>

#include "engine/session/predictor.h"

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: bench_label_synthesis DB RUN [single=200] [batch=10000]\n");
    return 2;
  }
  namespace fs = std::filesystem;
  const fs::path source = argv[1];
  const std::int64_t run = std::stoll(argv[2]);
  const int single = argc > 3 ? std::stoi(argv[3]) : 200;
  const int batch = argc > 4 ? std::stoi(argv[4]) : 10000;
  const fs::path work = fs::temp_directory_path() / ("xmc-label-bench-" + std::to_string(::getpid()));
  fs::create_directories(work);
  const fs::path db = work / source.filename();
  fs::copy_file(source, db);
  fs::copy(source.string() + ".artifacts", db.string() + ".artifacts", fs::copy_options::recursive);
  using Clock = std::chrono::steady_clock;
  xmc::Predictor predictor = xmc::Predictor::open(db, run);
  std::vector<double> ms;
  for (int i = 0; i < single + 10; ++i) {
    const auto t0 = Clock::now();
    predictor.add_label("benchmark label " + std::to_string(i) + " kw" + std::to_string(i % 50) + " gloss words");
    if (i >= 10) ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());  // 10 warm-up additions
  }
  std::vector<std::string> texts;
  for (int i = 0; i < batch; ++i) texts.push_back("batch label " + std::to_string(i) + " topic " + std::to_string(i % 97));
  const auto t0 = Clock::now();
  predictor.add_labels(texts);
  const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  std::printf("{\"run\": %lld, \"synthesized_by\": \"%s\", \"labels\": %lld, \"single_ms_median\": %.3f, \"single_ms_max\": %.3f, "
              "\"batch\": %d, \"batch_labels_per_s\": %.0f}\n",
              static_cast<long long>(run), predictor.synthesized_by().c_str(), static_cast<long long>(predictor.num_labels()), median(ms),
              *std::max_element(ms.begin(), ms.end()), batch, batch / seconds);
  fs::remove_all(work);
  return 0;
}
