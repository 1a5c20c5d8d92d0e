#include "engine/model/vision/image_preprocessing.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "engine/core/error.h"
#include "engine/core/json_file.h"

namespace xmc {
namespace {

double filter_weight(int resample, double x) {
  x = std::abs(x);
  if (resample == 3) {  // Pillow's bicubic, a = −0.5
    constexpr double a = -0.5;
    if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0;
    if (x < 2.0) return (((x - 5.0) * x + 8.0) * x - 4.0) * a;
    return 0.0;
  }
  return x < 1.0 ? 1.0 - x : 0.0;  // bilinear (triangle)
}

/// For each output position along an axis of `in` samples: the first input index and the normalised weights.
struct AxisTaps {
  std::vector<std::int64_t> first;
  std::vector<std::vector<double>> weights;
};

AxisTaps axis_taps(std::int64_t in, std::int64_t out, int resample) {
  AxisTaps taps;
  const double scale = static_cast<double>(in) / static_cast<double>(out);
  const double filter_scale = std::max(scale, 1.0);
  const double support = (resample == 3 ? 2.0 : resample == 0 ? 0.5 : 1.0) * filter_scale;
  for (std::int64_t o = 0; o < out; ++o) {
    const double center = (static_cast<double>(o) + 0.5) * scale;
    if (resample == 0) {  // nearest: the input pixel whose cell holds the centre
      taps.first.push_back(std::min<std::int64_t>(in - 1, static_cast<std::int64_t>(std::floor(center))));
      taps.weights.push_back({1.0});
      continue;
    }
    const auto lo = std::max<std::int64_t>(0, static_cast<std::int64_t>(std::floor(center - support + 0.5)));
    const auto hi = std::min<std::int64_t>(in, static_cast<std::int64_t>(std::floor(center + support + 0.5)));
    std::vector<double> w;
    double total = 0;
    for (std::int64_t i = lo; i < hi; ++i) {
      w.push_back(filter_weight(resample, (static_cast<double>(i) + 0.5 - center) / filter_scale));
      total += w.back();
    }
    if (total != 0)
      for (double& v : w) v /= total;
    taps.first.push_back(lo);
    taps.weights.push_back(std::move(w));
  }
  return taps;
}

}  // namespace

ImagePreprocessing read_image_preprocessing(const std::filesystem::path& file, const ImagePreprocessing& defaults) {
  ImagePreprocessing p = defaults;
  std::error_code error;
  if (!std::filesystem::exists(file, error)) return p;
  const nlohmann::json json = read_json_file(file);
  const std::string source = file.string();
  if (!json.is_object()) throw InputError(source, "is not a JSON object");
  auto bad = [&](const std::string& key, const std::string& expected) {
    return InputError(source, "key '" + key + "' must be " + expected + ", got " + json.at(key).dump());
  };
  auto flag = [&](const char* key, bool& into) {
    if (!json.contains(key)) return;
    if (!json[key].is_boolean()) throw bad(key, "true or false");
    into = json[key].get<bool>();
  };
  flag("do_resize", p.do_resize);
  flag("do_rescale", p.do_rescale);
  flag("do_normalize", p.do_normalize);
  if (json.contains("size")) {
    const auto& size = json["size"];
    auto side = [&](const char* key) {
      if (!size.contains(key) || !size[key].is_number_integer() || size[key].get<std::int64_t>() < 1 || size[key].get<std::int64_t>() > 4096)
        throw bad("size", "{\"height\": N, \"width\": N} or {\"shortest_edge\": N} with N in 1 .. 4096");
      return size[key].get<std::int64_t>();
    };
    if (size.is_number_integer()) {
      if (size.get<std::int64_t>() < 1 || size.get<std::int64_t>() > 4096) throw bad("size", "1 .. 4096");
      p.height = p.width = size.get<std::int64_t>();
    } else if (size.is_object() && size.contains("height")) p.height = side("height"), p.width = side("width");
    else if (size.is_object() && size.contains("shortest_edge")) p.height = p.width = side("shortest_edge");
    else throw bad("size", "{\"height\": N, \"width\": N} or {\"shortest_edge\": N}");
  }
  if (json.contains("resample")) {
    if (!json["resample"].is_number_integer()) throw bad("resample", "0 (nearest), 2 (bilinear) or 3 (bicubic)");
    p.resample = json["resample"].get<int>();
    if (p.resample != 0 && p.resample != 2 && p.resample != 3) throw bad("resample", "0 (nearest), 2 (bilinear) or 3 (bicubic)");
  }
  if (json.contains("rescale_factor")) {
    if (!json["rescale_factor"].is_number() || !(json["rescale_factor"].get<double>() > 0)) throw bad("rescale_factor", "a positive number");
    p.rescale_factor = json["rescale_factor"].get<double>();
  }
  auto triple = [&](const char* key, std::array<double, 3>& into, bool positive) {
    if (!json.contains(key)) return;
    const auto& v = json[key];
    if (v.is_number()) {
      into.fill(v.get<double>());
    } else if (v.is_array() && v.size() == 3 && std::all_of(v.begin(), v.end(), [](const auto& e) { return e.is_number(); })) {
      for (std::size_t c = 0; c < 3; ++c) into[c] = v[c].get<double>();
    } else {
      throw bad(key, "a number or a list of 3 numbers");
    }
    for (const double x : into)
      if (!std::isfinite(x) || (positive && !(x > 0))) throw bad(key, positive ? "positive numbers" : "finite numbers");
  };
  triple("image_mean", p.mean, false);
  triple("image_std", p.std, true);
  return p;
}

std::vector<float> preprocess_image(const RgbImage& image, const ImagePreprocessing& p) {
  const std::int64_t out_h = p.do_resize ? p.height : image.height, out_w = p.do_resize ? p.width : image.width;
  // Horizontal pass into floats, then vertical.
  const AxisTaps across = axis_taps(image.width, out_w, p.resample);
  const AxisTaps down = axis_taps(image.height, out_h, p.resample);
  std::vector<double> wide(static_cast<std::size_t>(image.height * out_w * 3));
  for (std::int64_t y = 0; y < image.height; ++y)
    for (std::int64_t x = 0; x < out_w; ++x)
      for (int c = 0; c < 3; ++c) {
        double sum = 0;
        const auto& w = across.weights[static_cast<std::size_t>(x)];
        for (std::size_t k = 0; k < w.size(); ++k)
          sum += w[k] * image.pixels[static_cast<std::size_t>((y * image.width + across.first[static_cast<std::size_t>(x)] + static_cast<std::int64_t>(k)) * 3 + c)];
        wide[static_cast<std::size_t>((y * out_w + x) * 3 + c)] = sum;
      }
  std::vector<float> out(static_cast<std::size_t>(3 * out_h * out_w));
  for (std::int64_t y = 0; y < out_h; ++y) {
    const auto& w = down.weights[static_cast<std::size_t>(y)];
    for (std::int64_t x = 0; x < out_w; ++x)
      for (int c = 0; c < 3; ++c) {
        double v = 0;
        for (std::size_t k = 0; k < w.size(); ++k)
          v += w[k] * wide[static_cast<std::size_t>(((down.first[static_cast<std::size_t>(y)] + static_cast<std::int64_t>(k)) * out_w + x) * 3 + c)];
        v = std::clamp(v, 0.0, 255.0);  // as Pillow's 8-bit result would be
        if (p.do_rescale) v *= p.rescale_factor;
        if (p.do_normalize) v = (v - p.mean[static_cast<std::size_t>(c)]) / p.std[static_cast<std::size_t>(c)];
        out[static_cast<std::size_t>((c * out_h + y) * out_w + x)] = static_cast<float>(v);
      }
  }
  return out;
}

}  // namespace xmc
