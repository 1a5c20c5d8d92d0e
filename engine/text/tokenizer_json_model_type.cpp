#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/text/tokenizer_info.h"
#include "engine/core/regular_file.h"

namespace xmc {
namespace {

/// Streams a tokenizer.json without building it, stopping at model.type: a file check that costs a read, not a
/// parse of a vocabulary of 150,000 entries into a document.
class ModelTypeFinder : public nlohmann::json_sax<nlohmann::json> {
 public:
  std::string type;

  bool null() override { return scalar(); }
  bool boolean(bool) override { return scalar(); }
  bool number_integer(number_integer_t) override { return scalar(); }
  bool number_unsigned(number_unsigned_t) override { return scalar(); }
  bool number_float(number_float_t, const string_t&) override { return scalar(); }
  bool binary(binary_t&) override { return scalar(); }
  bool string(string_t& value) override {
    if (depth_ == 2 && in_model_ && key_ == "type") {
      type = value;
      return false;  // found: stop reading
    }
    return scalar();
  }
  bool start_object(std::size_t) override { return open(); }
  bool start_array(std::size_t) override { return open(); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }
  bool key(string_t& value) override {
    key_ = value;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }

 private:
  bool scalar() { return true; }
  bool open() {
    if (depth_ == 1) in_model_ = key_ == "model";
    ++depth_;
    return true;
  }
  bool close() {
    --depth_;
    if (depth_ == 1) in_model_ = false;
    return true;
  }

  int depth_ = 0;
  bool in_model_ = false;
  std::string key_;
};

}  // namespace

std::string tokenizer_json_model_type(const std::filesystem::path& file) {
  if (!is_regular_file_path(file)) return {};  // a FIFO would block the reader
  std::ifstream in(file, std::ios::binary);
  if (!in) return {};
  ModelTypeFinder finder;
  try {
    nlohmann::json::sax_parse(in, &finder);
  } catch (const std::exception&) {
    return {};
  }
  return finder.type;
}

}  // namespace xmc
