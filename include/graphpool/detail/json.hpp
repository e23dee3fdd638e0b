#pragma once
/// @file json.hpp
/// @brief A small JSON reader and string escaping, for plans written by `graphpool-plan --json`
/// (no CUDA header). Numbers keep their text, so 64-bit byte counts stay exact.

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cerrno>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "graphpool/error.hpp"

namespace graphpool::detail {

/// @return `text` as a JSON string literal, quotes included.
[[nodiscard]] inline std::string json_quote(std::string_view text) {
  std::string out = "\"";
  for (const char ch : text) {
    switch (ch) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (static_cast<unsigned char>(ch) < 0x20) {
          char escaped[8];
          std::snprintf(escaped, sizeof(escaped), "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(ch)));
          out += escaped;
        } else {
          out += ch;
        }
    }
  }
  return out + "\"";
}

/// @brief One parsed JSON value.
struct json_value {
  enum class kind { null, boolean, number, string, array, object };
  kind type = kind::null;
  bool boolean = false;
  std::string text;  ///< a string's value, or a number's text
  std::vector<json_value> items;
  std::map<std::string, json_value> members;

  /// @return member `key` of an object. @throws graphpool::error naming `where` and the key when absent.
  [[nodiscard]] const json_value& at(const std::string& key, const std::string& where) const {
    if (type != kind::object) throw error(where + ": expected an object");
    const auto found = members.find(key);
    if (found == members.end()) throw error(where + ": the key \"" + key + "\" is missing");
    return found->second;
  }
  [[nodiscard]] bool has(const std::string& key) const { return type == kind::object && members.count(key) != 0; }

  /// @return a non-negative integer. @throws graphpool::error naming `where` otherwise.
  [[nodiscard]] unsigned long long unsigned_integer(const std::string& where) const {
    if (type != kind::number || text.empty() || text[0] == '-' ||
        text.find_first_of(".eE") != std::string::npos) {
      throw error(where + ": expected a non-negative integer, found " + (type == kind::number ? text : "no number"));
    }
    errno = 0;
    const unsigned long long value = std::strtoull(text.c_str(), nullptr, 10);
    if (errno == ERANGE) throw error(where + ": " + text + " does not fit in 64 bits");
    return value;
  }
  [[nodiscard]] const std::vector<json_value>& array(const std::string& where) const {
    if (type != kind::array) throw error(where + ": expected an array");
    return items;
  }
  [[nodiscard]] const std::string& string(const std::string& where) const {
    if (type != kind::string) throw error(where + ": expected a string");
    return text;
  }
};

/// @brief Parses one JSON document. @throws graphpool::error naming the byte offset of the problem.
class json_reader {
 public:
  [[nodiscard]] static json_value parse(std::string_view text) {
    json_reader reader(text);
    json_value value = reader.value(0);
    reader.skip_space();
    if (reader.at_ < text.size()) reader.fail("text after the document");
    return value;
  }

 private:
  explicit json_reader(std::string_view text) : text_(text) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw error("JSON: " + what + " at byte " + std::to_string(at_));
  }
  void skip_space() {
    while (at_ < text_.size() && (text_[at_] == ' ' || text_[at_] == '\n' || text_[at_] == '\t' || text_[at_] == '\r')) ++at_;
  }
  void expect(char ch) {
    skip_space();
    if (at_ >= text_.size() || text_[at_] != ch) fail(std::string("expected '") + ch + "'");
    ++at_;
  }
  bool take(std::string_view word) {
    if (text_.substr(at_, word.size()) != word) return false;
    at_ += word.size();
    return true;
  }

  json_value value(int depth) {
    if (depth > 64) fail("nesting deeper than 64");
    skip_space();
    if (at_ >= text_.size()) fail("unexpected end");
    json_value v;
    const char ch = text_[at_];
    if (ch == '{') {
      v.type = json_value::kind::object;
      ++at_;
      skip_space();
      if (at_ < text_.size() && text_[at_] == '}') {
        ++at_;
        return v;
      }
      do {
        skip_space();
        std::string key = string_literal();
        expect(':');
        v.members[key] = value(depth + 1);
        skip_space();
      } while (at_ < text_.size() && text_[at_] == ',' && ++at_);
      expect('}');
    } else if (ch == '[') {
      v.type = json_value::kind::array;
      ++at_;
      skip_space();
      if (at_ < text_.size() && text_[at_] == ']') {
        ++at_;
        return v;
      }
      do {
        v.items.push_back(value(depth + 1));
        skip_space();
      } while (at_ < text_.size() && text_[at_] == ',' && ++at_);
      expect(']');
    } else if (ch == '"') {
      v.type = json_value::kind::string;
      v.text = string_literal();
    } else if (take("true")) {
      v.type = json_value::kind::boolean;
      v.boolean = true;
    } else if (take("false")) {
      v.type = json_value::kind::boolean;
    } else if (take("null")) {
    } else if (ch == '-' || (ch >= '0' && ch <= '9')) {
      v.type = json_value::kind::number;
      const std::size_t start = at_;
      while (at_ < text_.size() && std::string_view("+-0123456789.eE").find(text_[at_]) != std::string_view::npos) ++at_;
      v.text = std::string(text_.substr(start, at_ - start));
    } else {
      fail(std::string("unexpected '") + ch + "'");
    }
    return v;
  }

  std::string string_literal() {
    if (at_ >= text_.size() || text_[at_] != '"') fail("expected a string");
    ++at_;
    std::string out;
    while (at_ < text_.size() && text_[at_] != '"') {
      char ch = text_[at_++];
      if (ch == '\\') {
        if (at_ >= text_.size()) fail("unfinished escape");
        const char escaped = text_[at_++];
        switch (escaped) {
          case 'n': ch = '\n'; break;
          case 't': ch = '\t'; break;
          case 'r': ch = '\r'; break;
          case 'b': ch = '\b'; break;
          case 'f': ch = '\f'; break;
          case 'u': {
            if (at_ + 4 > text_.size()) fail("unfinished \\u escape");
            const unsigned long code = std::strtoul(std::string(text_.substr(at_, 4)).c_str(), nullptr, 16);
            at_ += 4;
            if (code > 0x7f) fail("a \\u escape beyond ASCII");
            ch = static_cast<char>(code);
            break;
          }
          default: ch = escaped;  // '"', '\\', '/'
        }
      }
      out += ch;
    }
    if (at_ >= text_.size()) fail("unfinished string");
    ++at_;
    return out;
  }

  std::string_view text_;
  std::size_t at_ = 0;
};

}  // namespace graphpool::detail
