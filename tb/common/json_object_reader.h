#pragma once
// A configuration file's JSON objects, read key by key: each key has its type and legal range,
// and anything else (an unknown key, a wrong type, a value out of range) is an ncore::Error
// naming the file, the key's path ("chip.link.gbps"), what was expected and what was found.
#include <functional>
#include <map>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "model/common/error.h"

namespace ncore::tb {

class JsonObjectReader {
 public:
  JsonObjectReader(const nlohmann::json& object, std::string path, const std::string& source)
      : object_(object), path_(std::move(path)), source_(source) {
    if (!object_.is_object())
      fail(path_.empty() ? "(top level)" : path_, "a JSON object", object_.dump());
  }

  void number(const char* key, double& field, double lo, double hi) {
    handlers_[key] = [this, key, &field, lo, hi](const nlohmann::json& v) {
      if (!v.is_number()) fail(where(key), "a number", v.dump());
      const double d = v.get<double>();
      if (!(d >= lo && d <= hi))
        fail(where(key), fmt::format("a number in [{}, {}]", lo, hi), v.dump());
      field = d;
    };
  }
  void integer(const char* key, int& field, int lo, int hi) {
    handlers_[key] = [this, key, &field, lo, hi](const nlohmann::json& v) {
      if (!v.is_number_integer()) fail(where(key), "an integer", v.dump());
      const auto i = v.get<int64_t>();
      if (i < lo || i > hi) fail(where(key), fmt::format("an integer in [{}, {}]", lo, hi), v.dump());
      field = static_cast<int>(i);
    };
  }
  void count(const char* key, uint64_t& field, uint64_t lo, uint64_t hi) {
    handlers_[key] = [this, key, &field, lo, hi](const nlohmann::json& v) {
      if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0))
        fail(where(key), "a non-negative integer", v.dump());
      const auto i = v.get<uint64_t>();
      if (i < lo || i > hi) fail(where(key), fmt::format("an integer in [{}, {}]", lo, hi), v.dump());
      field = i;
    };
  }
  void boolean(const char* key, bool& field) {
    handlers_[key] = [this, key, &field](const nlohmann::json& v) {
      if (!v.is_boolean()) fail(where(key), "true or false", v.dump());
      field = v.get<bool>();
    };
  }
  void object(const char* key, std::function<void(JsonObjectReader&)> fields) {
    handlers_[key] = [this, key, fields](const nlohmann::json& v) {
      JsonObjectReader inner(v, where(key), source_);
      fields(inner);
      inner.read();
    };
  }
  void skip(const char* key) { handlers_[key] = [](const nlohmann::json&) {}; }

  void read() {
    for (const auto& [key, value] : object_.items()) {
      const auto h = handlers_.find(key);
      if (h == handlers_.end()) {
        std::string known;
        for (const auto& [k, unused] : handlers_) known += (known.empty() ? "" : ", ") + k;
        fail(where(key.c_str()), "a known key (" + known + ")", "unknown key");
      }
      h->second(value);
    }
  }

 private:
  std::string where(const char* key) const { return path_.empty() ? key : path_ + "." + key; }
  [[noreturn]] void fail(const std::string& key, const std::string& expected,
                         const std::string& found) const {
    throw Error(fmt::format("{}: key '{}': expected {}, found {}", source_, key, expected, found));
  }

  const nlohmann::json& object_;
  std::string path_;
  const std::string& source_;
  std::map<std::string, std::function<void(const nlohmann::json&)>> handlers_;
};

}  // namespace ncore::tb
