#pragma once
// Errors the engine reports to users. Every message names what was wrong and where
// (file, line, key or value) so the CLI and GUI can show it as one line.
#include <cstddef>
#include <stdexcept>
#include <string>

namespace xmc {

/// Base class of every error the engine throws on purpose.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Bad input data: a file that is missing, malformed or inconsistent.
/// what() reads "FILE:LINE: REASON" (or "FILE: REASON" when no line applies).
class InputError : public Error {
 public:
  InputError(std::string file, std::size_t line, std::string reason);
  InputError(std::string file, std::string reason) : InputError(std::move(file), 0, std::move(reason)) {}

  const std::string& file() const { return file_; }
  std::size_t line() const { return line_; }
  const std::string& reason() const { return reason_; }

 private:
  std::string file_;
  std::size_t line_;
  std::string reason_;
};

/// A bad option or configuration value; what() names the key and the value.
class ConfigError : public Error {
 public:
  using Error::Error;
};

/// Long work stopped because the user asked for it (Progress::cancelled()).
class Cancelled : public Error {
 public:
  Cancelled() : Error("cancelled by the user") {}
};

}  // namespace xmc
